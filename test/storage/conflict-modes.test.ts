/**
 * Rename, move and copy into a taken name, by the caller's choice (the UI asks Keep both /
 * Replace / Skip): "name (1)" (rename, spec 1's "Name conflicts may yield a renamed file"),
 * a real replace (overwrite) or naming_conflict with nothing changed (fail). And a delete to the
 * trash that Undo puts back. Against a local folder and Apache WebDAV.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { expectCode } from '../conformance/storage-suite';

const text = (s: string) => Readable.from([Buffer.from(s)]);

let app: App;
let dir: string;
let root: string;
let apache: ApacheServer;
let local: number;
let dav: number;

beforeAll(async () => {
  dir = scratchDir('conflict-modes');
  root = scratchDir('conflict-modes-root');
  apache = await startApache();
  app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  local = (await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(dir, 'Trash') } })).id;
  dav = (await app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) })).id;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await apache?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

/** Names on disk, hidden temporary files included (a replace must leave none behind). */
const onDisk = (folder: string) => readdirSync(folder).sort();

describe.each([
  ['local', () => local, () => root],
  ['webdav', () => dav, () => apache.root],
])('conflict choice on %s (spec 1, Rename / move, Copy: name conflicts)', (label, account, disk) => {
  let folder: string;
  let folderId: string;
  let aId: string;

  beforeAll(async () => {
    folderId = (await app.storage.mkdir(account(), 'root', `c-${label}`)).id;
    folder = join(disk(), `c-${label}`);
  });

  it('fail: a rename onto a taken name is naming_conflict and changes nothing', async () => {
    aId = (await app.storage.upload(account(), folderId, 'a.txt', text('A'))).id;
    await app.storage.upload(account(), folderId, 'b.txt', text('B'));
    await expectCode(app.storage.move(account(), aId, { name: 'b.txt', conflict: 'fail' }), 'naming_conflict');
    expect(onDisk(folder)).toEqual(['a.txt', 'b.txt']);
    expect(readFileSync(join(folder, 'b.txt'), 'utf8')).toBe('B');
  });

  it('rename (the default): the renamed file takes "name (1)"', async () => {
    const r = await app.storage.copy(account(), aId, { parentId: folderId, name: 'b.txt' });
    expect(r.name).toBe('b (1).txt');
    expect(readFileSync(join(folder, 'b (1).txt'), 'utf8')).toBe('A');
  });

  it('overwrite: a rename replaces the file that had the name, and leaves no temporary file', async () => {
    const r = await app.storage.move(account(), aId, { name: 'b.txt', conflict: 'overwrite' });
    expect(r.name).toBe('b.txt');
    expect(readFileSync(join(folder, 'b.txt'), 'utf8')).toBe('A');
    expect(onDisk(folder)).toEqual(['b (1).txt', 'b.txt']);
  });

  it('overwrite: a copy replaces too; a file never replaces a folder', async () => {
    const src = (await app.storage.upload(account(), 'root', `src-${label}.txt`, text('copied'))).id;
    await app.storage.upload(account(), folderId, `src-${label}.txt`, text('old'));
    const r = await app.storage.copy(account(), src, { parentId: folderId, conflict: 'overwrite' });
    expect(r.name).toBe(`src-${label}.txt`);
    expect(readFileSync(join(folder, `src-${label}.txt`), 'utf8')).toBe('copied');
    await app.storage.mkdir(account(), folderId, 'sub');
    await expectCode(app.storage.move(account(), src, { parentId: folderId, name: 'sub', conflict: 'overwrite' }), 'naming_conflict');
    expect(existsSync(join(disk(), `src-${label}.txt`))).toBe(true);
  });
});

describe('conflict choice across accounts (spec 1, Rename / move: account)', () => {
  it('a move from the local folder into WebDAV replaces the file there; fail leaves both sides as they were', async () => {
    const folderId = (await app.storage.mkdir(dav, 'root', 'x-acct')).id;
    await app.storage.upload(dav, folderId, 'r.txt', text('remote'));
    const first = (await app.storage.upload(local, 'root', 'r.txt', text('local one'))).id;
    await expectCode(app.storage.move(local, first, { account: dav, parentId: folderId, conflict: 'fail' }), 'naming_conflict');
    expect(readFileSync(join(root, 'r.txt'), 'utf8')).toBe('local one');
    expect(readFileSync(join(apache.root, 'x-acct', 'r.txt'), 'utf8')).toBe('remote');
    await app.storage.move(local, first, { account: dav, parentId: folderId, conflict: 'overwrite' });
    expect(existsSync(join(root, 'r.txt'))).toBe(false);
    expect(readFileSync(join(apache.root, 'x-acct', 'r.txt'), 'utf8')).toBe('local one');
    expect(onDisk(join(apache.root, 'x-acct'))).toEqual(['r.txt']);
  });
});

describe('delete and undo (spec 1, Delete: to the trash where the account has one)', () => {
  it('says per account whether deleting goes to a trash that Undo can restore', async () => {
    expect(await app.storage.deleteInfo(local)).toEqual({ trash: true, undo: true });
    expect(await app.storage.deleteInfo(dav)).toEqual({ trash: false, undo: false });
  });

  it('a trash move returns a token that puts the item back where it was; a permanent delete returns none', async () => {
    const folderId = (await app.storage.mkdir(local, 'root', 'undo')).id;
    await app.storage.upload(local, folderId, 'keep.txt', text('kept'));
    const { restore } = await app.storage.delete(local, folderId, { recursive: true });
    expect(existsSync(join(root, 'undo'))).toBe(false);
    expect(restore).toBeTypeOf('string');
    const back = await app.storage.restore(local, restore!);
    expect(back.name).toBe('undo');
    expect(readFileSync(join(root, 'undo', 'keep.txt'), 'utf8')).toBe('kept');
    // The token is bound to its account and to a trash entry.
    await expectCode(app.storage.restore(dav, restore!), 'not_found');
    await expectCode(app.storage.restore(local, back.id), 'not_found');
    expect(await app.storage.delete(local, back.id, { recursive: true, permanent: true })).toEqual({});
  });
});
