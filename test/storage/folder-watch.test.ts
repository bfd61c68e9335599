// Live folders in the main process (services/folder-watch.ts) over real backends: an open
// folder of Apache WebDAV is polled and a change outside Tributary publishes files.changed for
// exactly that folder (with the cache updated); a follower's record checks it at once; the local
// folder is watched instead of polled, and listed once more when its watch starts; a lease that
// is not renewed ends.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { EventPayload } from '../../src-main/contract';
import { FolderWatch, LEASE_MS } from '../../src-main/services/folder-watch';
import { SETTING_FOLDER_POLL_SECONDS } from '../../src-main/services/settings-keys';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';

let apache: ApacheServer;
let app: App;
let dav: number;
let local: number;
const home = scratchDir('folder-watch-home');
const changed: EventPayload<'files.changed'>[] = [];

beforeAll(async () => {
  apache = await startApache();
  app = await createApp({ dataDir: scratchDir('folder-watch-data'), defaultLocalFolder: home });
  local = app.accounts.list()[0].id;
  const u = new URL(apache.url);
  dav = (await app.accounts.connect({ service: 'webdav', options: { protocol: 'http', host: u.hostname, port: Number(u.port), path: u.pathname, username: apache.user, password: apache.password } })).id;
  app.events.on('files.changed', (p) => changed.push(p));
}, 60_000);
afterAll(async () => {
  await app?.close();
  await apache?.stop();
});

const seen = (account: number, folder: string) => changed.some((c) => c.account === account && c.folder === folder);

describe('open folders are kept current (spec 1, List a folder)', () => {
  it('WebDAV: a file another client wrote shows as files.changed of that folder, with the cache updated', async () => {
    app.settings.set(SETTING_FOLDER_POLL_SECONDS, 1);
    await app.storage.list(dav, 'root');
    await app.folderWatch.watch(dav, '/');
    expect(app.folderWatch.open()).toContainEqual({ account: dav, path: '/', by: 'poll' });
    changed.length = 0;
    writeFileSync(join(apache.root, 'elsewhere.txt'), 'x');
    await expect.poll(() => seen(dav, 'root'), { timeout: 10_000 }).toBe(true);
    expect(changed.filter((c) => c.account === dav).map((c) => c.folder)).toEqual(['root']);
    expect(app.storage.listCached(dav, 'root')!.items.map((i) => i.name)).toContain('elsewhere.txt');
  });

  it('a follower that recorded activity of the account has its open folders checked at once', async () => {
    app.settings.set(SETTING_FOLDER_POLL_SECONDS, 3600);
    await app.storage.list(dav, 'root');
    changed.length = 0;
    writeFileSync(join(apache.root, 'followed.txt'), 'y');
    // What ActivityService publishes when a follower appended changes of this account.
    app.events.emit('activity.appended', { account: dav, subscription: 1, count: 1, cursor: 'c' });
    await expect.poll(() => seen(dav, 'root'), { timeout: 10_000 }).toBe(true);
  });

  it('the local folder: what changed between its listing and the start of the watch shows once the watch has started', async () => {
    // A FolderWatch of its own, so that no watch of the account runs before this one.
    const watch = new FolderWatch(app);
    try {
      await app.storage.list(local, 'root');
      writeFileSync(join(home, 'before the watch.txt'), 'w');
      changed.length = 0;
      await watch.watch(local, '/');
      await expect.poll(() => watch.open(), { timeout: 10_000 }).toContainEqual({ account: local, path: '/', by: 'watch' });
      await expect.poll(() => seen(local, 'root'), { timeout: 10_000 }).toBe(true);
      expect(app.storage.listCached(local, 'root')!.items.map((i) => i.name)).toContain('before the watch.txt');
    } finally {
      await watch.close();
    }
  });

  it('the local folder is watched, not polled: a file written on disk shows at once', async () => {
    await app.storage.list(local, 'root');
    await app.folderWatch.watch(local, '/');
    // Polled until the watcher has read the tree, watched from then on.
    await expect.poll(() => app.folderWatch.open(), { timeout: 10_000 }).toContainEqual({ account: local, path: '/', by: 'watch' });
    changed.length = 0;
    writeFileSync(join(home, 'on disk.txt'), 'z');
    await expect.poll(() => seen(local, 'root'), { timeout: 10_000 }).toBe(true);
  });

  it('a lease that is not renewed ends', async () => {
    let now = 1_000_000;
    const watch = new FolderWatch(app, () => now);
    try {
      await watch.watch(dav, '/');
      expect(watch.open()).toHaveLength(1);
      now += LEASE_MS + 1;
      await expect.poll(() => watch.open().length, { timeout: 5_000 }).toBe(0);
    } finally {
      await watch.close();
    }
  });
});
