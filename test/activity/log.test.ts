/**
 * spec 3, Activity list + Service-side retention: cursors, after-auth, from/until, page_size,
 * retention and the stale-cursor rule, against the real SQLite log.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { decodeCursor } from '../../src-main/activity/cursor';
import { generated, makeHarness, type Harness } from './helpers';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup(clock?: () => number) {
  h = await makeHarness(clock ? { clock } : {});
  const acc = await h.app.accounts.connect({ service: 'memory', options: { store: `log-${Math.random()}` } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  return { h, acc, sub };
}

describe('migration 0400-activity', () => {
  it('creates the activity tables', () => {
    const db = openDb(':memory:');
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'activity%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    expect(tables).toEqual(expect.arrayContaining(['activity', 'activity_followers', 'activity_snapshot', 'activity_subscriptions', 'activity_watermarks', 'activity_webhook_attempts', 'activity_webhook_queue', 'activity_webhooks']));
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(400);
    db.close();
  });
});

describe('spec 3, Activity list: cursors', () => {
  it('pages through 25,000 generated changes with page_size 1000, each exactly once', async () => {
    const { h, acc, sub } = await setup();
    const seen = new Map<string, number>();
    let cursor: string | undefined;
    let pages = 0;
    const drain = () => {
      for (;;) {
        const page = h.activity.log.list(acc.id, sub.id, { cursor, pageSize: 1000 });
        expect(page.records.length).toBeLessThanOrEqual(1000);
        if (!page.records.length) return;
        pages++;
        for (const r of page.records) seen.set(r.path, (seen.get(r.path) ?? 0) + 1);
        cursor = page.cursor!;
      }
    };
    // Retention keeps 10,000 per account, so a reader keeps up while 25,000 arrive in bursts.
    for (let i = 0; i < 25_000; i += 2500) {
      h.activity.log.append(sub.id, acc.id, generated(2500, i));
      drain();
    }
    expect(seen.size).toBe(25_000);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(pages).toBe(30); // 2500 per burst = 3 pages (1000, 1000, 500) × 10 bursts
  }, 120_000);

  it('cursors are opaque, monotonic per account and refuse another account', async () => {
    const { h, acc, sub } = await setup();
    const other = await h.app.accounts.connect({ service: 'memory', options: { store: 'other' } });
    h.activity.log.append(sub.id, acc.id, generated(3));
    const a = h.activity.log.list(acc.id, sub.id, { pageSize: 1 });
    const b = h.activity.log.list(acc.id, sub.id, { cursor: a.cursor!, pageSize: 1 });
    expect(decodeCursor(acc.id, b.cursor!).s).toBeGreaterThan(decodeCursor(acc.id, a.cursor!).s);
    expect(() => h.activity.log.list(other.id, null, { cursor: a.cursor! })).toThrow(/another account/);
    expect(() => h.activity.log.list(acc.id, sub.id, { cursor: 'garbage!' })).toThrow(/not valid/);
    // An empty page keeps the position; the subscription's last_cursor points at the newest.
    const end = h.activity.log.list(acc.id, sub.id, { cursor: h.activity.subscriptions.get(acc.id, 'default').lastCursor! });
    expect(end.records).toEqual([]);
    expect(end.cursor).toBe(h.activity.subscriptions.get(acc.id, 'default').lastCursor);
  });

  it('cursor is null while no activity exists (v2 rule); after-auth returns everything since connection', async () => {
    const { h, acc, sub } = await setup();
    expect(h.activity.log.list(acc.id, sub.id, {}).cursor).toBeNull();
    h.activity.log.append(sub.id, acc.id, generated(5));
    const page = h.activity.log.list(acc.id, sub.id, { cursor: 'after-auth' });
    expect(page.records.map((r) => r.path)).toEqual(generated(5).map((c) => c.path));
    expect(page.total).toBe(5);
  });

  it('validates page_size 1–1000 and the cursor/from/until rules', async () => {
    const { h, acc, sub } = await setup();
    for (const pageSize of [0, 1001, 1.5, NaN]) expect(() => h.activity.log.list(acc.id, sub.id, { pageSize })).toThrow(/page_size/);
    expect(() => h.activity.log.list(acc.id, sub.id, { cursor: 'after-auth', from: '2026-01-01T00:00:00Z' })).toThrow(/cannot be combined/);
    expect(() => h.activity.log.list(acc.id, sub.id, { until: '2026-01-01T00:00:00Z' })).toThrow(/requires `from`/);
    expect(() => h.activity.log.list(acc.id, sub.id, { from: 'yesterday' })).toThrow(/ISO 8601/);
    // A cursor is the client's to tamper with: a range outside what a date can hold is a bad cursor, not a 500.
    const forged = (c: object) => Buffer.from(JSON.stringify({ a: acc.id, s: 0, ...c })).toString('base64url');
    for (const c of [{ f: 1e20 }, { u: -1e17 }, { f: 8.64e15 }, { f: '0' }]) {
      expect(() => h.activity.log.list(acc.id, sub.id, { cursor: forged(c) }), JSON.stringify(c)).toThrow(expect.objectContaining({ code: 'invalid_parameters' }));
    }
    expect(h.activity.log.list(acc.id, sub.id, { cursor: forged({ f: 0, u: Date.now() }) }).records).toEqual([]);
  });

  it('from/until select [from, until) by recording time and the returned cursor stays in that range', async () => {
    let now = Date.parse('2026-11-21T10:00:00Z');
    const { h, acc, sub } = await setup(() => now);
    h.activity.log.append(sub.id, acc.id, generated(2, 0)); // 10:00
    now += 60_000;
    h.activity.log.append(sub.id, acc.id, generated(2, 2)); // 10:01
    now += 60_000;
    h.activity.log.append(sub.id, acc.id, generated(2, 4)); // 10:02
    const first = h.activity.log.list(acc.id, sub.id, { from: '2026-11-21T10:01:00Z', until: '2026-11-21T10:02:00Z', pageSize: 1 });
    expect(first.records.map((r) => r.path)).toEqual(['/gen/file-2.txt']);
    const second = h.activity.log.list(acc.id, sub.id, { cursor: first.cursor!, pageSize: 10 });
    expect(second.records.map((r) => r.path)).toEqual(['/gen/file-3.txt']);
    now += 60_000;
    h.activity.log.append(sub.id, acc.id, generated(1, 6)); // later activity is outside the range
    expect(h.activity.log.list(acc.id, sub.id, { cursor: second.cursor! }).records).toEqual([]);
  });
});

describe('spec 3, Service-side retention', () => {
  it('keeps 10,000 per account; a stale cursor restarts at the oldest record kept', async () => {
    const { h, acc, sub } = await setup();
    h.activity.log.append(sub.id, acc.id, generated(10));
    const early = h.activity.log.list(acc.id, sub.id, { pageSize: 2 }).cursor!;
    h.activity.log.append(sub.id, acc.id, generated(10_500, 10));
    const page = h.activity.log.list(acc.id, sub.id, { cursor: early, pageSize: 1000 });
    expect(page.total).toBe(10_000);
    expect(page.records[0]!.path).toBe('/gen/file-510.txt');
    const fresh = h.activity.log.list(acc.id, sub.id, { pageSize: 1 });
    expect(fresh.records[0]!.path).toBe('/gen/file-510.txt');
  }, 60_000);

  it('drops activity older than 24 h', async () => {
    let now = Date.parse('2026-11-20T00:00:00Z');
    const { h, acc, sub } = await setup(() => now);
    h.activity.log.append(sub.id, acc.id, generated(3, 0));
    now += 23 * 3600_000;
    h.activity.log.append(sub.id, acc.id, generated(3, 3));
    now += 2 * 3600_000;
    const page = h.activity.log.list(acc.id, sub.id, {});
    expect(page.records.map((r) => r.path)).toEqual(['/gen/file-3.txt', '/gen/file-4.txt', '/gen/file-5.txt']);
  });
  it('reading does not fail while retention cannot be written (a full data disk); it is applied once it can', async () => {
    let now = Date.parse('2026-11-20T00:00:00Z');
    const { h, acc, sub } = await setup(() => now);
    h.activity.log.append(sub.id, acc.id, generated(3, 0));
    now += 25 * 3600_000;
    h.app.db.pragma('query_only = ON'); // every write fails, as on a full disk
    try {
      expect(h.activity.log.list(acc.id, sub.id, {}).total).toBe(3);
    } finally {
      h.app.db.pragma('query_only = OFF');
    }
    expect(h.activity.log.list(acc.id, sub.id, {}).total).toBe(0);
  });
});
