/**
 * Followers: one per active subscription, chosen by what the connector can do.
 *
 * - `features.watch` (local): push events, mapped 1:1 (renames arrive as rename/move); on start a
 *   catch-up walk against the stored snapshot finds what changed while the app was not running.
 * - otherwise a polling walker: lists the monitored folders and diffs them against the snapshot
 *   of the previous walk. Where the backend's folder ETags change whenever anything below them
 *   changes (`deepFolderEtags`), unchanged folders are not listed again; elsewhere (Apache
 *   mod_dav_fs folder ETags only reflect the folder's own entries, and S3/Azure/SFTP/SMB have
 *   none) every folder is listed: a listing diff. Deletes and adds of one file with the same
 *   ETag and size in one walk become `rename` / `move`.
 * - `crawl` subscriptions walk once and publish `add` for everything.
 * - mail accounts have no follower of their own: the mail sync engine (IMAP IDLE + CONDSTORE,
 *   src-main/mail/) calls ActivityService.recordMailChanges inside its own transaction.
 *
 * Every batch of activity is committed in one transaction with the snapshot rows or upstream
 * checkpoint that produced it, so after a crash the follower resumes exactly where the log ends.
 */
import type { Db } from '../cache/db';
import { baseName, parentOf } from '../connectors/shared/paths';
import type { Entry, RawChange, StorageConnector, Watcher } from '../connectors/types';
import { toServiceError } from '../errors';
import type { AccountsService } from '../services/accounts';
import type { ActivityLog } from './log';
import type { Subscription, SubscriptionsService } from './subscriptions';
import { systemClock, type ActivityChange, type Clock, type EntrySnapshot } from './types';

export interface FollowerOptions {
  /** Time between polls of backends without push (spec 3: 1 minute in the enterprise edition). */
  pollIntervalMs: number;
  /** Upper bound of the error back-off (doubling from pollIntervalMs). */
  maxBackoffMs: number;
  /** Parallel folder listings during a walk. */
  concurrency: number;
  /** Folder ETags change when anything below changes: unchanged folders need no listing. */
  deepFolderEtags: boolean;
  /** Poll even where the connector can watch (network file systems without inotify). */
  forcePolling: boolean;
}

export const DEFAULT_FOLLOWER_OPTIONS: FollowerOptions = { pollIntervalMs: 60_000, maxBackoffMs: 15 * 60_000, concurrency: 4, deepFolderEtags: false, forcePolling: false };

export type FollowerMode = 'watching' | 'polling' | 'crawling' | 'backing-off' | 'done' | 'stopped';
export interface FollowerStatus {
  subscription: number;
  account: number;
  mode: FollowerMode;
  intervalMs: number | null;
  lastRunAt: string | null;
  nextRunAt: string | null;
  error: string | null;
}

interface SnapRow {
  path: string;
  parent: string;
  kind: 'file' | 'folder';
  etag: string | null;
  size: number | null;
  modified: string | null;
}

export function snapshotOf(e: Entry): EntrySnapshot {
  return {
    path: e.path,
    name: e.name,
    kind: e.kind,
    size: e.kind === 'file' ? e.size : null,
    modified: e.modified?.toISOString() ?? null,
    created: e.created?.toISOString() ?? null,
    ...(e.mimeType ? { mimeType: e.mimeType } : {}),
    ...(e.etag ? { etag: e.etag } : {}),
  };
}

const fromRow = (r: SnapRow): EntrySnapshot => ({ path: r.path, name: baseName(r.path), kind: r.kind, size: r.size, modified: r.modified, created: null, ...(r.etag ? { etag: r.etag } : {}) });
/** Change tag of an entry: its ETag, else size and modification time. */
const tagOf = (e: { etag?: string | null; size: number | null; modified: string | null }) => e.etag || `${e.size ?? ''}:${e.modified ?? ''}`;
/** Descendants of `p`: paths in [p + '/', p + '0') ('0' follows '/'). */
const below = (p: string): [string, string] => (p === '/' ? ['/', '0'] : [`${p}/`, `${p}0`]);
const isUnder = (path: string, root: string) => root === '/' || path === root || path.startsWith(`${root}/`);

/** Monitored folders without those inside another one (walked once). */
export function outermost(roots: string[]): string[] {
  return roots.filter((r) => !roots.some((o) => o !== r && isUnder(r, o)));
}

/** Snapshot storage of one subscription. */
class Snapshot {
  constructor(
    private readonly db: Db,
    readonly sub: number,
  ) {}
  children(parent: string): SnapRow[] {
    return this.db.prepare('SELECT path, parent, kind, etag, size, modified FROM activity_snapshot WHERE subscription_id = ? AND parent = ?').all(this.sub, parent) as SnapRow[];
  }
  get(path: string): SnapRow | undefined {
    return this.db.prepare('SELECT path, parent, kind, etag, size, modified FROM activity_snapshot WHERE subscription_id = ? AND path = ?').get(this.sub, path) as SnapRow | undefined;
  }
  /** Other known entries with this change tag (same inode and content on local). */
  withEtag(etag: string, kind: string, except: string): SnapRow[] {
    return this.db.prepare('SELECT path, parent, kind, etag, size, modified FROM activity_snapshot WHERE subscription_id = ? AND etag = ? AND kind = ? AND path != ?').all(this.sub, etag, kind, except) as SnapRow[];
  }
  subtree(path: string): SnapRow[] {
    const [lo, hi] = below(path);
    return this.db.prepare('SELECT path, parent, kind, etag, size, modified FROM activity_snapshot WHERE subscription_id = ? AND path >= ? AND path < ?').all(this.sub, lo, hi) as SnapRow[];
  }
  put(e: EntrySnapshot): void {
    this.db
      .prepare('INSERT OR REPLACE INTO activity_snapshot (subscription_id, path, parent, kind, etag, size, modified) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(this.sub, e.path, parentOf(e.path), e.kind, e.etag ?? null, e.size, e.modified);
  }
  remove(path: string): void {
    const [lo, hi] = below(path);
    this.db.prepare('DELETE FROM activity_snapshot WHERE subscription_id = ? AND (path = ? OR (path >= ? AND path < ?))').run(this.sub, path, lo, hi);
  }
  /** A folder rename: the folder row and every descendant move with it. */
  rename(from: string, to: string): void {
    const [lo, hi] = below(from);
    const n = from.length + 1;
    this.db
      .prepare('UPDATE activity_snapshot SET path = ? || substr(path, ?), parent = ? || substr(parent, ?) WHERE subscription_id = ? AND path >= ? AND path < ?')
      .run(to, n, to, n, this.sub, lo, hi);
    this.db.prepare('UPDATE activity_snapshot SET path = ?, parent = ? WHERE subscription_id = ? AND path = ?').run(to, parentOf(to), this.sub, from);
  }
  state(): { upstream: string | null; baseline: boolean } {
    const r = this.db.prepare('SELECT upstream_cursor, baseline_done FROM activity_followers WHERE subscription_id = ?').get(this.sub) as { upstream_cursor: string | null; baseline_done: number } | undefined;
    return { upstream: r?.upstream_cursor ?? null, baseline: r?.baseline_done === 1 };
  }
  setState(upstream: string | null, baseline: boolean): void {
    this.db
      .prepare(
        `INSERT INTO activity_followers (subscription_id, upstream_cursor, baseline_done, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (subscription_id) DO UPDATE SET upstream_cursor = excluded.upstream_cursor, baseline_done = excluded.baseline_done, updated_at = excluded.updated_at`,
      )
      .run(this.sub, upstream, baseline ? 1 : 0, new Date().toISOString());
  }
}

/** The result of one walk: activity plus the snapshot writes that go with it. */
interface WalkResult {
  changes: ActivityChange[];
  puts: EntrySnapshot[];
  removes: string[];
  listed: number;
}

/**
 * Walks `roots` and diffs against the snapshot. With `emitAdds` false (the first walk of a
 * `changes` subscription) it only records the baseline.
 */
export async function walk(c: StorageConnector, snap: Snapshot, roots: string[], opts: { emitAdds: boolean; deepFolderEtags: boolean; concurrency: number }): Promise<WalkResult> {
  const changes: ActivityChange[] = [];
  const puts: EntrySnapshot[] = [];
  const removes: string[] = [];
  const added: EntrySnapshot[] = [];
  const deleted: SnapRow[] = [];
  const queue: string[] = [...roots];
  let listed = 0;
  const emit = opts.emitAdds; // false: a silent baseline walk

  const visit = async (folder: string) => {
    let children: Entry[];
    try {
      children = await c.list(folder);
    } catch (e) {
      // A monitored folder that vanished between listing its parent and itself: next walk.
      if (toServiceError(e).code === 'not_found' && !roots.includes(folder)) return;
      throw e;
    }
    listed++;
    const before = new Map(snap.children(folder).map((r) => [r.path, r]));
    for (const e of children) {
      const s = snapshotOf(e);
      const old = before.get(e.path);
      before.delete(e.path);
      if (!old || old.kind !== e.kind) {
        if (old) deleted.push(old);
        puts.push(s);
        added.push(s);
        if (e.kind === 'folder') queue.push(e.path);
        continue;
      }
      if (tagOf(old) !== tagOf(s)) {
        puts.push(s);
        if (e.kind === 'file') {
          if (emit) changes.push({ type: 'update', kind: 'file', path: e.path, metadata: s, occurredAt: s.modified });
        } else queue.push(e.path); // folder tags are not activity, but something below changed
      } else if (e.kind === 'folder' && !(opts.deepFolderEtags && e.etag)) {
        queue.push(e.path);
      }
    }
    for (const gone of before.values()) deleted.push(gone);
  };

  while (queue.length) {
    const batch = queue.splice(0, opts.concurrency);
    await Promise.all(batch.map(visit));
  }

  // Pair deletes with adds of the same content: rename (same folder) or move.
  const addsByTag = new Map<string, EntrySnapshot[]>();
  for (const a of added) if (a.etag) addsByTag.set(`${a.kind}|${a.etag}|${a.size}`, [...(addsByTag.get(`${a.kind}|${a.etag}|${a.size}`) ?? []), a]);
  const moved = new Set<string>();
  const suppressed = new Set<string>();
  for (const d of deleted) {
    removes.push(d.path);
    const key = `${d.kind}|${d.etag}|${d.size}`;
    const candidates = d.etag ? (addsByTag.get(key) ?? []).filter((a) => !moved.has(a.path)) : [];
    const deletedSame = deleted.filter((x) => `${x.kind}|${x.etag}|${x.size}` === key).length;
    if (candidates.length === 1 && deletedSame === 1) {
      const a = candidates[0]!;
      moved.add(a.path);
      if (emit) {
        const type = parentOf(a.path) === d.parent ? 'rename' : 'move';
        changes.push({ type, kind: a.kind as 'file' | 'folder', path: a.path, previousPath: d.path, metadata: a, previousMetadata: fromRow(d), occurredAt: a.modified });
      }
      if (a.kind === 'folder') {
        // Entries that came along with a moved folder are not new.
        const oldTree = new Map(snap.subtree(d.path).map((r) => [r.path.slice(d.path.length), tagOf(r)]));
        for (const x of added) if (x.path.startsWith(`${a.path}/`) && oldTree.get(x.path.slice(a.path.length)) === tagOf(x)) suppressed.add(x.path);
      }
    } else if (emit) {
      changes.push({ type: 'delete', kind: d.kind, path: d.path, metadata: null, previousMetadata: fromRow(d) });
    }
  }
  if (emit) {
    for (const a of added) {
      if (moved.has(a.path) || suppressed.has(a.path)) continue;
      changes.push({ type: 'add', kind: a.kind as 'file' | 'folder', path: a.path, metadata: a, occurredAt: a.modified });
    }
  }
  return { changes: orderChanges(changes), puts, removes, listed };
}

/** Deletes first (deepest first), then renames/moves, then adds (parents first), then updates. */
function orderChanges(changes: ActivityChange[]): ActivityChange[] {
  const rank = { delete: 0, rename: 1, move: 1, restore: 2, add: 2, copy: 2, update: 3 } as const;
  return changes
    .map((c, i) => ({ c, i }))
    .sort((x, y) => rank[x.c.type] - rank[y.c.type] || (x.c.type === 'add' ? x.c.path.length - y.c.path.length : 0) || x.i - y.i)
    .map((x) => x.c);
}

type Emit = (sub: Subscription, info: { count: number }) => void;

/** One follower: owns its timer or watcher and reports its status. */
class Follower {
  status: FollowerStatus;
  private timer: NodeJS.Timeout | null = null;
  private watcher: Watcher | { close(): Promise<void> } | null = null;
  private stopped = false;
  private failures = 0;
  private running: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private watchQueue: Promise<void> = Promise.resolve();
  private readonly snap: Snapshot;

  constructor(
    private readonly sub: Subscription,
    private readonly deps: { db: Db; log: ActivityLog; subs: SubscriptionsService; accounts: AccountsService; clock: Clock; emit: Emit },
    private readonly opts: FollowerOptions,
  ) {
    this.snap = new Snapshot(deps.db, sub.id);
    this.status = { subscription: sub.id, account: sub.account, mode: 'polling', intervalMs: opts.pollIntervalMs, lastRunAt: null, nextRunAt: null, error: null };
  }

  /** The connector instance a watch was opened on (a new instance means a new watch). */
  watchedConnector: StorageConnector | null = null;

  async start(): Promise<void> {
    if (this.sub.api === 'email') return this.startMail();
    const c = await this.deps.accounts.storage(this.sub.account);
    if (this.sub.subscriptionType === 'crawl') {
      if (this.sub.crawlDone) return void (this.status.mode = 'done');
      this.status.mode = 'crawling';
      return this.schedule(0);
    }
    if (c.features.watch && !this.opts.forcePolling) {
      await this.runOnce(); // catch-up walk (or baseline) before trusting the watch
      if (this.stopped) return;
      const roots = await this.deps.subs.monitoredPaths(this.sub);
      this.watcher = await c.features.watch(
        // Batches are applied one at a time, in the order the watcher reported them.
        (raw) => void (this.watchQueue = this.watchQueue.then(() => this.onWatch(c, roots, raw)).catch((e) => this.failed(e))),
        (e) => this.onWatchError(e),
      );
      // A change made between that walk and the watch being ready was reported to neither:
      // walk once more, in line with the watch's batches (both skip what the snapshot knows).
      this.watchQueue = this.watchQueue.then(() => this.runOnce()).catch((e) => this.failed(e));
      this.watchedConnector = c;
      this.status.mode = 'watching';
      this.status.intervalMs = null;
      return;
    }
    this.status.mode = 'polling';
    this.schedule(0);
  }

  /** Runs one walk now (tests, "refresh now"); resolves when its activity is committed. */
  runOnce(): Promise<void> {
    if (!this.running) this.running = this.tick().finally(() => (this.running = null));
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.status.nextRunAt = new Date(this.deps.clock() + ms).toISOString();
    this.timer = setTimeout(() => void this.runOnce().then(() => this.afterRun()), ms);
    this.timer.unref?.();
  }

  private afterRun(): void {
    if (this.stopped || this.status.mode === 'done' || this.status.mode === 'watching') return;
    const delay = this.delay();
    this.status.intervalMs = delay;
    this.schedule(delay);
  }

  private delay(): number {
    return this.failures ? Math.min(this.opts.pollIntervalMs * 2 ** this.failures, this.opts.maxBackoffMs) : this.opts.pollIntervalMs;
  }

  /**
   * A walk or a watched batch could not be recorded (the data disk is full, the backend failed):
   * the status says why, and the snapshot has not moved. A watching follower then walks again
   * after the back-off (the walk against the snapshot finds what the lost batch held) until
   * one succeeds; a polling one does so on its next poll.
   */
  private failed(e: unknown): void {
    this.failures++;
    this.status.error = toServiceError(e).message;
    try {
      this.deps.subs.markAccessible(this.sub.id, false);
    } catch {
      // The database itself may be what failed; the status above still tells.
    }
    this.deps.emit(this.sub, { count: 0 });
    if (this.status.mode !== 'watching' || this.stopped || this.retryTimer) return;
    const delay = this.delay();
    this.status.nextRunAt = new Date(this.deps.clock() + delay).toISOString();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.watchQueue = this.watchQueue.then(() => this.runOnce()).catch((e2) => this.failed(e2));
    }, delay);
    this.retryTimer.unref?.();
  }

  private async tick(): Promise<void> {
    try {
      const c = await this.deps.accounts.storage(this.sub.account);
      const roots = await this.deps.subs.monitoredPaths(this.sub);
      const crawl = this.sub.subscriptionType === 'crawl';
      const state = this.snap.state();
      const r = await walk(c, this.snap, outermost(roots), {
        emitAdds: crawl || state.baseline,
        deepFolderEtags: this.opts.deepFolderEtags,
        concurrency: this.opts.concurrency,
      });
      if (this.stopped) return;
      const info = this.deps.log.append(this.sub.id, this.sub.account, r.changes, () => {
        for (const p of r.removes) this.snap.remove(p);
        for (const p of r.puts) this.snap.put(p);
        this.snap.setState(`walk:${new Date(this.deps.clock()).toISOString()}`, true);
        if (crawl) this.deps.subs.markCrawlDone(this.sub.id);
        this.deps.subs.markAccessible(this.sub.id, true);
      });
      const recovered = this.status.error !== null;
      this.failures = 0;
      this.status.error = null;
      if (crawl) this.status.mode = 'done';
      else if (this.status.mode === 'backing-off') this.status.mode = 'polling';
      if (info || recovered) this.deps.emit(this.sub, info ?? { count: 0 });
    } catch (e) {
      if (this.status.mode !== 'watching' && this.status.mode !== 'done') this.status.mode = 'backing-off';
      this.failed(e);
    } finally {
      this.status.lastRunAt = new Date(this.deps.clock()).toISOString();
    }
  }

  private async onWatch(c: StorageConnector, roots: string[], raw: RawChange[]): Promise<void> {
    if (this.stopped) return;
    // Entries the watcher did not include are looked up; gone again = nothing to record.
    const prepared: { ch: RawChange; entry: Entry | null }[] = [];
    for (const raw0 of raw) {
      let ch = raw0;
      if (!roots.some((r) => isUnder(ch.path, r) || (ch.previousPath && isUnder(ch.previousPath, r)))) continue;
      let entry = ch.entry ?? null;
      if (!entry && ch.type !== 'delete') entry = await c.stat(ch.path).catch(() => null);
      if (!entry && ch.type !== 'delete') continue;
      // Watchers may report a rename as add-then-delete: an added entry with the tag of a known
      // entry that no longer exists is that entry renamed or moved.
      // The same holds for a rename/move whose reported source we do not know (watchers that
      // paired the wrong events): the known entry with that tag that is gone is the source.
      const unknownSource = (ch.type === 'rename' || ch.type === 'move') && ch.previousPath && !this.snap.get(ch.previousPath);
      if (((ch.type === 'add' && !this.snap.get(ch.path)) || unknownSource) && entry?.etag) {
        for (const old of this.snap.withEtag(entry.etag, entry.kind, ch.path)) {
          const gone = await c.stat(old.path).then(() => false, (e) => toServiceError(e).code === 'not_found');
          if (gone) {
            ch = { ...ch, type: parentOf(old.path) === parentOf(ch.path) ? 'rename' : 'move', previousPath: old.path };
            break;
          }
        }
      }
      prepared.push({ ch, entry });
    }
    // A delete reported for the source of a detected rename/move is part of that move.
    const movedFrom = new Set(prepared.filter((p) => p.ch.type === 'rename' || p.ch.type === 'move').map((p) => p.ch.previousPath));
    for (let i = prepared.length - 1; i >= 0; i--) if (prepared[i]!.ch.type === 'delete' && movedFrom.has(prepared[i]!.ch.path)) prepared.splice(i, 1);
    const info = this.deps.log.append(this.sub.id, this.sub.account, () => {
      const changes: ActivityChange[] = [];
      for (const { ch, entry } of prepared) {
        const s = entry ? snapshotOf(entry) : null;
        const old = this.snap.get(ch.previousPath ?? ch.path);
        if (ch.type === 'delete') {
          if (!old) continue; // already known gone (catch-up walk saw it)
          this.snap.remove(ch.path);
          changes.push({ type: 'delete', kind: old.kind, path: ch.path, metadata: null, previousMetadata: fromRow(old) });
        } else if (ch.type === 'rename' || ch.type === 'move') {
          if (!ch.previousPath) continue;
          const there = this.snap.get(ch.path);
          if (!old && there && tagOf(there) === tagOf(s!)) continue; // came along with its renamed folder
          this.snap.remove(ch.path);
          this.snap.rename(ch.previousPath, ch.path);
          this.snap.put(s!);
          changes.push({ type: ch.type, kind: ch.kind, path: ch.path, previousPath: ch.previousPath, metadata: s, previousMetadata: old ? fromRow(old) : { ...s!, path: ch.previousPath, name: baseName(ch.previousPath) }, occurredAt: s!.modified });
        } else {
          if (old && old.kind === s!.kind && tagOf(old) === tagOf(s!)) continue; // duplicate of what we know
          this.snap.put(s!);
          if (s!.kind === 'folder' && ch.type === 'update') continue; // folder mtime noise
          changes.push({ type: old ? 'update' : 'add', kind: s!.kind as 'file' | 'folder', path: ch.path, metadata: s, occurredAt: s!.modified });
        }
      }
      return changes;
    });
    if (info) this.deps.emit(this.sub, info);
  }

  private onWatchError(e: Error): void {
    this.status.error = e.message;
    this.failures++;
    // The watch is unreliable now: fall back to polling with back-off until restarted.
    void this.watcher?.close().catch(() => {});
    this.watcher = null;
    this.status.mode = 'backing-off';
    this.afterRun();
  }

  /** Mail: the sync engine pushes changes (ActivityService.recordMailChanges); nothing to run here. */
  private async startMail(): Promise<void> {
    this.status.mode = 'watching';
    this.status.intervalMs = null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.status.mode = 'stopped';
    this.status.nextRunAt = null;
    await this.running?.catch(() => {});
    await this.watcher?.close().catch(() => {});
  }
}

/**
 * Keeps one follower per active subscription: started at boot, on subscription changes and
 * stopped on pause/delete/close.
 */
export class FollowerManager {
  private readonly followers = new Map<number, Follower>();
  private readonly startFailures = new Map<number, number>();
  private closed = false;
  private readonly off: () => void;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { db: Db; log: ActivityLog; subs: SubscriptionsService; accounts: AccountsService; clock?: Clock; emit: Emit },
    private readonly options: Partial<FollowerOptions> & { perService?: Record<string, Partial<FollowerOptions>> } = {},
  ) {
    this.off = deps.subs.onChange(() => void this.sync());
  }

  /** Starts and stops followers to match the active subscriptions. */
  sync(): Promise<void> {
    this.queue = this.queue.then(() => this.doSync()).catch(() => {});
    return this.queue;
  }

  private async doSync(): Promise<void> {
    if (this.closed) return;
    const wanted = new Map(this.deps.subs.all().filter((s) => s.active).map((s) => [s.id, s]));
    for (const [id, f] of this.followers) {
      if (!wanted.has(id)) {
        this.followers.delete(id);
        await f.stop();
      }
    }
    // A watch lives on one connector instance; the account's instance is replaced when its
    // settings change (and closed with its watchers), so such followers start over.
    for (const [id, f] of this.followers) {
      if (!f.watchedConnector) continue;
      const current = await this.deps.accounts.storage(f.status.account).catch(() => null);
      if (current !== f.watchedConnector) {
        this.followers.delete(id);
        await f.stop();
      }
    }
    for (const [id, sub] of wanted) {
      if (this.followers.has(id)) continue;
      const service = this.deps.accounts.row(sub.account).service;
      const opts = { ...DEFAULT_FOLLOWER_OPTIONS, ...this.options, ...this.options.perService?.[service] };
      const f = new Follower(sub, { ...this.deps, clock: this.deps.clock ?? systemClock }, opts);
      this.followers.set(id, f);
      await f.start().then(
        () => this.startFailures.delete(id),
        (e) => {
          // Could not even start (account disabled, server down): try again with back-off.
          const n = (this.startFailures.get(id) ?? 0) + 1;
          this.startFailures.set(id, n);
          const delay = Math.min(opts.pollIntervalMs * 2 ** n, opts.maxBackoffMs);
          f.status.mode = 'backing-off';
          f.status.error = toServiceError(e).message;
          f.status.intervalMs = delay;
          try {
            this.deps.subs.markAccessible(id, false);
          } catch {
            // A full data disk: the status above still tells, and the retry below still runs.
          }
          const t = setTimeout(() => {
            if (this.followers.get(id) !== f || this.closed) return;
            this.followers.delete(id);
            void f.stop().then(() => this.sync());
          }, delay);
          t.unref();
        },
      );
    }
  }

  status(): FollowerStatus[] {
    return [...this.followers.values()].map((f) => ({ ...f.status }));
  }

  /** Polls one subscription now; resolves after its activity is committed. */
  async pollNow(subscriptionId: number): Promise<void> {
    await this.queue;
    const f = this.followers.get(subscriptionId);
    if (f) await f.runOnce();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.off();
    await this.queue;
    for (const f of this.followers.values()) await f.stop();
    this.followers.clear();
  }
}
