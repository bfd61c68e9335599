/** One follower: one subscription's timer or watch, its walks, and its status. */
import type { Db } from '../cache/db';
import { baseName, parentOf } from '../connectors/shared/paths';
import type { Entry, RawChange, StorageConnector, Watcher } from '../connectors/types';
import { toServiceError } from '../errors';
import type { AccountsService } from '../services/accounts';
import type { ActivityLog } from './log';
import { fromRow, isUnder, outermost, Snapshot, snapshotOf, tagOf } from './snapshot';
import type { Subscription, SubscriptionsService } from './subscriptions';
import type { ActivityChange, Clock } from './types';
import { walkCheckpoint } from './cursor';
import { walk } from './walk';

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

export type Emit = (sub: Subscription, info: { count: number }) => void;

/** One follower: owns its timer or watcher and reports its status. */
export class Follower {
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
        this.snap.setState(walkCheckpoint(new Date(this.deps.clock())), true);
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
          changes.push({ type: ch.type, kind: ch.kind, path: ch.path, previousPath: ch.previousPath, metadata: s, previousMetadata: old ? fromRow(old) : { ...s!, path: ch.previousPath, name: baseName(ch.previousPath) } });
        } else {
          if (old && old.kind === s!.kind && tagOf(old) === tagOf(s!)) continue; // duplicate of what we know
          this.snap.put(s!);
          if (s!.kind === 'folder' && ch.type === 'update') continue; // folder mtime noise
          changes.push({ type: old ? 'update' : 'add', kind: s!.kind as 'file' | 'folder', path: ch.path, metadata: s });
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
