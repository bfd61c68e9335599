// The desktop app's folder drop (contract files.uploadPaths with a folder's local path), through
// the same handlers as Electron's IPC, into Apache WebDAV: the tree arrives byte-identical as one
// transfer with the total size; dropped again it is kept beside the first as "name (1)".
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { dispatch } from '../../src-main/rpc/dispatch';
import { createHandlers } from '../../src-main/rpc/handlers';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';

let apache: ApacheServer;
let app: App;
let dav: number;
const src = scratchDir('folder-paths-src');
const files: Record<string, Buffer> = { 'a.txt': Buffer.from('one'), 'sub/b.bin': Buffer.alloc(6 * 1024 * 1024 + 3, 9), 'sub/deep/c.txt': Buffer.from('three') };
const total = Object.values(files).reduce((n, b) => n + b.length, 0);

beforeAll(async () => {
  for (const [rel, bytes] of Object.entries(files)) {
    mkdirSync(join(src, 'Album', rel, '..'), { recursive: true });
    writeFileSync(join(src, 'Album', rel), bytes);
  }
  mkdirSync(join(src, 'Album', 'empty'));
  apache = await startApache();
  app = await createApp({ dataDir: scratchDir('folder-paths-data'), defaultLocalFolder: false });
  dav = (await app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) })).id;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await apache?.stop();
});

const desktop = () => createHandlers(app, { mode: 'electron', version: 'test' });
const albumRows = () => app.transfers.list().filter((t) => t.name === 'Album');

describe('a folder dropped on the desktop app (spec 1, Upload a file; Create a folder)', () => {
  it('uploads the tree as one transfer with the total size', async () => {
    const r = await dispatch(desktop(), 'files.uploadPaths', { account: dav, parent: 'root', paths: [join(src, 'Album')] });
    expect(r).toEqual({ ok: true, value: { started: 1 } });
    await expect.poll(() => albumRows()[0]?.state, { timeout: 30_000 }).toBe('done');
    expect(albumRows()[0]).toMatchObject({ direction: 'upload', bytesTotal: total, bytesDone: total, savedAs: null });
    for (const [rel, bytes] of Object.entries(files)) expect(readFileSync(join(apache.root, 'Album', rel)).equals(bytes), rel).toBe(true);
    expect(statSync(join(apache.root, 'Album', 'empty')).isDirectory()).toBe(true);
  });

  it('dropped again, it is saved as "Album (1)" and the transfer says so', async () => {
    await dispatch(desktop(), 'files.uploadPaths', { account: dav, parent: 'root', paths: [join(src, 'Album')] });
    await expect.poll(() => albumRows().filter((t) => t.state === 'done').length, { timeout: 30_000 }).toBe(2);
    expect(albumRows().map((t) => t.savedAs)).toContain('Album (1)');
    expect(readFileSync(join(apache.root, 'Album (1)', 'sub/deep/c.txt'), 'utf8')).toBe('three');
  });
});
