// The sync procedures (contract/sync.ts, docs/sync.md "From the app"): add a pair, see a file
// reach the other side, pause and resume, and resolve a conflict with Keep mine / theirs / both.
// The remote side is a WebDAV account on Apache.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { createHandlers } from '../../src-main/rpc/handlers';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { textOf } from './scenario';

describe('sync procedures: pairs and conflicts', () => {
  let server: ApacheServer;
  let app: App;
  let account: number;
  const dir = scratchDir('sync-rpc');
  const h = () => createHandlers(app, { mode: 'headless', version: 'test' });

  beforeAll(async () => {
    server = await startApache();
    app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false, sync: { manual: true, trashDir: join(dir, 'trash') } });
    account = (await app.accounts.connect({ service: 'webdav', options: { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password } })).id;
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds a pair, syncs a file across, pauses, and resolves conflicts three ways', async () => {
    const local = join(dir, 'Mine');
    mkdirSync(local);
    const remote = await app.accounts.storage(account);
    await remote.mkdir('/Shared');
    writeFileSync(join(local, 'hello.txt'), 'hello');
    await expect(h()['sync.pairs.create']({ localPath: join(dir, 'missing'), account, remotePath: '/Shared', excluded: [] })).rejects.toMatchObject({ code: 'invalid_parameters' });
    const pair = await h()['sync.pairs.create']({ localPath: local, account, remotePath: '/Shared', excluded: [] });
    mkdirSync(join(local, 'inner'));
    await expect(h()['sync.pairs.create']({ localPath: join(local, 'inner'), account, remotePath: '/Shared', excluded: [] })).rejects.toMatchObject({ code: 'conflict' });
    await app.sync.run(pair.id);
    expect(await textOf(remote, '/Shared/hello.txt')).toBe('hello');
    expect((await h()['sync.pairs.list']({}))[0]).toMatchObject({ id: pair.id, state: 'idle', pending: 0, conflicts: 0, paused: false });

    // Paused: nothing moves.
    await h()['sync.pairs.pause']({ id: pair.id });
    writeFileSync(join(local, 'later.txt'), 'later');
    await app.sync.run(pair.id);
    await expect(remote.stat('/Shared/later.txt')).rejects.toMatchObject({ code: 'not_found' });
    await h()['sync.pairs.resume']({ id: pair.id });
    await app.sync.run(pair.id);
    expect(await textOf(remote, '/Shared/later.txt')).toBe('later');

    // Three conflicts (document 1 of docs/sync.md: changed on both sides keeps both).
    for (const n of ['a', 'b', 'c']) writeFileSync(join(local, `${n}.txt`), `${n}0`);
    await app.sync.run(pair.id);
    for (const n of ['a', 'b', 'c']) {
      writeFileSync(join(local, `${n}.txt`), `${n}-mine`);
      await remote.write(`/Shared/${n}.txt`, Readable.from([Buffer.from(`${n}-theirs!`)]));
    }
    await app.sync.run(pair.id);
    const conflicts = await h()['sync.conflicts.list']({ pair: pair.id });
    expect(conflicts.map((c) => c.path).sort()).toEqual(['/a.txt', '/b.txt', '/c.txt']);
    expect((await h()['sync.pairs.list']({}))[0].conflicts).toBe(3);
    const of = (p: string) => conflicts.find((c) => c.path === p)!;
    await h()['sync.conflicts.resolve']({ id: of('/a.txt').id, keep: 'mine' });
    await h()['sync.conflicts.resolve']({ id: of('/b.txt').id, keep: 'theirs' });
    await h()['sync.conflicts.resolve']({ id: of('/c.txt').id, keep: 'both' });
    await app.sync.run(pair.id);
    expect(await h()['sync.conflicts.list']({})).toEqual([]);
    expect([await textOf(remote, '/Shared/a.txt'), await textOf(remote, '/Shared/b.txt'), await textOf(remote, '/Shared/c.txt')]).toEqual(['a-mine', 'b-theirs!', 'c-theirs!']);
    expect(readFileSync(join(local, 'a.txt'), 'utf8')).toBe('a-mine');
    const names = (await remote.list('/Shared')).map((e) => e.name).sort();
    expect(names.filter((n) => n.includes('(conflict '))).toEqual([expect.stringMatching(/^c \(conflict .*\)\.txt$/)]);

    // A folder deleted here goes on the other side although it holds a file sync ignores there.
    mkdirSync(join(local, 'old'));
    writeFileSync(join(local, 'old', 'x.txt'), 'x');
    await app.sync.run(pair.id);
    await remote.write('/Shared/old/.DS_Store', Readable.from([Buffer.from('finder')]));
    rmSync(join(local, 'old'), { recursive: true });
    await app.sync.run(pair.id);
    expect((await h()['sync.pairs.list']({}))[0].state).toBe('idle');
    await expect(remote.stat('/Shared/old')).rejects.toMatchObject({ code: 'not_found' });

    await h()['sync.pairs.remove']({ id: pair.id });
    expect(await h()['sync.pairs.list']({})).toEqual([]);
    expect(readFileSync(join(local, 'hello.txt'), 'utf8')).toBe('hello');
  });

  // docs/sync.md, "Badges": a listed folder's entries inside a pair, from the remote account and
  // from a local account holding the pair's local folder.
  it('answers the badges of a listed folder: synced, pending, conflict', async () => {
    const home = join(dir, 'home');
    const docs = join(home, 'Docs');
    mkdirSync(join(docs, 'sub'), { recursive: true });
    writeFileSync(join(docs, 'a.txt'), 'a');
    writeFileSync(join(docs, 'b.txt'), 'b');
    writeFileSync(join(docs, 'sub', 'x.txt'), 'x');
    const remote = await app.accounts.storage(account);
    await remote.mkdir('/Shelf');
    const disk = (await app.accounts.connect({ service: 'local', options: { path: home } })).id;
    const pair = await h()['sync.pairs.create']({ localPath: docs, account, remotePath: '/Shelf', excluded: [] });
    const states = (acc: number, path: string) => h()['sync.files.states']({ account: acc, folder: app.storage.idOf(acc, path) });

    // Before any scan the engine has seen nothing: no badge.
    expect(await states(account, '/Shelf')).toEqual({});
    await app.sync.run(pair.id);
    const synced = { 'a.txt': 'synced', 'b.txt': 'synced', sub: 'synced' };
    expect(await states(account, '/Shelf')).toEqual(synced);
    expect(await states(account, '/Shelf/sub')).toEqual({ 'x.txt': 'synced' });
    expect(await states(disk, '/Docs')).toEqual(synced);
    expect(await states(disk, '/Docs/sub')).toEqual({ 'x.txt': 'synced' });
    // The pair's root in its parent folder, on both accounts; folders outside a pair have none.
    expect(await states(account, '/')).toMatchObject({ Shelf: 'synced' });
    expect(await states(disk, '/')).toEqual({ Docs: 'synced' });

    // Seen by a scan but not carried over yet: pending (a remote addition, a local edit).
    await remote.write('/Shelf/c.txt', Readable.from([Buffer.from('c')]));
    writeFileSync(join(docs, 'a.txt'), 'a, edited');
    await app.sync.planPair(app.sync.store.pair(pair.id));
    expect(await states(account, '/Shelf')).toEqual({ ...synced, 'a.txt': 'pending', 'c.txt': 'pending' });
    expect(await states(disk, '/Docs')).toEqual({ ...synced, 'a.txt': 'pending', 'c.txt': 'pending' });
    await app.sync.run(pair.id);
    expect(await states(account, '/Shelf')).toEqual({ ...synced, 'c.txt': 'synced' });

    // Changed on both sides: the name and its conflict copy are badged "conflict".
    writeFileSync(join(docs, 'b.txt'), 'b-mine');
    await remote.write('/Shelf/b.txt', Readable.from([Buffer.from('b-theirs!')]));
    await app.sync.run(pair.id);
    const [conflict] = await h()['sync.conflicts.list']({ pair: pair.id });
    const copy = conflict.copyPath.slice(1);
    expect(await states(account, '/Shelf')).toEqual({ ...synced, 'c.txt': 'synced', 'b.txt': 'conflict', [copy]: 'conflict' });
    expect(await states(disk, '/Docs')).toMatchObject({ 'b.txt': 'conflict', [copy]: 'conflict' });
    expect(await states(disk, '/')).toEqual({ Docs: 'conflict' });
    await h()['sync.pairs.remove']({ id: pair.id });
    expect(await states(account, '/Shelf')).toEqual({});
  });
  // docs/sync.md, "What is synced" (selective sync): exclusions change after the pair exists.
  it('changes the excluded folders: an excluded folder stays on both sides untouched, re-included it syncs again', async () => {
    const local = join(dir, 'Selective');
    mkdirSync(join(local, 'keep'), { recursive: true });
    mkdirSync(join(local, 'skip', 'deep'), { recursive: true });
    writeFileSync(join(local, 'keep', 'k.txt'), 'k');
    writeFileSync(join(local, 'skip', 's.txt'), 's');
    writeFileSync(join(local, 'skip', 'deep', 'd.txt'), 'd');
    const remote = await app.accounts.storage(account);
    await remote.mkdir('/Sel');
    const pair = await h()['sync.pairs.create']({ localPath: local, account, remotePath: '/Sel', excluded: [] });
    await app.sync.run(pair.id);
    expect(await textOf(remote, '/Sel/skip/deep/d.txt')).toBe('d');

    await expect(h()['sync.pairs.update']({ id: pair.id, excluded: ['../elsewhere'] })).rejects.toMatchObject({ code: 'invalid_parameters' });
    expect(await h()['sync.pairs.update']({ id: pair.id, excluded: ['skip/', '/skip'] })).toMatchObject({ id: pair.id, excluded: ['/skip'] });
    // Excluded: changes on either side stay there, nothing is deleted, the rest still syncs.
    writeFileSync(join(local, 'skip', 's.txt'), 's, edited here');
    await remote.write('/Sel/skip/r.txt', Readable.from([Buffer.from('r, added there')]));
    writeFileSync(join(local, 'keep', 'k.txt'), 'k, edited');
    const r = await app.sync.run(pair.id);
    expect(r.plan.heldDeletes).toBeUndefined();
    expect((await h()['sync.pairs.list']({})).find((p) => p.id === pair.id)).toMatchObject({ state: 'idle', excluded: ['/skip'] });
    expect(await textOf(remote, '/Sel/keep/k.txt')).toBe('k, edited');
    expect(await textOf(remote, '/Sel/skip/s.txt')).toBe('s');
    expect(await textOf(remote, '/Sel/skip/deep/d.txt')).toBe('d');
    expect(readFileSync(join(local, 'skip', 'deep', 'd.txt'), 'utf8')).toBe('d');
    expect(existsSync(join(local, 'skip', 'r.txt'))).toBe(false);

    // Included again: synced like a new folder (equal files match, one-sided ones are copied,
    // a file that differs is kept both ways as a conflict).
    expect(await h()['sync.pairs.update']({ id: pair.id, excluded: [] })).toMatchObject({ excluded: [] });
    await app.sync.run(pair.id);
    expect(readFileSync(join(local, 'skip', 'r.txt'), 'utf8')).toBe('r, added there');
    expect(await textOf(remote, '/Sel/skip/deep/d.txt')).toBe('d');
    const conflicts = await h()['sync.conflicts.list']({ pair: pair.id });
    expect(conflicts.map((c) => c.path)).toEqual(['/skip/s.txt']);
    expect(await textOf(remote, conflicts[0].copyPath.replace(/^/, '/Sel'))).toBe('s, edited here');
    expect(readFileSync(join(local, 'skip', 's.txt'), 'utf8')).toBe('s');
    expect((await h()['sync.pairs.list']({})).find((p) => p.id === pair.id)?.state).toBe('idle');
    await h()['sync.pairs.remove']({ id: pair.id });
  });

  // docs/sync.md, "Pairs": add a pair, picking a local folder and a remote one; in the desktop app the
  // local folder comes from the system's dialog; a browser (headless mode) types its path.
  it('asks for the local folder with the desktop app\'s dialog, and only there', async () => {
    const asked: string[] = [];
    const desktop = createHandlers(app, { mode: 'electron', version: 'test', chooseFolder: async () => (asked.push('dialog'), join(dir, 'Picked')) });
    expect(await desktop['sync.localFolder.choose']({})).toEqual({ path: join(dir, 'Picked') });
    const cancelled = createHandlers(app, { mode: 'electron', version: 'test', chooseFolder: async () => null });
    expect(await cancelled['sync.localFolder.choose']({})).toEqual({ path: null });
    expect(asked).toEqual(['dialog']);
    await expect(h()['sync.localFolder.choose']({})).rejects.toMatchObject({ code: 'not_implemented' });
  });

  it('keeps the remote walk interval as a setting (docs/sync.md, "Remote changes")', async () => {
    expect(await h()['sync.settings.get']({})).toEqual({ remotePollSeconds: 5 });
    expect(await h()['sync.settings.set']({ remotePollSeconds: 12 })).toEqual({ remotePollSeconds: 12 });
    expect(app.settings.get('sync.remotePollSeconds', 0)).toBe(12);
    expect(await h()['sync.settings.get']({})).toEqual({ remotePollSeconds: 12 });
  });
});
