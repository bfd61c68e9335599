/**
 * Golden tests of the spec 3 shapes: Activity v1 and v2 field tables, the list wrapper, the
 * legacy events shapes, and the event-bus / publish-subscribe / message-bus messages.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as ep from '../../src-main/rest/activity';
import { eventBusEvent, messageBusMessages, pubSubMessage, webhookBody } from '../../src-main/activity/notifications';
import { activityV1, activityV2 } from '../../src-main/rest/shapes/activity';
import type { ActivityRecord } from '../../src-main/activity/types';
import { scratchDir } from '../servers/util';
import { makeHarness, until, type Harness } from './helpers';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const V1_FIELDS = ['account', 'id', 'ip', 'metadata', 'modified', 'previous_metadata', 'subscription', 'type', 'user_id'];
const V2_FIELDS = ['account', 'actor', 'api', 'event_category', 'event_subtype', 'event_type', 'id', 'impersonate_for_target', 'metadata', 'previous_target', 'raw', 'session', 'target', 'timestamp', 'type'];

function record(accountId: number, over: Partial<ActivityRecord>): ActivityRecord {
  return {
    seq: 42,
    accountId,
    subscriptionId: 7,
    type: 'add',
    api: 'storage',
    kind: 'file',
    path: '/docs/new.txt',
    previousPath: null,
    metadata: { path: '/docs/new.txt', name: 'new.txt', kind: 'file', size: 5, modified: '2026-11-21T06:00:00.000Z', created: null, etag: 'e1' },
    previousMetadata: null,
    upstreamId: null,
    recordedAt: '2026-11-21T06:00:01.000Z',
    subtype: null,
    link: null,
    ...over,
  } as ActivityRecord;
}

describe('spec 3, Activity v1 and v2 from one stored record', () => {
  it('add: v1 metadata is the spec 1 file object; v2 is storage/add with a target', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'ser-1' } });
    const ctx = h.activity.serializeContext;
    const r = record(acc.id, {});
    const fileId = h.app.storage.idOf(acc.id, '/docs/new.txt');
    const docsId = h.app.storage.idOf(acc.id, '/docs');
    const v1 = activityV1(ctx, r);
    expect(Object.keys(v1).sort()).toEqual(V1_FIELDS);
    expect(v1).toEqual({
      id: 42,
      account: acc.id,
      subscription: 7,
      modified: '2026-11-21T06:00:01.000Z',
      type: 'add',
      ip: null,
      metadata: {
        id: fileId,
        name: 'new.txt',
        size: 5,
        created: null,
        modified: '2026-11-21T06:00:00.000Z',
        type: 'file',
        account: acc.id,
        parent: { id: docsId, name: 'docs' },
        ancestors: null,
        path: '/docs/new.txt',
        mime_type: 'text/plain',
        downloadable: true,
        // v1 file object (spec 3, Changes from v0 to v1: raw data moves to raw.object)
        raw_id: '/docs/new.txt',
        raw: { object: {} },
        api: 'storage',
      },
      previous_metadata: {},
      user_id: null,
    });
    const v2 = activityV2(ctx, r);
    expect(Object.keys(v2).sort()).toEqual(V2_FIELDS);
    expect(v2).toEqual({
      id: '42',
      account: acc.id,
      timestamp: '2026-11-21T06:00:01.000Z',
      type: 'activity',
      api: 'activity',
      event_category: 'storage',
      event_type: 'add',
      event_subtype: null,
      impersonate_for_target: null,
      session: { type: 'login', ip: null, user_agent: null },
      actor: { type: 'user', id: null, ids: {}, id_type: null, api: 'team', email: null, name: acc.account },
      target: { id: fileId, name: 'new.txt', path: '/docs/new.txt', parent: { id: docsId, name: 'docs' }, type: 'file', api: 'storage' },
      previous_target: null,
      metadata: null,
      raw: { object: { type: 'add', kind: 'file', path: '/docs/new.txt', previous_path: null, upstream_id: null } },
    });
  });

  it('rename / move / delete / restore / copy map to v2 types and subtypes; folders have folder fields', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'ser-2' } });
    const ctx = h.activity.serializeContext;
    const prev = { path: '/a/old', name: 'old', kind: 'folder' as const, size: null, modified: null, created: null };
    const cur = { path: '/b/new', name: 'new', kind: 'folder' as const, size: null, modified: null, created: null };
    const moved = record(acc.id, { type: 'move', kind: 'folder', path: '/b/new', previousPath: '/a/old', metadata: cur, previousMetadata: prev });
    const v1 = activityV1(ctx, moved);
    expect(v1.type).toBe('move');
    expect(v1.metadata).toMatchObject({ type: 'folder', path: '/b/new', can_create_folders: true, can_upload_files: true, can_list_recursively: true });
    expect(v1.metadata).not.toHaveProperty('mime_type');
    expect(v1.previous_metadata).toMatchObject({ type: 'folder', path: '/a/old', id: h.app.storage.idOf(acc.id, '/a/old') });
    const v2 = activityV2(ctx, moved);
    expect(v2).toMatchObject({ event_category: 'storage', event_type: 'update', event_subtype: 'move', target: { path: '/b/new', type: 'folder' }, previous_target: { path: '/a/old', type: 'folder' } });
    expect(activityV2(ctx, { ...moved, type: 'rename' })).toMatchObject({ event_type: 'update', event_subtype: 'rename' });
    expect(activityV2(ctx, { ...moved, type: 'copy' })).toMatchObject({ event_type: 'add', event_subtype: 'copy' });
    expect(activityV2(ctx, { ...moved, type: 'restore' })).toMatchObject({ event_type: 'update', event_subtype: 'untrash' });
    const del = record(acc.id, { type: 'delete', metadata: null, previousMetadata: prev, path: '/a/old', kind: 'folder' });
    expect(activityV1(ctx, del)).toMatchObject({ type: 'delete', metadata: null, previous_metadata: { path: '/a/old' } });
    expect(activityV2(ctx, del)).toMatchObject({ event_type: 'delete', event_subtype: null, target: { path: '/a/old' }, previous_target: null });
    expect(activityV1(ctx, record(acc.id, { upstreamId: 'up-9' })).id).toBe('up-9');
  });

  it('list wrapper and legacy events shapes', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'ser-3' } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    h.activity.log.append(sub.id, acc.id, [{ type: 'add', kind: 'file', path: '/x.txt', metadata: { path: '/x.txt', name: 'x.txt', kind: 'file', size: 1, modified: null, created: null } }]);
    const v2 = ep.listActivity(h.activity, acc.id, 'default', { page_size: '10' }, 2).body as Record<string, unknown>;
    expect(Object.keys(v2).sort()).toEqual(['api', 'count', 'cursor', 'objects', 'total', 'type']);
    expect(v2).toMatchObject({ count: 1, total: 1, type: 'object_list', api: 'activity', cursor: expect.any(String) });
    const events = (await ep.listEvents(h.activity, acc.id, {})).body as Record<string, unknown>;
    expect(events).toMatchObject({ count: 1, api: 'events', objects: [{ type: 'add', metadata: { name: 'x.txt' } }] });
    await h.activity.followers.pollNow(sub.id); // the follower's walk stores its upstream checkpoint
    expect((await ep.latestEvents(h.activity, acc.id)).body).toEqual({ cursor: v2.cursor, upstream_cursor: expect.stringMatching(/^walk:/), type: 'cursor', api: 'events' });
    expect(() => ep.listActivity(h!.activity, acc.id, 'default', { page_size: 'many' }, 2)).toThrow(/page_size/);
  });

  // spec 3, Endpoints, legacy events: "`cursor` is the latest cursor of the account,
  // `upstream_cursor` the upstream stream cursor; either may be the `cursor` parameter."
  it('/events/latest: both its cursor and its upstream_cursor are accepted as `cursor`', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'ser-4' } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    const add = (path: string) => h!.activity.log.append(sub.id, acc.id, [{ type: 'add', kind: 'file', path, metadata: { path, name: path.slice(1), kind: 'file', size: 1, modified: null, created: null } }]);
    add('/before.txt');
    await new Promise((r) => setTimeout(r, 5));
    await h.activity.followers.pollNow(sub.id); // the walk commits its upstream checkpoint
    const latest = (await ep.latestEvents(h.activity, acc.id)).body as { cursor: string; upstream_cursor: string };
    await new Promise((r) => setTimeout(r, 5));
    add('/after.txt');
    for (const cursor of [latest.cursor, latest.upstream_cursor]) {
      const events = (await ep.listEvents(h.activity, acc.id, { cursor })).body as { objects: { metadata: { name: string } }[] };
      expect(events.objects.map((o) => o.metadata.name)).toEqual(['after.txt']);
      const v1 = ep.listActivity(h.activity, acc.id, 'default', { cursor }, 1).body as { objects: { metadata: { name: string } }[] };
      expect(v1.objects.map((o) => o.metadata.name)).toEqual(['after.txt']);
    }
    await expect(ep.listEvents(h.activity, acc.id, { cursor: 'walk:yesterday' })).rejects.toThrow(/cursor/);
    // A day that does not exist is no checkpoint (a date parser rolls Feb 31 over to Mar 2).
    await expect(ep.listEvents(h.activity, acc.id, { cursor: 'walk:2020-02-31T00:00:00.000Z' })).rejects.toThrow(/cursor/);
  });
});

describe('spec 3, Legacy events endpoints: one implicit subscription per account', () => {
  it('reading /events of an account without a subscription starts monitoring it', async () => {
    h = await makeHarness({ followers: { pollIntervalMs: 100 } });
    const root = scratchDir('implicit-events');
    const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
    expect(h.activity.subscriptions.list(acc.id)).toEqual([]);
    const first = (await ep.listEvents(h.activity, acc.id, {})).body as { objects: unknown[]; cursor: string | null };
    expect(first.objects).toEqual([]);
    expect(h.activity.subscriptions.list(acc.id)).toMatchObject([{ subscriptionType: 'changes', isDefault: true, active: true }]);
    const sub = h.activity.subscriptions.list(acc.id)[0]!;
    await until(() => h!.activity.followers.status().find((s) => s.subscription === sub.id && s.lastRunAt !== null), 10_000, 'follower ready');
    writeFileSync(join(root, 'new.txt'), 'x');
    const seen = await until(() => {
      const page = h!.activity.log.list(acc.id, null, {});
      return page.records.find((r) => r.path === '/new.txt');
    }, 10_000, 'event');
    expect(seen.type).toBe('add');
    const events = (await ep.listEvents(h.activity, acc.id, {})).body as { objects: { type: string; metadata: { name: string } }[]; api: string };
    expect(events.objects.map((o) => [o.type, o.metadata.name])).toContainEqual(['add', 'new.txt']);
    expect(h.activity.subscriptions.list(acc.id)).toHaveLength(1); // never a second
    rmSync(root, { recursive: true, force: true });
  });
});

describe('spec 3, notification message shapes', () => {
  const v1 = [{ id: 1, account: 3, subscription: 9, type: 'add' }, { id: 2, account: 3, subscription: 9, type: 'delete' }];

  it('JSON webhook body', () => {
    expect(JSON.stringify(webhookBody(3, 9))).toBe('{"account":3,"subscription":9}');
  });

  it('event-bus event: detail-type, partner source, detail.activity.v1', () => {
    const e = eventBusEvent({ namespace: 'aws.partner/tributary.app', partnerId: 'p1', apiId: 'api7', cloudAccount: '123456789012', region: 'eu-west-1' }, 3, 9, v1, new Date('2026-11-21T06:00:00Z'));
    expect(e).toEqual({
      'detail-type': 'eventbus_webhook_notification',
      source: 'aws.partner/tributary.app/p1/api7',
      account: '123456789012',
      time: '2026-11-21T06:00:00.000Z',
      region: 'eu-west-1',
      detail: { account: 3, subscription: 9, activity: { v1 } },
    });
  });

  it('publish/subscribe message', () => {
    expect(pubSubMessage(3, 9, v1)).toEqual({ account: 3, subscription: 9, activity: { v1 } });
  });

  it('message-bus: same body, SessionId = subscription id, accountId and v1ActivityType properties', () => {
    const m = messageBusMessages(3, 9, v1);
    expect(m).toEqual([
      { body: { account: 3, subscription: 9, activity: { v1: [v1[0]] } }, contentType: 'application/json', sessionId: '9', applicationProperties: { accountId: 3, v1ActivityType: 'add' } },
      { body: { account: 3, subscription: 9, activity: { v1: [v1[1]] } }, contentType: 'application/json', sessionId: '9', applicationProperties: { accountId: 3, v1ActivityType: 'delete' } },
    ]);
  });
});
