/**
 * spec 3, Webhooks and event buses: deliveries are retried with back-off. The queue's own timer
 * runs them; when the queue itself cannot run (its database fails: a full disk, an I/O error),
 * the run is logged and tried again later, and the process goes on (a rejection out of a timer
 * would end it).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { DeliveryQueue, PUMP_RETRY_MS, type QueueRowBase, type Timers } from '../../src-main/activity/delivery-queue';
import { scratchDir } from '../servers/util';

/** Timers that run only when the test says so. */
function manualTimers() {
  const due: { fn: () => void; ms: number }[] = [];
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      const t = { fn, ms };
      due.push(t);
      return t;
    },
    clearTimeout: (h) => {
      const i = due.indexOf(h as never);
      if (i >= 0) due.splice(i, 1);
    },
  };
  return { timers, due };
}

const rejections: unknown[] = [];
const onRejection = (e: unknown) => rejections.push(e);
afterEach(() => {
  process.off('unhandledRejection', onRejection);
  vi.restoreAllMocks();
});

describe('the delivery queue (spec 3, retries)', () => {
  it("a run whose database fails is logged and tried again later; the process goes on", async () => {
    process.on('unhandledRejection', onRejection);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const db = openDb(join(scratchDir('delivery-queue'), 'db.sqlite'));
    db.exec('CREATE TABLE q (target INTEGER, account_id INTEGER, subscription_id INTEGER, attempts INTEGER, next_attempt_at INTEGER, PRIMARY KEY (target, subscription_id))');
    db.exec('CREATE TABLE targets (id INTEGER PRIMARY KEY, account_id INTEGER)');
    db.prepare('INSERT INTO targets (id, account_id) VALUES (1, NULL)').run();
    const delivered: QueueRowBase[] = [];
    const { timers, due } = manualTimers();
    const queue = new DeliveryQueue<QueueRowBase>(db, 'q', 'target', async (q) => void delivered.push(q), { timers, clock: () => 1000 });
    queue.enqueueActivity('targets', { accountId: 7, subscriptionId: 3 } as never, () => {});
    expect(due).toHaveLength(1);

    // The database fails under the timer's run.
    const prepare = db.prepare.bind(db);
    const failing = vi.spyOn(db, 'prepare').mockImplementation(() => {
      throw new Error('disk I/O error');
    });
    due.shift()!.fn();
    await vi.waitFor(() => expect(warn).toHaveBeenCalledWith(expect.stringContaining('disk I/O error')));
    await new Promise((r) => setImmediate(r));
    expect(rejections).toEqual([]);
    expect(due.map((t) => t.ms)).toEqual([PUMP_RETRY_MS]);

    // Once the database is back, the retry delivers.
    failing.mockImplementation(prepare);
    due.shift()!.fn();
    await vi.waitFor(() => expect(delivered).toHaveLength(1));
    expect(delivered[0]).toMatchObject({ account_id: 7, subscription_id: 3 });
    await queue.close();
    db.close();
  });
});
