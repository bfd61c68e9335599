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
import { toServiceError } from '../errors';
import type { AccountsService } from '../services/accounts';
import { DEFAULT_FOLLOWER_OPTIONS, Follower, type Emit, type FollowerOptions, type FollowerStatus } from './follower';
import type { ActivityLog } from './log';
import type { SubscriptionsService } from './subscriptions';
import { systemClock, type Clock } from './types';

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
