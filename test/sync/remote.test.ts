// Remote changes of a pair without an activity subscription (docs/sync.md, "When a pair runs"):
// a backend that cannot push is walked every few seconds against
// the stored remote tree (Apache WebDAV here), the local account pushes through its watch, and an
// activity follower's record makes the pair look at once. The pair's own writes are no change.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { loadConnectors } from '../../src-main/connectors/all';
import { LocalConnector } from '../../src-main/connectors/local';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { SyncEngine } from '../../src-main/sync/engine';
import { remoteDiff, type RemoteChange } from '../../src-main/sync/remote-watch';
import { loadIgnore } from '../../src-main/sync/scan';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir, until } from '../servers/util';
import { syncDb, text } from './scenario';

const put = (c: StorageConnector, path: string, text: string) => c.write(path, Readable.from([Buffer.from(text)]));

describe('sync: remote changes reach the local side without a subscription', () => {
  let server: ApacheServer;
  let webdav: StorageConnector;
  const dir = scratchDir('sync-remote');
  const davOptions = () => ({ protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password });

  beforeAll(async () => {
    server = await startApache();
    await loadConnectors();
    const def = connectorDefinition('webdav');
    webdav = (await def.create(parseOptions(def, davOptions()), { dataDir: dir, accountId: 1 })) as StorageConnector;
  });
  afterAll(async () => {
    await webdav?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('WebDAV: the walk finds a file written on the server (and not the pair\'s own uploads) and the pair runs', async () => {
    const local = join(dir, 'dav-local');
    mkdirSync(local);
    writeFileSync(join(local, 'mine.txt'), 'from here');
    await webdav.mkdir('/Walked');
    await webdav.mkdir('/Walked/sub');
    await put(webdav, '/Walked/sub/theirs.txt', 'from there');
    const db = syncDb();
    // Walks every 200 ms; no other remote trigger exists (the full poll of earlier versions is
    // gone), and the local watch waits an hour so that none of its runs picks the change up.
    const engine = new SyncEngine(db, async () => webdav, { pollMs: 200, debounceMs: 3_600_000, trashDir: join(dir, 'trash1') });
    expect(engine.remoteModes()).toEqual({});
    const seen: RemoteChange[] = [];
    engine.onRemoteChange((_pair, change) => seen.push(change));
    try {
      await engine.start();
      const pair = await engine.create({ localPath: local, account: 1, remotePath: '/Walked' });
      await until(() => text(local, 'sub/theirs.txt') === 'from there' && engine.store.pair(pair.id).state === 'idle' && engine.store.pair(pair.id).lastSync !== null);
      expect(engine.remoteModes()).toEqual({ [pair.id]: 'walk' });
      const stored = () => engine.store.tree(pair.id, 'remote');
      const ignored = await loadIgnore(local, []);
      // The upload of mine.txt is in the stored tree: the walk sees no difference.
      expect(await remoteDiff(webdav, '/Walked', stored(), ignored)).toBeUndefined();

      // A file written on the server, deep down: found by the walk, carried over by the run.
      await put(webdav, '/Walked/sub/new.txt', 'new on the server');
      const idle = () => engine.store.pair(pair.id).state === 'idle';
      await until(() => text(local, 'sub/new.txt') === 'new on the server' && idle());
      expect(seen).toContainEqual({ path: '/sub/new.txt', by: 'walk' });
      // An edit and a delete on the server, each found by a walk once the last run is over.
      await put(webdav, '/Walked/sub/theirs.txt', 'edited there');
      await until(() => text(local, 'sub/theirs.txt') === 'edited there' && idle());
      await webdav.remove('/Walked/mine.txt', { recursive: false });
      await until(() => !existsSync(join(local, 'mine.txt')));
      await until(() => engine.store.pair(pair.id).state === 'idle');
      expect(await remoteDiff(webdav, '/Walked', stored(), ignored)).toBeUndefined();
      expect(seen.every((c) => c.by === 'walk')).toBe(true);
      expect(seen.map((c) => c.path)).toEqual(expect.arrayContaining(['/sub/new.txt', '/sub/theirs.txt', '/mine.txt']));
    } finally {
      await engine.close();
      db.close();
    }
  });

  it('remoteDiff: new, edited and deleted files and folders differ; ignored names do not', async () => {
    await webdav.mkdir('/Diff');
    await webdav.mkdir('/Diff/a');
    await put(webdav, '/Diff/a/x.txt', 'x');
    const local = join(dir, 'diff-local');
    mkdirSync(local);
    const db = syncDb();
    const engine = new SyncEngine(db, async () => webdav, { manual: true, trashDir: join(dir, 'trash2') });
    try {
      const pair = await engine.create({ localPath: local, account: 1, remotePath: '/Diff' });
      await engine.run(pair.id);
      const ignored = await loadIgnore(local, []);
      const diff = () => remoteDiff(webdav, '/Diff', engine.store.tree(pair.id, 'remote'), ignored);
      expect(await diff()).toBeUndefined();
      await put(webdav, '/Diff/a/.DS_Store', 'clutter');
      expect(await diff()).toBeUndefined();
      await put(webdav, '/Diff/a/x.txt', 'x, edited');
      expect(await diff()).toBe('/a/x.txt');
      await engine.run(pair.id);
      await webdav.mkdir('/Diff/a/b');
      expect(await diff()).toBe('/a/b');
      await engine.run(pair.id);
      await webdav.remove('/Diff/a/x.txt', { recursive: false });
      expect(await diff()).toBe('/a/x.txt');
      await engine.run(pair.id);
      expect(await diff()).toBeUndefined();

      // Deep folder ETags: a folder whose ETag is the last walk's is not listed. Apache's folder
      // ETags only cover their own entries, which is why WebDAV accounts do not use this: a file
      // changed two levels down goes unseen with the skip, and is seen without it.
      const tags = new Map<string, string>();
      expect(await remoteDiff(webdav, '/Diff', engine.store.tree(pair.id, 'remote'), ignored, undefined, tags)).toBeUndefined();
      expect([...tags.keys()].sort()).toEqual(['/a', '/a/b']);
      await put(webdav, '/Diff/a/b/deep.txt', 'deep');
      expect(await remoteDiff(webdav, '/Diff', engine.store.tree(pair.id, 'remote'), ignored, tags)).toBeUndefined();
      expect(await diff()).toBe('/a/b/deep.txt');
    } finally {
      await engine.close();
      db.close();
    }
  });

  it('local account: its watch pushes a change in the remote folder, with no walk at all', async () => {
    const [mine, account] = [join(dir, 'push-mine'), join(dir, 'push-account')];
    mkdirSync(mine);
    mkdirSync(join(account, 'Pushed'), { recursive: true });
    const remote = new LocalConnector({ path: account, trashDir: join(dir, 'trash3') });
    const db = syncDb();
    // pollMs 0: no walks; only the account's watch can report remote changes.
    const engine = new SyncEngine(db, async () => remote, { pollMs: 0, debounceMs: 50, trashDir: join(dir, 'trash3') });
    const seen: RemoteChange[] = [];
    engine.onRemoteChange((_pair, change) => seen.push(change));
    try {
      await engine.start();
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/Pushed' });
      await until(() => engine.store.pair(pair.id).lastSync !== null && engine.store.pair(pair.id).state === 'idle' && engine.remoteModes()[pair.id] === 'watch');
      // Outside the pair's folder: no run.
      writeFileSync(join(account, 'elsewhere.txt'), 'not ours');
      mkdirSync(join(account, 'Pushed', 'd'));
      writeFileSync(join(account, 'Pushed', 'd', 'p.txt'), 'pushed');
      await until(() => text(mine, 'd/p.txt') === 'pushed');
      expect(seen.length).toBeGreaterThan(0);
      expect(seen, JSON.stringify(seen)).toContainEqual({ path: '/d', by: 'watch' });
      // The pair's own write to the account folder is no remote change.
      const before = seen.length;
      writeFileSync(join(mine, 'up.txt'), 'uploaded');
      await until(() => text(account, 'Pushed', 'up.txt') === 'uploaded');
      await until(() => engine.store.pair(pair.id).state === 'idle');
      writeFileSync(join(account, 'Pushed', 'marker.txt'), 'after');
      await until(() => text(mine, 'marker.txt') === 'after');
      expect(seen.slice(before).map((c) => c.path)).not.toContain('/up.txt');
      expect(existsSync(join(mine, 'elsewhere.txt'))).toBe(false);
    } finally {
      await engine.close();
      db.close();
      await remote.close();
    }
  });

  it('an activity follower recording a change in the account makes its pairs look at once', async () => {
    const local = join(dir, 'app-local');
    mkdirSync(local);
    await webdav.mkdir('/Followed');
    // Pair walks once an hour: only the follower (polling every 300 ms) can bring the change soon.
    const app = await createApp({
      dataDir: join(dir, 'app-data'),
      defaultLocalFolder: false,
      sync: { pollMs: 3_600_000, debounceMs: 50, trashDir: join(dir, 'trash4') },
      activity: { followers: { pollIntervalMs: 300 } },
    });
    try {
      const account = (await app.accounts.connect({ service: 'webdav', options: davOptions() })).id;
      const seen: RemoteChange[] = [];
      app.sync.onRemoteChange((_pair, change) => seen.push(change));
      const pair = await app.sync.create({ localPath: local, account, remotePath: '/Followed' });
      await until(() => app.sync.store.pair(pair.id).lastSync !== null);
      // The user follows the account's activity (spec 3 subscription, the default one).
      const sub = await app.activity.subscriptions.implicit(account);
      await app.activity.followers.sync();
      // The follower's baseline is taken before the change.
      await app.activity.followers.pollNow(sub.id);
      const c = await app.accounts.storage(account);
      await put(c, '/Followed/f.txt', 'followed');
      await until(() => text(local, 'f.txt') === 'followed');
      expect(seen).toContainEqual({ path: '/f.txt', by: 'walk' });
    } finally {
      await app.close();
    }
  });
  // docs/sync.md, "Pairs": a run that failed is tried again on its own (walks only look for
  // remote changes, and a local change that failed to go up is not one).
  it('a run that failed because the server was down is tried again once it is back', async () => {
    const local = join(dir, 'retry-local');
    mkdirSync(local);
    await webdav.mkdir('/Retried');
    const db = syncDb();
    const engine = new SyncEngine(db, async () => webdav, { pollMs: 200, debounceMs: 50, retryMs: 300, trashDir: join(dir, 'trash5') });
    try {
      await engine.start();
      const pair = await engine.create({ localPath: local, account: 1, remotePath: '/Retried' });
      await until(() => engine.store.pair(pair.id).lastSync !== null && engine.store.pair(pair.id).state === 'idle');
      await server.kill();
      writeFileSync(join(local, 'while-down.txt'), 'written while the server was down');
      await until(() => engine.store.pair(pair.id).state === 'error');
      await server.restart();
      await until(() => engine.store.pair(pair.id).state === 'idle', 30_000);
      expect(await webdav.list('/Retried').then((l) => l.map((e) => e.name))).toContain('while-down.txt');
    } finally {
      await engine.close();
      db.close();
    }
  });
});
