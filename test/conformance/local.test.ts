// spec 1, Files and Folders: the conformance suite on the `local` connector (a temp folder,
// a temp trash), with a memory account as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local/index';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition } from '../../src-main/connectors/registry';
import type { RawChange } from '../../src-main/connectors/types';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

describeStorageConformance('local', async () => {
  const dir = scratchDir('conf-local');
  const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const root = scratchDir('conf-local-root');
  const acc = await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(dir, 'Trash') } });
  const other = await app.accounts.connect({ service: 'memory', options: { store: `conf-local-${randomBytes(6).toString('hex')}` } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    async teardown() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    },
  };
});

// Behaviour specific to `local` that the shared suite cannot see from the service.
describe('local connector specifics', () => {
  let dir: string;
  let root: string;
  let c: LocalConnector;
  beforeEach(() => {
    dir = scratchDir('local-spec');
    root = join(dir, 'root');
    mkdirSync(root);
    c = new LocalConnector({ path: root, trashDir: join(dir, 'Trash') });
  });
  afterEach(async () => {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // spec 1, Files: Delete (to the trash) — freedesktop.org Trash spec layout
  it('trashes per the freedesktop.org Trash spec, with unique names', async () => {
    writeFileSync(join(root, 'a b%.txt'), 'one');
    await c.features.trash!.put('/a b%.txt');
    writeFileSync(join(root, 'a b%.txt'), 'two');
    await c.features.trash!.put('/a b%.txt');
    expect(readdirSync(join(dir, 'Trash', 'files')).sort()).toEqual(['a b%.2.txt', 'a b%.txt']);
    const info = readFileSync(join(dir, 'Trash', 'info', 'a b%.2.txt.trashinfo'), 'utf8');
    expect(info).toMatch(/^\[Trash Info\]\nPath=.*\/root\/a%20b%25\.txt\nDeletionDate=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\n$/);
    expect(readFileSync(join(dir, 'Trash', 'files', 'a b%.2.txt'), 'utf8')).toBe('two');
    const listed = await c.features.trash!.list();
    expect(listed.map((e) => e.name).sort()).toEqual(['a b%.2.txt', 'a b%.txt']);
    expect(listed[0]!.raw?.originalPath).toBe(join(root, 'a b%.txt'));
  });

  it('hides its own temporary files and never shows a half-written file', async () => {
    let pushed = 0;
    const body = new Readable({
      read() {
        if (pushed++ < 3) this.push(Buffer.alloc(1 << 20, 1));
        else this.destroy(new Error('client went away'));
      },
    });
    await expect(c.write('/half.bin', body)).rejects.toBeTruthy();
    expect(readdirSync(root)).toEqual([]);
    writeFileSync(join(root, '.tributary-0123456789abcdef.tmp'), 'temp');
    expect(await c.list('/')).toEqual([]);
  });

  // spec 1, Multipart upload: positional parts into a hidden file, renamed on complete
  it('chunk writer: parallel parts, resume from state, complete and abort', async () => {
    const partSize = c.features.partSizeFor!(12 << 20);
    expect(partSize).toBe(5 << 20);
    expect(c.features.partSizeFor!(100 * 1024 ** 3)).toBeGreaterThanOrEqual(Math.ceil((100 * 1024 ** 3) / 10_000));
    const data = randomBytes(12 << 20);
    const w = await c.features.openChunkWriter!('/big.bin', { size: data.length, partSize });
    const parts = [1, 2, 3].map((n) => data.subarray((n - 1) * partSize, n * partSize));
    const r3 = await w.writePart(3, parts[2]!);
    await expect(w.writePart(1, parts[0]!.subarray(1))).rejects.toMatchObject({ code: 'invalid_parameters' });
    expect(await c.list('/')).toEqual([]); // nothing visible before complete
    const state = JSON.parse(JSON.stringify(w.state));
    const resumed = await c.features.resumeChunkWriter!('/big.bin', state);
    const [r1, r2] = await Promise.all([resumed.writePart(1, parts[0]!), resumed.writePart(2, parts[1]!)]);
    await expect(resumed.complete([r1, r3])).rejects.toMatchObject({ code: 'invalid_parameters' });
    const entry = await resumed.complete([r1, r2, r3]);
    await w.abort().catch(() => {}); // the first writer's handle is closed; its temp file is gone already
    expect(entry.size).toBe(data.length);
    expect(readFileSync(join(root, 'big.bin')).equals(data)).toBe(true);
    expect(readdirSync(root)).toEqual(['big.bin']);
    const aborted = await c.features.openChunkWriter!('/gone.bin', { size: 10, partSize: 5 << 20 });
    await aborted.abort();
    expect(readdirSync(root)).toEqual(['big.bin']);
    await expect(c.features.resumeChunkWriter!('/gone.bin', aborted.state)).rejects.toMatchObject({ code: 'not_found' });
    await expect(c.features.resumeChunkWriter!('/x', { temp: '/../../etc/passwd', size: 1, partSize: 1 })).rejects.toMatchObject({ code: 'invalid_parameters' });
  });

  // Change feed: a rename seen as unlink+add is reported once, as a rename/move
  it('watch coalesces unlink+add of the same inode into rename and move', async () => {
    mkdirSync(join(root, 'sub'));
    writeFileSync(join(root, 'a.txt'), 'aaa');
    const changes: RawChange[] = [];
    const w = await c.features.watch!((cs) => changes.push(...cs), (e) => changes.push({ type: 'delete', path: `error ${e.message}`, kind: 'file' }));
    try {
      renameSync(join(root, 'a.txt'), join(root, 'b.txt'));
      await waitFor(() => changes.some((x) => x.type === 'rename')).catch((e) => { console.log(JSON.stringify(changes)); throw e; });
      renameSync(join(root, 'b.txt'), join(root, 'sub', 'b.txt'));
      await waitFor(() => changes.some((x) => x.type === 'move'));
      writeFileSync(join(root, 'new.txt'), 'n');
      await waitFor(() => changes.some((x) => x.type === 'add'));
      rmSync(join(root, 'new.txt'));
      await waitFor(() => changes.some((x) => x.type === 'delete'));
      expect(changes.map(({ type, path, previousPath, kind }) => ({ type, path, previousPath, kind }))).toEqual([
        { type: 'rename', path: '/b.txt', previousPath: '/a.txt', kind: 'file' },
        { type: 'move', path: '/sub/b.txt', previousPath: '/b.txt', kind: 'file' },
        { type: 'add', path: '/new.txt', previousPath: undefined, kind: 'file' },
        { type: 'delete', path: '/new.txt', previousPath: undefined, kind: 'file' },
      ]);
    } finally {
      await w.close();
    }
  });

  it('quota comes from statfs', async () => {
    const q = await c.features.quota!();
    expect(q.total).toBeGreaterThan(0);
    expect(q.used).toBeGreaterThanOrEqual(0);
  });

  it('the first run creates the default local account through this connector', async () => {
    const folder = join(dir, 'Tributary');
    const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: folder });
    try {
      const [acc] = app.accounts.list();
      expect(acc).toMatchObject({ service: 'local', account: 'This computer', isDefault: true });
      const f = await app.storage.upload(acc!.id, 'root', 'hello.txt', Readable.from([Buffer.from('hi')]));
      expect(readFileSync(join(folder, 'hello.txt'), 'utf8')).toBe('hi');
      expect(f.name).toBe('hello.txt');
    } finally {
      await app.close();
    }
  });

  it('options: the folder must be an existing absolute path; import maps body.path', async () => {
    await loadConnectors();
    const def = connectorDefinition('local');
    expect(def.options.safeParse({ path: 'relative/x' }).success).toBe(false);
    expect(def.options.safeParse({ path: join(dir, 'missing') }).success).toBe(false);
    expect(def.options.safeParse(def.fromImport({ path: root })).success).toBe(true);
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !cond(); ) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
