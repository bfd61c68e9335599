/**
 * spec 3, JSON webhook + Legacy webhooks, against a real HTTP receiver on 127.0.0.1: the
 * creation test, the signed notification, retries on the back-off schedule (fake clock), the
 * 24-hour pause, and form-encoded legacy webhooks.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKOFF } from '../../src-main/activity/delivery-queue';
import { SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import { freePort } from '../servers/util';
import { generated, makeHarness, until, type Harness } from './helpers';

interface Received {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A webhook receiver answering each request with `respond` (status, body). */
async function receiver(respond: (r: Received, n: number) => { status: number; body?: string }) {
  const got: Received[] = [];
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const r = { method: req.method!, headers: req.headers, body };
      got.push(r);
      const a = respond(r, got.length);
      res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.body ?? '');
    });
  });
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${port}/hook`, got, stop: () => new Promise<void>((ok) => server.close(() => ok())) };
}

const KEY = 'api-key-oldest-active';
let h: Harness | undefined;
let stopReceiver: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.close();
  await stopReceiver?.();
  h = undefined;
  stopReceiver = undefined;
});

async function setup(now?: { t: number }) {
  h = await makeHarness({ signingKey: () => KEY, ...(now ? { clock: () => now.t, autoDeliverWebhooks: false } : {}) });
  // The receivers are on loopback, which webhooks reach only when allowed.
  h.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
  const acc = await h.app.accounts.connect({ service: 'memory', options: { store: `hooks-${Math.random()}` } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  return { h, acc, sub };
}

const answerTest = (appId: () => string) => (r: Received) => (r.body === '{}' ? { status: 200, body: appId() } : { status: 200, body: 'ok' });

describe('spec 3, JSON webhook', () => {
  it('creation: test POST of {} answered 200 with the application id saves it', async () => {
    const { h } = await setup();
    const rx = await receiver(answerTest(() => h.activity.webhooks.applicationId()));
    stopReceiver = rx.stop;
    const hook = await h.activity.webhooks.create({ url: rx.url });
    expect(rx.got[0]).toMatchObject({ method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'user-agent': 'service-webhook/2.0' } });
    expect(h.activity.webhooks.list()).toEqual([hook]);
    expect(h.activity.webhooks.attempts(hook.id)).toMatchObject([{ kind: 'test', status: 200, ok: true }]);
  });

  it('creation: a wrong body (or status) in answer to the test → not saved', async () => {
    const { h } = await setup();
    const rx = await receiver(() => ({ status: 200, body: 'not-the-application-id' }));
    stopReceiver = rx.stop;
    await expect(h.activity.webhooks.create({ url: rx.url })).rejects.toMatchObject({ code: 'invalid_parameters', message: expect.stringMatching(/not saved/) });
    const rx2 = await receiver(() => ({ status: 201, body: h!.activity.webhooks.applicationId() }));
    await expect(h.activity.webhooks.create({ url: rx2.url })).rejects.toThrow(/status 201/);
    await rx2.stop();
    expect(h.activity.webhooks.list()).toEqual([]);
  });

  // docs/rest.md, Webhooks: the same rules for a receiver added in the app as over REST.
  it('creation: a URL with a user name or password, or over 2,048 characters, is refused before any request', async () => {
    const { h } = await setup();
    let requests = 0;
    const rx = await receiver(() => (requests++, { status: 200, body: h!.activity.webhooks.applicationId() }));
    stopReceiver = rx.stop;
    const withCredentials = rx.url.replace('http://', 'http://user:secret@');
    await expect(h.activity.webhooks.create({ url: withCredentials })).rejects.toMatchObject({ code: 'invalid_parameters', message: expect.stringMatching(/user name or password/) });
    await expect(h.activity.webhooks.create({ url: `${rx.url}?${'a'.repeat(2048)}` })).rejects.toMatchObject({ code: 'invalid_parameters', message: expect.stringMatching(/2048/) });
    expect(requests).toBe(0);
    expect(h.activity.webhooks.list()).toEqual([]);
  });

  it('notification: POST {account, subscription}, signature = Base64(HMAC-SHA256(key, exact body))', async () => {
    const { h, acc, sub } = await setup();
    const rx = await receiver(answerTest(() => h.activity.webhooks.applicationId()));
    stopReceiver = rx.stop;
    const hook = await h.activity.webhooks.create({ url: rx.url });
    h.activity.log.append(sub.id, acc.id, generated(3));
    const n = await until(() => rx.got[1], 10_000, 'notification');
    expect(n.body).toBe(JSON.stringify({ account: acc.id, subscription: sub.id }));
    expect(n.headers['content-type']).toBe('application/json');
    expect(n.headers['user-agent']).toBe('service-webhook/2.0');
    expect(n.headers['x-service-signature']).toBe(createHmac('sha256', KEY).update(n.body).digest('base64'));
    await until(() => h.activity.webhooks.attempts(hook.id).length === 2 || undefined, 5000, 'attempt persisted');
    expect(h.activity.webhooks.attempts(hook.id)[0]).toMatchObject({ kind: 'notify', status: 200, ok: true, account: acc.id, subscription: sub.id });
    // The receiver then reads activity with its cursor, as step 3 of the spec describes.
    expect(h.activity.log.list(acc.id, sub.id, {}).records).toHaveLength(3);
  });

  it('503 then recovery: retried after 1 s, 2 s, 4 s (fake clock) and delivered', async () => {
    const now = { t: Date.parse('2026-11-21T00:00:00Z') };
    const { h, acc, sub } = await setup(now);
    const rx = await receiver((r, n) => (r.body === '{}' ? { status: 200, body: h.activity.webhooks.applicationId() } : n <= 4 ? { status: 503 } : { status: 200 }));
    stopReceiver = rx.stop;
    const hook = await h.activity.webhooks.create({ url: rx.url });
    const t0 = now.t;
    h.activity.log.append(sub.id, acc.id, generated(1));
    await h.activity.webhooks.runDue(); // attempt 1: 503
    const schedule: number[] = [];
    for (const wait of [1000, 2000, 4000]) {
      now.t += wait - 1;
      await h.activity.webhooks.runDue();
      expect(rx.got.length).toBe(1 + schedule.length + 1); // not yet due: nothing sent
      now.t += 1;
      await h.activity.webhooks.runDue();
      schedule.push(now.t - t0);
    }
    expect(schedule).toEqual([1000, 3000, 7000]);
    expect(rx.got.length).toBe(5);
    const attempts = h.activity.webhooks.attempts(hook.id).reverse().filter((a) => a.kind === 'notify');
    expect(attempts.map((a) => [a.status, a.ok])).toEqual([[503, false], [503, false], [503, false], [200, true]]);
    expect(attempts.slice(0, 3).map((a) => Date.parse(a.nextAttemptAt!) - t0)).toEqual([1000, 3000, 7000]);
    expect(h.activity.webhooks.pending()).toEqual([]);
    expect(h.activity.webhooks.get(hook.id).failingSince).toBeNull();
  });

  it('back-off is capped at 15 min; after 24 h of failure it pauses until new activity', async () => {
    const now = { t: Date.parse('2026-11-21T00:00:00Z') };
    const { h, acc, sub } = await setup(now);
    let down = true;
    const rx = await receiver((r) => (r.body === '{}' ? { status: 200, body: h.activity.webhooks.applicationId() } : down ? { status: 500 } : { status: 204 }));
    stopReceiver = rx.stop;
    const hook = await h.activity.webhooks.create({ url: rx.url });
    const t0 = now.t;
    h.activity.log.append(sub.id, acc.id, generated(1));
    await h.activity.webhooks.runDue();
    let gaps: number[] = [];
    let last = now.t;
    while (h.activity.webhooks.pending()[0]?.nextAttemptAt) {
      now.t = h.activity.webhooks.pending()[0]!.nextAttemptAt!;
      gaps.push(now.t - last);
      last = now.t;
      await h.activity.webhooks.runDue();
    }
    expect(Math.max(...gaps)).toBe(BACKOFF.maxMs);
    expect(gaps.slice(0, 5)).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(now.t - t0).toBeGreaterThanOrEqual(BACKOFF.giveUpAfterMs);
    expect(h.activity.webhooks.get(hook.id).paused).toBe(true);
    const sent = rx.got.length;
    now.t += 3600_000;
    await h.activity.webhooks.runDue();
    expect(rx.got.length).toBe(sent); // paused: nothing more
    down = false;
    h.activity.log.append(sub.id, acc.id, generated(1, 1)); // new activity wakes it
    await h.activity.webhooks.runDue();
    expect(rx.got.length).toBe(sent + 1);
    expect(h.activity.webhooks.get(hook.id)).toMatchObject({ paused: false, failingSince: null });
    gaps = [];
  });
});

describe('spec 3, Legacy webhooks', () => {
  it('form-encoded body, signed the same way', async () => {
    const { h, acc, sub } = await setup();
    const rx = await receiver((r) => (r.body === '' ? { status: 200, body: h.activity.webhooks.applicationId() } : { status: 200 }));
    stopReceiver = rx.stop;
    await h.activity.webhooks.create({ url: rx.url, format: 'form' });
    h.activity.log.append(sub.id, acc.id, generated(1));
    const n = await until(() => rx.got[1], 10_000, 'notification');
    expect(n.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(new URLSearchParams(n.body).get('account')).toBe(String(acc.id));
    expect(new URLSearchParams(n.body).get('subscription')).toBe(String(sub.id));
    expect(n.headers['x-service-signature']).toBe(createHmac('sha256', KEY).update(n.body).digest('base64'));
  });
});
