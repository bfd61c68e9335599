/**
 * The delivery queue shared by webhooks and event buses (spec 3): one row per (target,
 * subscription) with its attempts and next try (epoch ms; NEVER = nothing pending). New activity
 * queues a row or wakes a waiting one; due rows are handed to the owner's `deliver`, 50 at a time,
 * and a timer is kept for the earliest pending one. Failures back off 1 s doubling to 15 min;
 * after 24 h of continuous failure a row waits for new activity.
 */
import type { Db } from '../cache/db';
import type { AppendedInfo } from './log';
import type { Clock } from './types';
import { systemClock } from './types';

export const BACKOFF = { firstMs: 1000, maxMs: 15 * 60_000, giveUpAfterMs: 24 * 3600_000 };
/** A timer's run that failed as a whole (the database) is tried again after this long. */
export const PUMP_RETRY_MS = 60_000;
/** `next_attempt_at` of a row with nothing to send (delivered, or given up until new activity). */
export const NEVER = Number.MAX_SAFE_INTEGER;

/** Back-off before retry number `attempt` (1-based): 1 s, 2 s, 4 s … capped at 15 min. */
export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF.firstMs * 2 ** Math.max(0, attempt - 1), BACKOFF.maxMs);
}

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface DeliveryOptions {
  clock?: Clock;
  timers?: Timers;
  /** false: nothing is delivered but by `runDue()` (tests with a fake clock). */
  autoDeliver?: boolean;
}

export interface QueueRowBase {
  account_id: number;
  subscription_id: number;
  attempts: number;
  next_attempt_at: number;
}

export class DeliveryQueue<Q extends QueueRowBase> {
  private timer: unknown = null;
  private pumping: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly db: Db,
    /** The queue table and the column naming its target (webhook, bus); keyed by (target, subscription). */
    private readonly table: string,
    private readonly targetColumn: string,
    private readonly deliver: (q: Q) => Promise<void>,
    private readonly options: DeliveryOptions,
  ) {}

  get clock(): Clock {
    return this.options.clock ?? systemClock;
  }
  private get timers(): Timers {
    return this.options.timers ?? realTimers;
  }

  /**
   * Queues the subscription for the target, due now; a row already waiting keeps its schedule, one
   * that had nothing pending starts afresh. `extra` are further columns set only on insert.
   */
  private enqueue(target: number, accountId: number, subscriptionId: number, extra: Record<string, number> = {}): void {
    const columns = [this.targetColumn, 'account_id', 'subscription_id', ...Object.keys(extra), 'attempts', 'next_attempt_at'];
    this.db
      .prepare(
        `INSERT INTO ${this.table} (${columns.join(', ')}) VALUES (${columns.map((c) => (c === 'attempts' ? '0' : '?')).join(', ')})
         ON CONFLICT (${this.targetColumn}, subscription_id) DO UPDATE SET
           attempts = CASE WHEN next_attempt_at = ${NEVER} THEN 0 ELSE attempts END,
           next_attempt_at = CASE WHEN next_attempt_at = ${NEVER} THEN excluded.next_attempt_at ELSE next_attempt_at END`,
      )
      .run(target, accountId, subscriptionId, ...Object.values(extra), this.clock());
  }

  /**
   * New activity: queued for every target in `targets` that follows its account (or every
   * account), each after `prepare(target)`, in one transaction; then the timer is re-armed.
   */
  enqueueActivity(targets: string, info: AppendedInfo, prepare: (target: number) => void, extra: Record<string, number> = {}): void {
    const rows = this.db.prepare(`SELECT id FROM ${targets} WHERE account_id IS NULL OR account_id = ?`).all(info.accountId) as { id: number }[];
    if (!rows.length) return;
    this.db.transaction(() => {
      for (const r of rows) {
        prepare(r.id);
        this.enqueue(r.id, info.accountId, info.subscriptionId, extra);
      }
    })();
    this.arm();
  }

  /** Whether the target has a delivery pending (not given up). */
  hasPending(target: number): boolean {
    return this.db.prepare(`SELECT 1 FROM ${this.table} WHERE ${this.targetColumn} = ? AND next_attempt_at < ${NEVER}`).get(target) !== undefined;
  }

  /**
   * Reschedules a failed row with back-off, or gives up when the target has been failing for 24 h.
   * Returns when the failures began (now if this is the first) and the next try (NEVER = given up).
   */
  failed(target: number, q: Q, failingSince: string | null): { failingSince: string; giveUp: boolean; next: number } {
    const now = this.clock();
    const since = failingSince ?? new Date(now).toISOString();
    const attempts = q.attempts + 1;
    const giveUp = now - Date.parse(since) >= BACKOFF.giveUpAfterMs;
    const next = giveUp ? NEVER : now + backoffMs(attempts);
    this.db.prepare(`UPDATE ${this.table} SET attempts = ?, next_attempt_at = ? WHERE ${this.targetColumn} = ? AND subscription_id = ?`).run(attempts, next, target, q.subscription_id);
    return { failingSince: since, giveUp, next };
  }

  /** Delivers everything due by the clock now; resolves when it has all been attempted. */
  runDue(): Promise<void> {
    if (!this.pumping) this.pumping = this.pump().finally(() => (this.pumping = null));
    return this.pumping;
  }

  private async pump(): Promise<void> {
    for (;;) {
      const due = this.db.prepare(`SELECT * FROM ${this.table} WHERE next_attempt_at <= ? ORDER BY next_attempt_at LIMIT 50`).all(this.clock()) as Q[];
      if (!due.length || this.closed) break;
      await Promise.all(due.map((q) => this.deliver(q)));
    }
    this.arm();
  }

  /** Sets a timer for the earliest pending delivery (real timers or the injected ones). */
  arm(): void {
    if (this.closed || this.options.autoDeliver === false) return;
    if (this.timer) this.timers.clearTimeout(this.timer);
    this.timer = null;
    const next = this.db.prepare(`SELECT MIN(next_attempt_at) AS t FROM ${this.table} WHERE next_attempt_at < ${NEVER}`).get() as { t: number | null };
    if (next.t === null) return;
    this.timer = this.timers.setTimeout(() => this.runDueOnTimer(), Math.max(0, next.t - this.clock()));
  }

  /**
   * A timer's run. Deliveries' own failures are rows backing off; a failure of the queue itself
   * (its database: a full disk, an I/O error) is logged and the run tried again later, since out
   * of a timer it would end the process.
   */
  private runDueOnTimer(): void {
    this.runDue().catch((e: unknown) => {
      console.warn(`[deliveries] ${this.table} could not run: ${(e as Error)?.message ?? e}; trying again in ${PUMP_RETRY_MS / 1000} s`);
      if (!this.closed) this.timer = this.timers.setTimeout(() => this.runDueOnTimer(), PUMP_RETRY_MS);
    });
  }

  /** Stops the timer and waits for a delivery under way. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) this.timers.clearTimeout(this.timer);
    await this.pumping;
  }
}
