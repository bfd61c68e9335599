/**
 * The `local` connector and symlinks that lead back to a folder they are in (docs/connectors.md,
 * "Confinement"): `self -> .`, `up -> ..`, and two folders linking to each other. Listings leave
 * such a link out, a path through one is refused (`forbidden`), and every walk (a copy to another
 * account, a search; spec 1, Copy and Search) ends with the files once each. A link to a folder
 * that is not above it is still shown and followed.
 *
 * Without the check each walk would go round the loop down to the kernel's 40 links (2^40 paths
 * with two such links): the failing mode is a hang, hence the modest timeouts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { LocalConnector } from '../../src-main/connectors/local';
import type { StorageConnector } from '../../src-main/connectors/types';
import { expectCode } from '../conformance/storage-suite';
import { scratchDir } from '../servers/util';

const timeout = 20_000;
let work: string;
let root: string;
let app: App;
let acc: number;
let mem: number;
let local: LocalConnector;

beforeAll(async () => {
  work = scratchDir('link-loops');
  root = join(work, 'acct');
  // dir: a file, a link to itself, one to its parent, and one to a sibling folder (no loop).
  mkdirSync(join(root, 'dir'), { recursive: true });
  writeFileSync(join(root, 'dir', 'f.txt'), 'hello');
  symlinkSync('.', join(root, 'dir', 'self'));
  symlinkSync('..', join(root, 'dir', 'up'));
  mkdirSync(join(root, 'S'));
  writeFileSync(join(root, 'S', 's.txt'), 'sibling');
  symlinkSync('../S', join(root, 'dir', 'sib'));
  // X and Y link to each other.
  mkdirSync(join(root, 'X'));
  mkdirSync(join(root, 'Y'));
  writeFileSync(join(root, 'X', 'x.txt'), 'x');
  writeFileSync(join(root, 'Y', 'y.txt'), 'y');
  symlinkSync('../Y', join(root, 'X', 'toY'));
  symlinkSync('../X', join(root, 'Y', 'toX'));
  // At the root: a link to the root itself.
  symlinkSync('.', join(root, 'top'));
  local = new LocalConnector({ path: root, trashDir: join(work, 'trash') });
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  acc = (await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(work, 'trash') } })).id;
  mem = (await app.accounts.connect({ service: 'memory', options: { store: `link-loops-${randomBytes(4).toString('hex')}` } })).id;
});

afterAll(async () => {
  await app?.close();
  await local?.close();
  rmSync(work, { recursive: true, force: true });
});

const names = async (c: StorageConnector, path: string) => (await c.list(path)).map((e) => `${e.name}${e.kind === 'folder' ? '/' : ''}`).sort();

/** Every path below `path` ('/' suffix for folders), walked with list(). */
async function tree(c: StorageConnector, path: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (p: string) => {
    for (const e of await c.list(p)) {
      out.push(`${e.path}${e.kind === 'folder' ? '/' : ''}`);
      if (e.kind === 'folder') await visit(e.path);
    }
  };
  await visit(path);
  return out.sort();
}

describe('local connector: links back to their own folder (docs/connectors.md, Confinement)', () => {
  it('listings leave out self, up and mutual links, and still show a link to a sibling folder', async () => {
    expect(await names(local, '/')).toEqual(['S/', 'X/', 'Y/', 'dir/']);
    expect(await names(local, '/dir')).toEqual(['f.txt', 'sib/']);
    expect(await names(local, '/dir/sib')).toEqual(['s.txt']);
    // X/toY is Y, not above X: shown; in it, toX leads back to X, which the listed path is in.
    expect(await names(local, '/X')).toEqual(['toY/', 'x.txt']);
    expect(await names(local, '/X/toY')).toEqual(['y.txt']);
    expect(await names(local, '/Y/toX')).toEqual(['x.txt']);
    // The scan's listing is the same one.
    expect((await local.listStats('/dir')).map((c) => c.name).sort()).toEqual(['f.txt', 'sib']);
  });

  it('a path through such a link is refused, as one leading out is; the sibling link still works', { timeout }, async () => {
    await expectCode(local.stat('/dir/self'), 'forbidden');
    await expectCode(local.stat('/dir/self/f.txt'), 'forbidden');
    await expectCode(local.list('/dir/up'), 'forbidden');
    await expectCode(local.list('/X/toY/toX'), 'forbidden');
    await expectCode(local.stat('/top/dir/f.txt'), 'forbidden');
    // Nothing is written through one either (the real folder would get it under another path).
    await expectCode(local.write('/dir/self/new.txt', Readable.from([Buffer.from('n')])), 'forbidden');
    await expectCode(local.features.trash!.put('/dir/self/f.txt'), 'forbidden');
    expect(existsSync(join(root, 'dir', 'new.txt'))).toBe(false);
    expect(existsSync(join(root, 'dir', 'f.txt'))).toBe(true);
    expect((await local.stat('/dir/sib/s.txt')).size).toBe(7);
    expect((await local.stat('/X/toY/y.txt')).size).toBe(1);
  });

  it('a walk of the whole account ends, with each file once per path that is not a loop', { timeout }, async () => {
    expect(await tree(local, '/')).toEqual([
      '/S/',
      '/S/s.txt',
      '/X/',
      '/X/toY/',
      '/X/toY/y.txt',
      '/X/x.txt',
      '/Y/',
      '/Y/toX/',
      '/Y/toX/x.txt',
      '/Y/y.txt',
      '/dir/',
      '/dir/f.txt',
      '/dir/sib/',
      '/dir/sib/s.txt',
    ]);
  });

  // spec 1, Copy (to another account) and Search.
  it('a copy of the folder to a memory account ends with its files once; a search finds the file once', { timeout }, async () => {
    const dir = app.storage.idOf(acc, '/dir');
    const copied = await app.storage.copy(acc, dir, { parentId: 'root', account: mem });
    expect(copied.name).toBe('dir');
    const target = await app.accounts.storage(mem);
    expect(await tree(target, '/')).toEqual(['/dir/', '/dir/f.txt', '/dir/sib/', '/dir/sib/s.txt']);
    const x = await app.storage.copy(acc, app.storage.idOf(acc, '/X'), { parentId: 'root', account: mem });
    expect(x.name).toBe('X');
    expect(await tree(target, '/X')).toEqual(['/X/toY/', '/X/toY/y.txt', '/X/x.txt']);
    expect((await app.storage.search(acc, 'f.txt')).map((r) => r.path)).toEqual(['/dir/f.txt']);
  });
});
