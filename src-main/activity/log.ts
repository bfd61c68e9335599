/**
 * The activity log (spec 3, Activity list and Service-side retention). Records are appended by
 * followers in one transaction together with the follower's upstream cursor or snapshot, so a
 * crash can never keep activity without the cursor that produced it or the reverse. The log
 * position (`seq`) is one global AUTOINCREMENT, hence monotonic per account.
 *
 * Retention: at most 10,000 records per account, none older than 24 hours. The highest purged
 * seq is remembered per account; a cursor below it is stale and reading restarts at the oldest
 * record still kept ("the cursor closest to the maximum retention period").
 */
import type { Db } from '../cache/db';
import { ServiceError } from '../errors';
import { AFTER_AUTH, checkpointTime, decodeCursor, encodeCursor, type CursorState } from './cursor';
import { systemClock, type ActivityChange, type ActivityRecord, type Clock, type EntrySnapshot, type HyperlinkInfo } from './types';

export const RETENTION = { maxPerAccount: 10_000, maxAgeMs: 24 * 3600_000 };

export interface ListQuery {
  cursor?: string;
  pageSize?: number;
  /** ISO 8601: oldest time returned (inclusive); compared with when Tributary recorded the activity. */
  from?: string;
  /** ISO 8601: exclusive upper bound; requires `from`. */
  until?: string;
}

export interface ListResult {
  records: ActivityRecord[];
  /** Position right after the last returned record; null while the account has no activity at all. */
  cursor: string | null;
  /** Records currently retained for the account (the spec's optional `total`). */
  total: number;
}

export interface AppendedInfo {
  accountId: number;
  subscriptionId: number;
  count: number;
  firstSeq: number;
  lastSeq: number;
  cursor: string;
}

interface Row {
  seq: number;
  account_id: number;
  subscription_id: number;
  type: ActivityRecord['type'];
  api: ActivityRecord['api'];
  kind: ActivityRecord['kind'];
  path: string;
  previous_path: string | null;
  metadata: string | null;
  previous_metadata: string | null;
  upstream_id: string | null;
  subtype: string | null;
  link: string | null;
  recorded_at: string;
}

export class ActivityLog {
  private readonly listeners = new Set<(info: AppendedInfo) => void>();
  private readonly insert;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
    readonly retention = RETENTION,
  ) {
    this.insert = db.prepare(
      `INSERT INTO activity (account_id, subscription_id, type, api, kind, path, previous_path, metadata, previous_metadata, upstream_id, recorded_at, subtype, link)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Called after each committed append (webhooks, the app event bus). */
  onAppended(listener: (info: AppendedInfo) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Appends changes and runs `within` (the follower's cursor/snapshot write) in the same
   * transaction; listeners hear of it only after the commit. `changes` may be a function, run
   * first inside the transaction (for followers that derive activity from the stored snapshot).
   */
  append(subscriptionId: number, accountId: number, input: ActivityChange[] | (() => ActivityChange[]), within?: () => void): AppendedInfo | null {
    const now = new Date(this.clock()).toISOString();
    const info = this.db.transaction(() => {
      const changes = typeof input === 'function' ? input() : input;
      let first = 0;
      let last = 0;
      for (const c of changes) {
        const r = this.insert.run(
          accountId,
          subscriptionId,
          c.type,
          c.api ?? (c.kind === 'message' ? 'email' : 'storage'),
          c.kind,
          c.path,
          c.previousPath ?? null,
          c.metadata ? JSON.stringify(c.metadata) : null,
          c.previousMetadata ? JSON.stringify(c.previousMetadata) : null,
          c.upstreamId ?? null,
          now,
          c.subtype ?? null,
          c.link ? JSON.stringify(c.link) : null,
        );
        last = Number(r.lastInsertRowid);
        if (!first) first = last;
      }
      within?.();
      if (!changes.length) return null;
      const cursor = encodeCursor({ a: accountId, s: last });
      this.db.prepare('UPDATE activity_subscriptions SET last_cursor = ?, last_cursor_updated_at = ? WHERE id = ?').run(cursor, now, subscriptionId);
      this.purge(accountId);
      return { accountId, subscriptionId, count: changes.length, firstSeq: first, lastSeq: last, cursor };
    })();
    if (info) for (const l of this.listeners) l(info);
    return info;
  }

  /** Applies retention to one account (inside the caller's transaction when there is one). */
  purge(accountId: number): void {
    const cutoff = new Date(this.clock() - this.retention.maxAgeMs).toISOString();
    const byAge = this.db.prepare('SELECT MAX(seq) AS s FROM activity WHERE account_id = ? AND recorded_at < ?').get(accountId, cutoff) as { s: number | null };
    const byCount = this.db
      .prepare('SELECT seq AS s FROM activity WHERE account_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?')
      .get(accountId, this.retention.maxPerAccount) as { s: number } | undefined;
    const through = Math.max(byAge.s ?? 0, byCount?.s ?? 0);
    if (!through) return;
    this.db.prepare('DELETE FROM activity WHERE account_id = ? AND seq <= ?').run(accountId, through);
    this.db
      .prepare('INSERT INTO activity_watermarks (account_id, purged_through) VALUES (?, ?) ON CONFLICT (account_id) DO UPDATE SET purged_through = MAX(purged_through, excluded.purged_through)')
      .run(accountId, through);
  }

  /** One page of activity (spec 3, Activity list). `subscriptionId` null = every subscription (legacy events). */
  list(accountId: number, subscriptionId: number | null, q: ListQuery = {}): ListResult {
    const pageSize = q.pageSize ?? 1000;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
      throw new ServiceError('invalid_parameters', '`page_size` must be a whole number from 1 to 1000.');
    }
    if (q.cursor !== undefined && (q.from !== undefined || q.until !== undefined)) {
      throw new ServiceError('invalid_parameters', '`cursor` cannot be combined with `from` or `until`.');
    }
    if (q.until !== undefined && q.from === undefined) throw new ServiceError('invalid_parameters', '`until` requires `from`.');
    let state: CursorState;
    if (q.cursor === undefined || q.cursor === '' || q.cursor === AFTER_AUTH) {
      // No cursor and `after-auth` both start at the first record after the account was
      // connected; retention below moves that to the oldest record still kept.
      state = { a: accountId, s: 0, f: parseTime(q.from, 'from'), u: parseTime(q.until, 'until') };
      if (state.f !== undefined && state.u !== undefined && state.u < state.f) throw new ServiceError('invalid_parameters', '`until` must not be before `from`.');
    } else if (checkpointTime(q.cursor) !== null) {
      // An upstream checkpoint: the activity recorded after that walk was committed.
      const at = new Date(checkpointTime(q.cursor)!).toISOString();
      const row = this.db.prepare('SELECT MAX(seq) AS s FROM activity WHERE account_id = ? AND recorded_at <= ?').get(accountId, at) as { s: number | null };
      state = { a: accountId, s: row.s ?? 0 };
    } else {
      state = decodeCursor(accountId, q.cursor);
    }
    try {
      this.db.transaction(() => this.purge(accountId))();
    } catch {
      // Retention could not be written (a full data disk): reading must not fail for that; the
      // next append or read purges.
    }
    const mark = this.db.prepare('SELECT purged_through AS p FROM activity_watermarks WHERE account_id = ?').get(accountId) as { p: number } | undefined;
    const start = Math.max(state.s, mark?.p ?? 0);
    const where = ['account_id = ?', 'seq > ?'];
    const args: unknown[] = [accountId, start];
    const add = (clause: string, value: unknown) => {
      where.push(clause);
      args.push(value);
    };
    if (subscriptionId !== null) add('subscription_id = ?', subscriptionId);
    if (state.f !== undefined) add('recorded_at >= ?', new Date(state.f).toISOString());
    if (state.u !== undefined) add('recorded_at < ?', new Date(state.u).toISOString());
    const rows = this.db.prepare(`SELECT * FROM activity WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`).all(...args, pageSize) as Row[];
    const total = (this.db.prepare('SELECT COUNT(*) AS n FROM activity WHERE account_id = ?').get(accountId) as { n: number }).n;
    const lastSeq = rows.length ? rows[rows.length - 1]!.seq : start;
    const any = lastSeq > 0 || (mark?.p ?? 0) > 0 || total > 0;
    return {
      records: rows.map(toRecord),
      cursor: any ? encodeCursor({ a: accountId, s: lastSeq, ...(state.f !== undefined ? { f: state.f } : {}), ...(state.u !== undefined ? { u: state.u } : {}) }) : null,
      total,
    };
  }

  /** A subscription's records after `afterSeq`, oldest first (event-bus delivery resumes from there). */
  after(subscriptionId: number, afterSeq: number, limit: number): ActivityRecord[] {
    const rows = this.db.prepare('SELECT * FROM activity WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(subscriptionId, afterSeq, limit) as Row[];
    return rows.map(toRecord);
  }

  /** The account's newest position (legacy `/events/latest` `cursor`, v2 `last_activity`). */
  latestCursor(accountId: number): string | null {
    const row = this.db.prepare('SELECT MAX(seq) AS s FROM activity WHERE account_id = ?').get(accountId) as { s: number | null };
    const mark = this.db.prepare('SELECT purged_through AS p FROM activity_watermarks WHERE account_id = ?').get(accountId) as { p: number } | undefined;
    const s = Math.max(row.s ?? 0, mark?.p ?? 0);
    return s ? encodeCursor({ a: accountId, s }) : null;
  }

  /** Removes an account's activity and watermark (subscription deleted or expired). */
  forgetAccount(accountId: number): void {
    this.db.prepare('DELETE FROM activity WHERE account_id = ?').run(accountId);
    this.db.prepare('DELETE FROM activity_watermarks WHERE account_id = ?').run(accountId);
  }
}

function parseTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (!Number.isFinite(t)) throw new ServiceError('invalid_parameters', `\`${name}\` must be an ISO 8601 timestamp.`);
  return t;
}

function toRecord(r: Row): ActivityRecord {
  return {
    seq: r.seq,
    accountId: r.account_id,
    subscriptionId: r.subscription_id,
    type: r.type,
    api: r.api,
    kind: r.kind,
    path: r.path,
    previousPath: r.previous_path,
    metadata: r.metadata ? (JSON.parse(r.metadata) as EntrySnapshot) : null,
    previousMetadata: r.previous_metadata ? (JSON.parse(r.previous_metadata) as EntrySnapshot) : null,
    upstreamId: r.upstream_id,
    subtype: (r.subtype as ActivityRecord['subtype']) ?? null,
    link: r.link ? (JSON.parse(r.link) as HyperlinkInfo) : null,
    recordedAt: r.recorded_at,
  };
}
