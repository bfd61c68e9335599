/**
 * spec 3, Activity v1/v2 from the local follower: files created, modified, renamed, moved and
 * deleted from outside the app (plain fs calls) show up as the right activity — through the
 * connector's file-system watch, and through the polling walker.
 */
import { appendFileSync, mkdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as ep from '../../src-main/rest/activity';
import { scratchDir } from '../servers/util';
import { makeHarness, until, type Harness } from './helpers';

let h: Harness | undefined;
let root: string | undefined;
afterEach(async () => {
  await h?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  h = undefined;
  root = undefined;
});

type V1 = { type: string; metadata: { path: string; type: string } | null; previous_metadata: { path?: string } };
type V2 = { event_type: string; event_subtype: string | null; target: { path: string }; previous_target: { path: string } | null };

async function scenario(mode: 'watch' | 'poll') {
  root = scratchDir('activity-local');
  h = await makeHarness({ followers: { pollIntervalMs: 200, forcePolling: mode === 'poll' } });
  writeFileSync(join(root, 'existing.txt'), 'before the subscription');
  const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  await until(() => h!.activity.followers.status().find((s) => s.subscription === sub.id && s.lastRunAt !== null && (mode === 'poll' || s.mode === 'watching')), 10_000, 'follower ready');
  let cursor: string | undefined = 'after-auth';
  const v1: V1[] = [];
  const v2: V2[] = [];
  /** Reads new activity (v1 and v2 at the same cursor) until `pred` holds. */
  const waitFor = async (pred: (items: V1[]) => boolean, what: string) => {
    await until(() => {
      const a = ep.listActivity(h!.activity, acc.id, 'default', { cursor }, 1).body as { objects: V1[]; cursor: string };
      const b = ep.listActivity(h!.activity, acc.id, 'default', { cursor }, 2).body as { objects: V2[]; cursor: string };
      v1.push(...a.objects);
      v2.push(...b.objects.slice(0, a.objects.length));
      if (a.objects.length) cursor = a.cursor;
      return pred(v1) || undefined;
    }, 10_000, what);
  };
  const has = (type: string, path: string) => (items: V1[]) => items.some((i) => i.type === type && (i.metadata?.path ?? i.previous_metadata.path) === path);

  writeFileSync(join(root, 'a.txt'), 'hello');
  await waitFor(has('add', '/a.txt'), 'add');
  await new Promise((r) => setTimeout(r, 1100)); // a later mtime for the poller's change tag
  appendFileSync(join(root, 'a.txt'), ' world');
  await waitFor(has('update', '/a.txt'), 'update');
  renameSync(join(root, 'a.txt'), join(root, 'b.txt'));
  await waitFor(has('rename', '/b.txt'), 'rename');
  mkdirSync(join(root, 'sub'));
  await waitFor(has('add', '/sub'), 'folder add');
  renameSync(join(root, 'b.txt'), join(root, 'sub', 'b.txt'));
  await waitFor(has('move', '/sub/b.txt'), 'move');
  unlinkSync(join(root, 'sub', 'b.txt'));
  await waitFor(has('delete', '/sub/b.txt'), 'delete');

  // No delete+add pair stood in for the rename or the move, and nothing about the file that
  // existed before the subscription.
  expect(v1.filter((i) => i.type === 'delete').map((i) => i.previous_metadata.path)).toEqual(['/sub/b.txt']);
  expect(v1.filter((i) => i.type === 'add').map((i) => i.metadata!.path)).toEqual(['/a.txt', '/sub']);
  const rename = v1.find((i) => i.type === 'rename')!;
  expect(rename.previous_metadata.path).toBe('/a.txt');
  expect(rename.metadata).toMatchObject({ type: 'file', path: '/b.txt' });
  const move = v1.find((i) => i.type === 'move')!;
  expect(move.previous_metadata.path).toBe('/b.txt');
  const v2By = (subtype: string | null, type: string) => v2.find((i) => i.event_type === type && i.event_subtype === subtype);
  expect(v2By('rename', 'update')).toMatchObject({ target: { path: '/b.txt' }, previous_target: { path: '/a.txt' } });
  expect(v2By('move', 'update')).toMatchObject({ target: { path: '/sub/b.txt' }, previous_target: { path: '/b.txt' } });
  expect(v2By(null, 'delete')).toMatchObject({ target: { path: '/sub/b.txt' } });
  expect(v2By(null, 'add')).toMatchObject({ target: { path: '/a.txt' } });
  expect(v2By(null, 'update')).toMatchObject({ target: { path: '/a.txt' } });
  return v1;
}

describe('spec 3, Activity: local follower', () => {
  it('local watch: create/modify/rename/move/delete → add/update/rename/move/delete (v1 and v2)', async () => {
    await scenario('watch');
  }, 60_000);

  it('polling walker on local: the same sequence, renames paired by content tag', async () => {
    await scenario('poll');
  }, 60_000);

  it('crawl publishes add for everything once', async () => {
    root = scratchDir('activity-crawl');
    mkdirSync(join(root, 'd1/d2'), { recursive: true });
    for (const f of ['x.txt', 'd1/y.txt', 'd1/d2/z.txt']) writeFileSync(join(root, f), f);
    h = await makeHarness({ followers: { pollIntervalMs: 200 } });
    const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
    const sub = await h.activity.subscriptions.create(acc.id, { subscriptionType: 'crawl' });
    await until(() => h!.activity.subscriptions.get(acc.id, sub.id).crawlDone || undefined, 10_000, 'crawl');
    const page = h.activity.log.list(acc.id, sub.id, {});
    expect(page.records.map((r) => `${r.type} ${r.path}`).sort()).toEqual(['add /d1', 'add /d1/d2', 'add /d1/d2/z.txt', 'add /d1/y.txt', 'add /x.txt']);
    expect(h.activity.followers.status().find((s) => s.subscription === sub.id)?.mode).toBe('done');
  });
});

describe('spec 3, Subscription: active false → nothing monitored', () => {
  it('changes made while paused are not reported after resume; later ones are', async () => {
    root = scratchDir('activity-pause');
    h = await makeHarness({ followers: { pollIntervalMs: 3600_000, forcePolling: true } });
    const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id);
    h.activity.subscriptions.update(acc.id, sub.id, { active: false });
    await h.activity.followers.sync();
    expect(h.activity.followers.status()).toEqual([]);
    writeFileSync(join(root, 'while-paused.txt'), 'x');
    h.activity.subscriptions.update(acc.id, sub.id, { active: true });
    await h.activity.followers.sync();
    await h.activity.followers.pollNow(sub.id);
    writeFileSync(join(root, 'after.txt'), 'y');
    await h.activity.followers.pollNow(sub.id);
    expect(h.activity.log.list(acc.id, sub.id, {}).records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /after.txt']);
  });
});

describe('followers follow account changes', () => {
  it('a new connector instance (account settings changed) gets a new watch; a deleted account stops its follower', async () => {
    root = scratchDir('activity-reconnect');
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await until(() => h!.activity.followers.status().find((s) => s.mode === 'watching'), 10_000, 'watching');
    await h.app.accounts.update(acc.id, { account: 'Renamed' }); // releases the connector instance
    await h.activity.followers.sync();
    await until(() => h!.activity.followers.status().find((s) => s.mode === 'watching'), 10_000, 'watching again');
    writeFileSync(join(root, 'after-rename.txt'), 'x');
    await until(() => h!.activity.log.list(acc.id, sub.id, {}).records.find((r) => r.path === '/after-rename.txt'), 10_000, 'activity after reconnect');
    await h.app.accounts.delete(acc.id);
    await until(() => (h!.activity.followers.status().length === 0 ? true : undefined), 10_000, 'follower stopped');
    expect(h.app.db.prepare('SELECT COUNT(*) AS n FROM activity').get()).toEqual({ n: 0 });
  });
});

describe('spec 3, Activity: a folder renamed with its contents is one rename, not deletes and adds', () => {
  for (const mode of ['watch', 'poll'] as const) {
    it(`${mode}`, async () => {
      root = scratchDir(`activity-folder-${mode}`);
      mkdirSync(join(root, 'album/inner'), { recursive: true });
      for (const f of ['album/1.jpg', 'album/2.jpg', 'album/inner/3.jpg']) writeFileSync(join(root, f), f);
      h = await makeHarness({ followers: { pollIntervalMs: 3600_000, forcePolling: mode === 'poll' } });
      const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
      const sub = await h.activity.subscriptions.create(acc.id, {});
      await until(() => h!.activity.followers.status().find((s) => s.lastRunAt && (mode === 'poll' || s.mode === 'watching')), 10_000, 'ready');
      renameSync(join(root, 'album'), join(root, 'photos'));
      if (mode === 'poll') await h.activity.followers.pollNow(sub.id);
      const records = await until(() => {
        const r = h!.activity.log.list(acc.id, sub.id, {}).records;
        return r.length ? r : undefined;
      }, 10_000, 'rename');
      await new Promise((r) => setTimeout(r, 500)); // anything else the watcher reports would land now
      const all = h.activity.log.list(acc.id, sub.id, {}).records.map((r) => `${r.type} ${r.previousPath ?? ''}→${r.path}`);
      expect(records[0]!.kind).toBe('folder');
      expect(all).toEqual(['rename /album→/photos']);
      // The new names of the contents are known: a later edit is an update at the new path.
      await new Promise((r) => setTimeout(r, 1100));
      appendFileSync(join(root, 'photos/inner/3.jpg'), '!');
      if (mode === 'poll') await h.activity.followers.pollNow(sub.id);
      await until(() => h!.activity.log.list(acc.id, sub.id, {}).records.find((r) => r.type === 'update' && r.path === '/photos/inner/3.jpg'), 10_000, 'update at new path');
    }, 30_000);
  }
});
