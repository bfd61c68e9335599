/**
 * spec 3 (Activity, Subscriptions, legacy events) over REST in v1 and v2, against a local
 * storage account whose folder is written to from outside; plus webhook management under
 * /v2/webhooks (a Tributary extension) with a real HTTP receiver, and the v2 OpenAPI document.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import { Normaliser } from './golden';
import { importLocal, isErrorBody, startRest, type CallResult, type RestServer } from './harness';

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectError(res: CallResult, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(isErrorBody(res.json, status), res.text).toBe(true);
  expect(res.json.error_code).toBe(code);
}

const SUBSCRIPTION_KEYS = [
  'account', 'active', 'api', 'crawl_type', 'created', 'default', 'disable_reason', 'expiry', 'id', 'modified',
  'monitored_resource_api', 'monitored_resource_object_type', 'monitored_resources', 'subscription_type', 'type',
];

describe('REST activity API v1/v2 on a local account (spec 3)', () => {
  let s: RestServer;
  let acc: { id: number; token: string; folder: string };
  let other: { id: number; token: string; folder: string };
  let sub: number;

  beforeAll(async () => {
    s = await startRest();
    acc = await importLocal(s, 'watched');
    other = await importLocal(s, 'other');
  });
  afterAll(async () => {
    await s?.stop();
  });

  const p = (v: string, rest: string, account = acc.id) => `/${v}/accounts/${account}/${rest}`;

  // spec 3, Subscriptions: create, one per account, `default`, list, get
  it('creates the subscription, refuses a second, and resolves `default`', async () => {
    const created = await s.call('POST', p('v1', 'subscriptions'), { body: { active: true, subscription_type: 'changes' } });
    expect(created.status, created.text).toBe(201);
    sub = created.json.id;
    const n = new Normaliser();
    expect(n.value(created.json)).toEqual({
      id: sub,
      account: acc.id,
      expiry: '<timestamp>',
      active: true,
      disable_reason: '',
      default: false, // spec 3, Subscription: "Default false"
      monitored_resources: [{ resource: 'root' }],
      monitored_resource_api: 'storage',
      monitored_resource_object_type: 'folder',
      subscription_type: 'changes',
      crawl_type: 'external',
      created: '<timestamp>',
      modified: '<timestamp>',
      last_cursor: created.json.last_cursor,
      last_cursor_updated_at: created.json.last_cursor_updated_at === null ? null : '<timestamp>',
      type: 'subscription',
      api: 'activity',
    });
    expectError(await s.call('POST', p('v2', 'subscriptions'), { body: {} }), 409, 'conflict');
    expectError(await s.call('POST', p('v1', 'subscriptions', other.id), { body: { subscription_type: 'analytics' } }), 400, 'invalid_parameters');

    const list = await s.call('GET', p('v2', 'subscriptions'));
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ total: 1, count: 1, type: 'object_list', api: 'activity' });
    expect(Object.keys(list.json.objects[0]).sort()).toEqual(SUBSCRIPTION_KEYS);
    const byDefault = await s.call('GET', p('v2', 'subscriptions/default'), { auth: `Bearer ${acc.token}` });
    expect(byDefault.status).toBe(200);
    expect(byDefault.json.id).toBe(sub);
    // v2 adds last_activity and upstream_checkpoint (they replace /events/latest).
    expect(Object.keys(byDefault.json)).toEqual(expect.arrayContaining(['last_cursor', 'last_activity', 'upstream_checkpoint']));
    const v1 = await s.call('GET', `/v1/accounts/me/subscriptions/${sub}`, { auth: `Bearer ${acc.token}` });
    expect(v1.json.id).toBe(sub);
    expect(v1.json).not.toHaveProperty('last_activity');
    expectError(await s.call('GET', p('v1', 'subscriptions/default', other.id)), 404, 'not_found');
    expectError(await s.call('GET', p('v1', 'subscriptions/nope')), 404, 'not_found');
    expectError(await s.call('GET', p('v1', `subscriptions/${sub}`, other.id), { auth: `Bearer ${acc.token}` }), 403, 'forbidden');
    expectError(await s.call('GET', p('v0', 'subscriptions')), 404, 'not_found');
  });

  // spec 3, States and transitions: PATCH active false → deactivated_by_user
  it('deactivates and reactivates with PATCH', async () => {
    const off = await s.call('PATCH', p('v2', 'subscriptions/default'), { body: { active: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.json).toMatchObject({ active: false, disable_reason: 'deactivated_by_user' });
    expectError(await s.call('PATCH', p('v1', `subscriptions/${sub}`), { body: { active: 'maybe' } }), 400, 'invalid_parameters');
    // Booleans as everywhere in this API: true/True/1.
    const on = await s.call('PATCH', p('v1', `subscriptions/${sub}`), { body: { active: 'True' } });
    expect(on.status, on.text).toBe(200);
    expect(on.json).toMatchObject({ active: true, disable_reason: '' });
  });

  // spec 3, Activity list: cursor paging in v1 and v2
  it('shows files written into the folder as `add`, paged with the cursor in v1 and v2', async () => {
    // Wait for the follower to watch before writing, so the files are changes, not the baseline.
    await until('an active follower', async () => (s.app.activity.followers.status().some((f) => f.subscription === sub && f.mode === 'watching') ? true : undefined));
    for (const name of ['a.txt', 'b.txt', 'c.txt']) writeFileSync(join(acc.folder, name), `content of ${name}\n`);
    const all = await until('three adds', async () => {
      const r = await s.call('GET', p('v2', `subscriptions/${sub}/activity`));
      expect(r.status, r.text).toBe(200);
      const names = new Set(r.json.objects.filter((o: any) => o.event_type === 'add').map((o: any) => o.target?.name));
      return ['a.txt', 'b.txt', 'c.txt'].every((n) => names.has(n)) ? r : undefined;
    });
    expect(all.json).toMatchObject({ type: 'object_list', api: 'activity' });
    expect(typeof all.json.cursor).toBe('string');
    expect(all.json.count).toBe(all.json.objects.length);
    const add = all.json.objects.find((o: any) => o.target?.name === 'a.txt');
    expect(add).toMatchObject({ type: 'activity', api: 'activity', account: acc.id, event_category: 'storage', event_type: 'add', target: { name: 'a.txt', type: 'file', api: 'storage' } });

    // v1, one at a time: every record once, then an empty page at the end.
    const seen: any[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) {
      const r = await s.call('GET', p('v1', `subscriptions/default/activity?page_size=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
      expect(r.status, r.text).toBe(200);
      expect(r.json.count).toBeLessThanOrEqual(1);
      cursor = r.json.cursor;
      if (!r.json.objects.length) break;
      seen.push(...r.json.objects);
    }
    expect(seen.length).toBe(all.json.objects.length);
    const v1Add = seen.find((o) => o.metadata?.name === 'a.txt');
    expect(v1Add).toMatchObject({ account: acc.id, subscription: sub, type: 'add', metadata: { name: 'a.txt', type: 'file' } });
    expect(Object.keys(v1Add).sort()).toEqual(['account', 'id', 'ip', 'metadata', 'modified', 'previous_metadata', 'subscription', 'type', 'user_id']);
    // The subscription's last_cursor is usable as `cursor`.
    const after = await s.call('GET', p('v1', `subscriptions/${sub}/activity?cursor=${encodeURIComponent(cursor!)}`));
    expect(after.json.objects).toEqual([]);
    expect((await s.call('GET', p('v2', `subscriptions/${sub}/activity?cursor=after-auth`))).json.objects.length).toBe(all.json.objects.length);
    // A new file after the cursor is the only news.
    writeFileSync(join(acc.folder, 'd.txt'), 'd\n');
    const news = await until('the next add', async () => {
      const r = await s.call('GET', p('v2', `subscriptions/${sub}/activity?cursor=${encodeURIComponent(cursor!)}`));
      return r.json.objects.length ? r : undefined;
    });
    expect(news.json.objects.map((o: any) => o.target?.name)).toContain('d.txt');
    expect(news.json.objects.every((o: any) => o.target?.name === 'd.txt')).toBe(true);
  });

  // spec 3, Activity list query rules; docs/rest.md Errors
  it('answers invalid_parameters for bad page sizes, dates and cursors', async () => {
    const a = `subscriptions/${sub}/activity`;
    for (const q of ['page_size=0', 'page_size=1001', 'page_size=x', 'from=not-a-date', 'until=2024-01-01T00:00:00Z', 'cursor=garbage', 'cursor=after-auth&from=2024-01-01T00:00:00Z']) {
      expectError(await s.call('GET', p('v1', `${a}?${q}`)), 400, 'invalid_parameters');
      expectError(await s.call('GET', p('v2', `${a}?${q}`)), 400, 'invalid_parameters');
    }
    expectError(await s.call('GET', p('v1', 'events?page_size=1001')), 400, 'invalid_parameters');
    // A cursor of another account is no cursor here.
    const mine = await s.call('GET', p('v1', `${a}`));
    await s.call('POST', p('v1', 'subscriptions', other.id), { body: {} });
    expectError(await s.call('GET', p('v1', `subscriptions/default/activity?cursor=${encodeURIComponent(mine.json.cursor)}`, other.id)), 400, 'invalid_parameters');
    const ranged = await s.call('GET', p('v2', `${a}?from=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z`));
    expect(ranged.status, ranged.text).toBe(200);
    expect(ranged.json.objects.length).toBeGreaterThan(0);
  });

  // spec 3, Activity `from`/`until` are ISO 8601; docs/rest.md, Activity ("a bad date … 400") and
  // The three versions (times are ISO 8601 date-times or dates, years 0000–9999)
  it('answers invalid_parameters naming the parameter for `from`/`until` that are not ISO 8601 times', async () => {
    const a = `subscriptions/${sub}/activity`;
    for (const [q, name] of [
      ['from=1', 'from'],
      ['from=March%207', 'from'],
      ['from=2024-02-30T00:00:00Z', 'from'],
      ['from=%2B275760-09-13T00:00:00.000Z', 'from'],
      ['from=2024-01-01T00:00:00Z&until=2100', 'until'],
    ]) {
      for (const v of ['v1', 'v2']) {
        const r = await s.call('GET', p(v, `${a}?${q}`));
        expectError(r, 400, 'invalid_parameters');
        expect(r.json.message, q).toContain(`\`${name}\``);
      }
    }
    for (const q of ['from=2000-01-01', 'from=2000-01-01T00:00:00.000000%2B01:00&until=2100-01-01T00:00:00-0130']) {
      const r = await s.call('GET', p('v2', `${a}?${q}`));
      expect(r.status, `${q}: ${r.text}`).toBe(200);
      expect(r.json.objects.length).toBeGreaterThan(0);
    }
  });

  // spec 3, Legacy events endpoints (v1 only)
  it('serves /events and /events/latest in v1', async () => {
    const events = await s.call('GET', p('v1', 'events?page_size=2'));
    expect(events.status, events.text).toBe(200);
    expect(events.json).toMatchObject({ type: 'object_list', api: 'events', count: 2 });
    const latest = await s.call('GET', p('v1', 'events/latest'));
    expect(latest.status).toBe(200);
    expect(Object.keys(latest.json).sort()).toEqual(['api', 'cursor', 'type', 'upstream_cursor']);
    expect(latest.json).toMatchObject({ type: 'cursor', api: 'events' });
    const rest = await s.call('GET', p('v1', `events?cursor=${encodeURIComponent(latest.json.cursor)}`));
    expect(rest.json.objects).toEqual([]);
    expectError(await s.call('GET', p('v2', 'events/latest')), 404, 'not_found');
  });

  // spec 3, Subscriptions: DELETE removes the subscription and its activity
  it('deletes the subscription', async () => {
    expect((await s.call('DELETE', p('v2', 'subscriptions/default'))).status).toBe(204);
    expectError(await s.call('GET', p('v2', `subscriptions/${sub}`)), 404, 'not_found');
    expectError(await s.call('GET', p('v1', `subscriptions/${sub}/activity`)), 404, 'not_found');
    expect((await s.call('GET', p('v1', 'subscriptions'))).json).toMatchObject({ total: 0, objects: [] });
  });

  // docs/rest.md, Activity: storage `monitored_resources` are folder ids or `root`, anything else is
  // 400 invalid_parameters; a well-formed id that names nothing in the account stays 404, as in
  // docs/rest.md, Ids in request bodies
  it('refuses monitored resources that cannot be folder ids with 400, and creates nothing', async () => {
    for (const resource of ['garbage', '../../etc', '/etc/passwd', 'trash', 'ephemeral', 'x'.repeat(9000)]) {
      for (const v of ['v1', 'v2']) {
        const r = await s.call('POST', p(v, 'subscriptions'), { body: { monitored_resources: [{ resource }] } });
        expectError(r, 400, 'invalid_parameters');
        expect(r.text.length).toBeLessThan(1000);
      }
    }
    expectError(await s.call('POST', p('v1', 'subscriptions'), { body: { monitored_resources: ['../../etc'] } }), 400, 'invalid_parameters');
    const elsewhere = await s.call('POST', p('v2', 'storage/folders', other.id), { body: { parent_id: 'root', name: 'elsewhere' } });
    expect(elsewhere.status, elsewhere.text).toBe(201);
    expectError(await s.call('POST', p('v2', 'subscriptions'), { body: { monitored_resources: [{ resource: elsewhere.json.id }] } }), 404, 'not_found');
    expect((await s.call('GET', p('v2', 'subscriptions'))).json).toMatchObject({ total: 0, objects: [] });
  });
});

describe('REST webhook management /v2/webhooks (spec 3, JSON webhook; Tributary extension)', () => {
  let s: RestServer;
  let receiver: Server;
  let url: string;
  let answer = '';

  beforeAll(async () => {
    s = await startRest();
    // The receiver is on loopback, which webhooks reach only when allowed.
    s.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
    answer = s.app.activity.webhooks.applicationId();
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(req.url === '/wrong' ? 'not the id' : answer);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await s?.stop();
    await new Promise((r) => receiver?.close(r));
  });

  it('creates (after the receiver test), lists, shows attempts of and deletes webhooks; API key only', async () => {
    const acc = await importLocal(s, 'hooked');
    expectError(await s.call('GET', '/v2/webhooks', { auth: `Bearer ${acc.token}` }), 403, 'forbidden');
    expectError(await s.call('POST', '/v2/webhooks', { body: { url: `${url}/wrong` } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', '/v2/webhooks', { body: { url: 'ftp://x' } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', '/v2/webhooks', { body: {} }), 400, 'invalid_parameters');
    // spec 3, Legacy webhooks: from v2 on only JSON payload webhooks
    expectError(await s.call('POST', '/v2/webhooks', { body: { url: `${url}/hook`, format: 'form' } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', '/v2/webhooks', { body: { url: `${url}/hook`, account: 999 } }), 404, 'not_found');
    const created = await s.call('POST', '/v2/webhooks', { body: { url: `${url}/hook`, account: acc.id } });
    expect(created.status, created.text).toBe(201);
    expect(new Normaliser().value(created.json)).toEqual({ id: created.json.id, url: `${url}/hook`, format: 'json', account: acc.id, failing_since: null, paused: false, created: '<timestamp>', type: 'webhook', api: 'activity' });
    const list = await s.call('GET', '/v2/webhooks');
    expect(list.json).toMatchObject({ total: 1, count: 1, type: 'object_list', api: 'activity' });
    expect(list.json.objects).toEqual([created.json]);
    expect((await s.call('GET', `/v2/webhooks/${created.json.id}`)).json).toEqual(created.json);
    const attempts = await s.call('GET', `/v2/webhooks/${created.json.id}/attempts`);
    expect(attempts.status).toBe(200);
    expect(attempts.json.objects).toHaveLength(1);
    expect(attempts.json.objects[0]).toMatchObject({ webhook: created.json.id, kind: 'test', status: 200, ok: true, type: 'webhook_attempt' });
    expect((await s.call('DELETE', `/v2/webhooks/${created.json.id}`)).status).toBe(204);
    expectError(await s.call('GET', `/v2/webhooks/${created.json.id}`), 404, 'not_found');
    expectError(await s.call('GET', '/v2/webhooks/abc'), 404, 'not_found');
    expectError(await s.call('GET', '/v1/webhooks'), 404, 'not_found');
  });

  // docs/rest.md, Webhooks: `url` is at most 2048 characters and carries no user name or password
  // (docs/activity.md, Webhooks: receivers authenticate notifications by X-Service-Signature)
  it('refuses a URL over 2048 characters or with credentials, so no list carries either', async () => {
    const at2048 = `${url}/${'a'.repeat(2048 - url.length - 1)}`;
    for (const long of [`${at2048}b`, `${url}/${'a'.repeat(8000)}`, `${url}/${'a'.repeat(1_000_000)}`]) {
      const r = await s.call('POST', '/v2/webhooks', { body: { url: long } });
      expectError(r, 400, 'invalid_parameters');
      expect(r.json.message).toContain('2048');
    }
    const host = new URL(url).host;
    for (const withUser of [`http://user:secret@${host}/hook`, `http://user@${host}/hook`, `http://:secret@${host}/hook`]) {
      const r = await s.call('POST', '/v2/webhooks', { body: { url: withUser } });
      expectError(r, 400, 'invalid_parameters');
      expect(r.json.message).toContain('X-Service-Signature');
      expect(r.text).not.toContain('secret');
    }
    const longest = await s.call('POST', '/v2/webhooks', { body: { url: at2048 } });
    expect(longest.status, longest.text).toBe(201);
    const list = await s.call('GET', '/v2/webhooks');
    expect(list.json.objects.map((w: { url: string }) => w.url)).toEqual([at2048]);
    expect((await s.call('DELETE', `/v2/webhooks/${longest.json.id}`)).status).toBe(204);
  });

  // spec 3 routes in the generated OpenAPI document
  it('lists the new v2 routes in /v2/openapi.json', async () => {
    const doc = await s.call('GET', '/v2/openapi.json', { auth: null });
    expect(doc.status).toBe(200);
    const paths = doc.json.paths;
    expect(Object.keys(paths['/v2/accounts/{account}/subscriptions']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/v2/accounts/{account}/subscriptions/{subscription}']).sort()).toEqual(['delete', 'get', 'patch']);
    expect(paths['/v2/accounts/{account}/subscriptions/{subscription}/activity'].get.summary).toContain('spec 3');
    expect(Object.keys(paths['/v2/webhooks']).sort()).toEqual(['get', 'post']);
    expect(paths['/v2/webhooks/{id}/attempts']).toBeDefined();
    // Email (spec 2) and the legacy events are v1 only.
    expect(Object.keys(paths).some((k) => k.includes('/email/') || k.includes('/events'))).toBe(false);
  });
});
