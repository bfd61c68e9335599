/**
 * The `local` connector's write from a file on this computer (`writeFile`, what a sync pair's
 * copies to a local folder use): the target name is checked by its folder, the lookups are
 * synchronous, and only the calls that change files go through the I/O pool. The rules it must
 * keep: nothing is written outside the account's folder (spec 1, Errors: `forbidden`), a name
 * that is a link leading out is refused, the file gets the mode of the file it replaces (0644
 * when new, never the source's special bits), and its time is set before it is published.
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local';
import { expectCode } from '../conformance/storage-suite';
import { scratchDir } from '../servers/util';

/** The promise-based file system calls made, by name: each one is a trip through the I/O pool. */
const trips: string[] = [];
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<Record<string, unknown>>();
  const counted: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(real)) {
    counted[name] =
      typeof fn === 'function' && name !== 'constants'
        ? (...args: unknown[]) => {
            trips.push(name);
            return (fn as (...a: unknown[]) => unknown)(...args);
          }
        : fn;
  }
  return { ...counted, default: counted };
});

let dir: string;
let root: string;
let outside: string;
let c: LocalConnector;

beforeAll(() => {
  dir = scratchDir('write-path');
  root = join(dir, 'account');
  outside = join(dir, 'outside');
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(dir, 'src.bin'), 'source bytes');
  c = new LocalConnector({ path: root, trashDir: join(dir, 'trash') });
});

afterAll(async () => {
  await c.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('local writeFile (spec 1, Upload / Copy; Errors)', () => {
  it('a new file makes no lookup through the I/O pool: only the copy, its time, the fsync and the publish go there', async () => {
    const modified = new Date('2021-03-04T05:06:07Z');
    // A first write fills the connector's cached real root.
    await c.features.writeFile!('/sub/warm.bin', join(dir, 'src.bin'), { noReplace: {} });
    trips.length = 0;
    const e = await c.features.writeFile!('/sub/new.bin', join(dir, 'src.bin'), { noReplace: {}, modified });
    // The time and the fsync are callback calls on the open file (node:fs), not counted here;
    // before, a write made 12 of these (6 of them lookups, one failing) and 2 on a file handle.
    expect(trips).toEqual(['copyFile', 'link', 'unlink']);
    expect(e).toMatchObject({ path: '/sub/new.bin', kind: 'file', size: 12 });
    expect(readFileSync(join(root, 'sub/new.bin'), 'utf8')).toBe('source bytes');
    expect(statSync(join(root, 'sub/new.bin')).mtime.toISOString()).toBe(modified.toISOString());
  });

  it('a name that is a link leading out of the folder is refused and the file outside is unchanged', async () => {
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    symlinkSync(join(outside, 'secret.txt'), join(root, 'sub/escape.txt'));
    await expectCode(c.features.writeFile!('/sub/escape.txt', join(dir, 'src.bin')), 'forbidden');
    await expectCode(c.write('/sub/escape.txt', Readable.from([Buffer.from('x')])), 'forbidden');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(lstatSync(join(root, 'sub/escape.txt')).isSymbolicLink()).toBe(true);
  });

  it('a folder that is a link leading out is refused, and nothing is written there', async () => {
    symlinkSync(outside, join(root, 'out'));
    await expectCode(c.features.writeFile!('/out/planted.bin', join(dir, 'src.bin')), 'forbidden');
    expect(() => statSync(join(outside, 'planted.bin'))).toThrow();
  });

  it('a name that is a link inside the folder is replaced by the file; the link target is unchanged', async () => {
    writeFileSync(join(root, 'target.txt'), 'target');
    symlinkSync(join(root, 'target.txt'), join(root, 'inner.txt'));
    await c.features.writeFile!('/inner.txt', join(dir, 'src.bin'));
    expect(lstatSync(join(root, 'inner.txt')).isFile()).toBe(true);
    expect(readFileSync(join(root, 'inner.txt'), 'utf8')).toBe('source bytes');
    expect(readFileSync(join(root, 'target.txt'), 'utf8')).toBe('target');
  });

  // docs/connectors.md, The conditional replace: the ETag given is the one `stat` reports, which
  // looks through a link at the name; the check before the rename looks the same way.
  it('a conditional replace of a name that is a link inside the folder matches the ETag stat gave', async () => {
    writeFileSync(join(root, 'linked-target.txt'), 'target');
    symlinkSync(join(root, 'linked-target.txt'), join(root, 'linked.txt'));
    const looked = (await c.stat('/linked.txt')).etag;
    await c.features.writeFile!('/linked.txt', join(dir, 'src.bin'), { ifMatch: looked });
    expect(readFileSync(join(root, 'linked.txt'), 'utf8')).toBe('source bytes');
    await expect(c.write('/linked.txt', Readable.from([Buffer.from('x')]), { ifMatch: looked })).rejects.toMatchObject({ code: 'conflict' });
  });

  it('takes the mode of the file it replaces, 0644 when new, never the source special bits', async () => {
    const mode = (p: string) => statSync(join(root, p)).mode & 0o7777;
    chmodSync(join(dir, 'src.bin'), 0o2755);
    await c.features.writeFile!('/mode-new.bin', join(dir, 'src.bin'));
    expect(mode('mode-new.bin')).toBe(0o644);
    chmodSync(join(dir, 'src.bin'), 0o644);
    writeFileSync(join(root, 'mode-old.bin'), 'old');
    chmodSync(join(root, 'mode-old.bin'), 0o600);
    await c.features.writeFile!('/mode-old.bin', join(dir, 'src.bin'));
    expect(mode('mode-old.bin')).toBe(0o600);
    await c.features.writeFile!('/mode-same.bin', join(dir, 'src.bin'));
    expect(mode('mode-same.bin')).toBe(0o644);
  });

  it('a missing folder is not_found, a file in the way of a folder is invalid_parent_folder, a folder at the name is naming_conflict', async () => {
    await expectCode(c.features.writeFile!('/nowhere/x.bin', join(dir, 'src.bin')), 'not_found');
    writeFileSync(join(root, 'plain'), 'x');
    await expectCode(c.features.writeFile!('/plain/x.bin', join(dir, 'src.bin')), 'invalid_parent_folder');
    await expectCode(c.features.writeFile!('/sub', join(dir, 'src.bin')), 'naming_conflict');
  });
});
