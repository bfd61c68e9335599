/**
 * Remote changes of the sync pairs, without an activity subscription (docs/sync.md, *When a pair
 * runs*). What a pair's run last saw of its remote folder is the stored remote tree; a change is
 * anything that differs from it, so the pair's own writes (already in that tree once its run
 * ends) trigger nothing, and a change that a failed run left behind is found again.
 *
 * - An account whose connector pushes changes (`features.watch`: the local account) is watched,
 *   one watch per account; the paths it reports inside a pair's folder are compared with the
 *   stored tree once the pair's current run (if any) is over.
 * - Every other backend has each pair's remote folder walked every few seconds (setting
 *   `sync.remotePollSeconds`) and at once when an activity follower of the account recorded
 *   something: a listing diff against the stored tree, stopping at the first difference. Where
 *   folder ETags change with anything below them (`deepFolderEtags`), a folder whose ETag is the
 *   one of the last walk that found nothing is not listed again.
 *
 * Nothing here writes into the activity log: these walks belong to the sync engine.
 */
import { isInside, joinPath, parentOf, ROOT } from '../connectors/shared/paths';
import type { Entry, RawChange, StorageConnector, Watcher } from '../connectors/types';
import { toServiceError } from '../errors';
import type { Tree } from './model';
import { remoteAbs, remoteEntry, type Ignored } from './scan';
import type { PairRow } from './store';

export const DEFAULT_REMOTE_POLL_SECONDS = 5;
/** An account that pushes changes is still walked this often (a lost event waits this long at most). */
const SAFETY_WALK_MS = 10 * 60_000;

export interface RemoteWatchDeps {
  /** The pairs to follow (not paused). */
  pairs: () => PairRow[];
  connector: (account: number) => Promise<StorageConnector>;
  /** The remote tree the pair's last scan stored. */
  stored: (pair: number) => Tree;
  ignored: (pair: PairRow) => Promise<Ignored>;
  /** The pair's run in progress, if any. */
  busy: (pair: number) => Promise<unknown> | undefined;
  /** Something changed on the pair's remote side: run it. */
  trigger: (pair: number, why: RemoteChange) => void;
  /** Milliseconds between two walks of a pair whose backend cannot push. */
  intervalMs: () => number;
  /** Folder ETags of this account change when anything below changes. */
  deepFolderEtags?: (account: number) => boolean;
}

/** What made a pair run: the first differing path (pair-relative) and how it was found. */
export interface RemoteChange {
  path: string;
  by: 'watch' | 'walk';
}

interface AccountWatch {
  connector: StorageConnector;
  watcher: Promise<Watcher | null>;
}

export class RemoteWatch {
  private readonly timer: NodeJS.Timeout;
  private readonly watches = new Map<number, AccountWatch>();
  /** Accounts whose watch is ready. */
  private readonly watching = new Set<number>();
  /** Accounts whose watch failed: walked like the others until their connector changes. */
  private readonly noWatch = new Map<number, StorageConnector>();
  private readonly walkedAt = new Map<number, number>();
  private readonly walking = new Set<number>();
  private readonly comparing = new Set<number>();
  /** Per pair: the ETags of its folders at the last walk that found nothing (deep ETags only). */
  private readonly folderTags = new Map<number, Map<string, string>>();
  /** Per pair: pair-relative paths a watch reported, waiting to be compared. */
  private readonly reported = new Map<number, Set<string>>();
  private closed = false;

  constructor(private readonly deps: RemoteWatchDeps) {
    this.timer = setInterval(() => void this.tick(), 250);
    this.timer.unref();
  }

  /** An activity follower of `account` recorded something: its pairs are walked now. */
  poke(account: number): void {
    for (const p of this.deps.pairs()) if (p.account === account && !this.watches.has(account)) void this.walk(p);
  }

  /** How each followed pair learns of remote changes now (`watch` once the watch is ready). */
  modes(): Record<number, 'watch' | 'walk'> {
    const out: Record<number, 'watch' | 'walk'> = {};
    for (const p of this.deps.pairs()) out[p.id] = this.watching.has(p.account) ? 'watch' : 'walk';
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.watches.keys()].map((a) => this.unwatch(a)));
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    const pairs = this.deps.pairs();
    const accounts = new Set(pairs.map((p) => p.account));
    for (const a of this.watches.keys()) if (!accounts.has(a)) void this.unwatch(a);
    const every = this.deps.intervalMs();
    for (const p of pairs) {
      const c = await this.deps.connector(p.account).catch(() => null);
      if (!c || this.closed) continue;
      const w = this.watches.get(p.account);
      // A new connector instance (account reconnected): its watch starts over.
      if (w && w.connector !== c) await this.unwatch(p.account);
      if (this.noWatch.has(p.account) && this.noWatch.get(p.account) !== c) this.noWatch.delete(p.account);
      const pushed = !!c.features.watch && !this.noWatch.has(p.account);
      if (pushed && !this.watches.has(p.account)) this.startWatch(p.account, c);
      // A pair seen for the first time runs anyway (start, creation): its first walk comes later.
      // A watched account is still walked now and then, in case the watch missed something.
      const due = pushed ? SAFETY_WALK_MS : every;
      if (!this.walkedAt.has(p.id)) this.walkedAt.set(p.id, Date.now());
      else if (due > 0 && Date.now() - this.walkedAt.get(p.id)! >= due) void this.walk(p);
    }
  }

  private startWatch(account: number, c: StorageConnector): void {
    const watcher = c.features
      .watch!(
        (changes) => this.pushed(account, changes),
        () => {
          this.noWatch.set(account, c);
          void this.unwatch(account);
        },
      )
      .catch(() => {
        this.noWatch.set(account, c);
        return null;
      });
    this.watches.set(account, { connector: c, watcher });
    void watcher.then((w) => {
      if (!w) {
        if (this.watches.get(account)?.watcher === watcher) this.watches.delete(account);
        return;
      }
      // What changed between the last run's scan and the watch being ready was pushed to nobody.
      void Promise.all(this.deps.pairs().filter((p) => p.account === account).map((p) => this.walk(p))).then(() => {
        if (this.watches.get(account)?.watcher === watcher) this.watching.add(account);
      });
    });
  }

  private async unwatch(account: number): Promise<void> {
    const w = this.watches.get(account);
    if (!w) return;
    this.watches.delete(account);
    this.watching.delete(account);
    await (await w.watcher)?.close().catch(() => {});
  }

  private pushed(account: number, changes: RawChange[]): void {
    for (const p of this.deps.pairs()) {
      if (p.account !== account) continue;
      for (const ch of changes) {
        for (const abs of [ch.path, ch.previousPath]) {
          const rel = abs === undefined ? undefined : below(p.remotePath, abs);
          if (rel === undefined || rel === ROOT) continue;
          let set = this.reported.get(p.id);
          if (!set) this.reported.set(p.id, (set = new Set()));
          set.add(rel);
        }
      }
      if (this.reported.has(p.id)) void this.compareReported(p);
    }
  }

  /** Compares the reported paths with the stored tree once the pair's run is over. */
  private async compareReported(p: PairRow): Promise<void> {
    if (this.comparing.has(p.id)) return;
    this.comparing.add(p.id);
    try {
      for (;;) {
        await this.deps.busy(p.id)?.catch(() => {});
        const paths = this.reported.get(p.id);
        this.reported.delete(p.id);
        if (!paths?.size || this.closed) return;
        const c = await this.deps.connector(p.account);
        const ignored = await this.deps.ignored(p);
        const stored = this.deps.stored(p.id);
        for (const path of paths) {
          const entry = await c.stat(remoteAbs(p.remotePath, path)).catch((e) => (toServiceError(e).code === 'not_found' ? null : undefined));
          if (entry === undefined) {
            this.deps.trigger(p.id, { path, by: 'watch' }); // cannot tell: let the run look
            break;
          }
          if (!differs(stored, path, entry, ignored)) continue;
          this.deps.trigger(p.id, { path, by: 'watch' });
          break;
        }
      }
    } catch {
      /* the account went away: the next pushed change or run tries again */
    } finally {
      this.comparing.delete(p.id);
    }
  }

  /** One walk of the pair's remote folder against the stored tree; a difference triggers a run. */
  private async walk(p: PairRow): Promise<void> {
    if (this.walking.has(p.id) || this.closed) return;
    this.walking.add(p.id);
    try {
      // The run scans the remote folder itself; a walk during it would only see its own writes.
      if (this.deps.busy(p.id)) return;
      const c = await this.deps.connector(p.account);
      const deep = this.deps.deepFolderEtags?.(p.account) ?? false;
      const tags = deep ? new Map<string, string>() : undefined;
      const found = await remoteDiff(c, p.remotePath, this.deps.stored(p.id), await this.deps.ignored(p), deep ? this.folderTags.get(p.id) : undefined, tags);
      if (found !== undefined) this.deps.trigger(p.id, { path: found, by: 'walk' });
      else if (tags) this.folderTags.set(p.id, tags);
    } catch {
      // A failing server: the next walk tries again (a run would refuse or fail the same way).
    } finally {
      this.walkedAt.set(p.id, Date.now());
      this.walking.delete(p.id);
    }
  }
}

/** A remote `path` relative to a pair's remote `root`, when inside it (`/` for the root itself). */
export function below(root: string, path: string): string | undefined {
  if (path === root) return ROOT;
  return isInside(path, root) ? (root === ROOT ? path : path.slice(root.length)) : undefined;
}

/** Whether an upstream entry (null: gone) at a pair-relative path differs from the stored tree. */
function differs(stored: Tree, path: string, entry: Entry | null, ignored: Ignored): boolean {
  const known = stored.get(path);
  if (!entry) return !!known;
  if (ignored(path, entry.kind)) return false;
  if (!known || known.kind !== entry.kind) return true;
  return entry.kind === 'file' && remoteEntry(entry, path).ver !== known.ver;
}

/**
 * Lists the pair's remote folder breadth first and returns the first pair-relative path where it
 * differs from `stored` (undefined: the same). With `lastTags` (deep folder ETags), a folder
 * whose ETag is unchanged is not listed; `tags` collects the ETags seen.
 */
export async function remoteDiff(c: StorageConnector, root: string, stored: Tree, ignored: Ignored, lastTags?: Map<string, string>, tags?: Map<string, string>, concurrency = 4): Promise<string | undefined> {
  const kids = new Map<string, string[]>();
  for (const path of stored.keys()) {
    const parent = parentOf(path);
    const list = kids.get(parent);
    if (list) list.push(path);
    else kids.set(parent, [path]);
  }
  let queue = [ROOT];
  while (queue.length) {
    const batch = queue.splice(0, concurrency);
    const next: string[] = [];
    const results = await Promise.all(
      batch.map(async (folder) => {
        const listed = await c.list(remoteAbs(root, folder));
        const seen = new Set<string>();
        for (const e of listed) {
          const path = joinPath(folder, e.name);
          if (ignored(path, e.kind)) continue;
          seen.add(path);
          if (differs(stored, path, e, () => false)) return path;
          if (e.kind !== 'folder') continue;
          if (e.etag) tags?.set(path, e.etag);
          if (!(e.etag && lastTags?.get(path) === e.etag)) next.push(path);
        }
        return (kids.get(folder) ?? []).find((p) => !seen.has(p));
      }),
    );
    const found = results.find((r) => r !== undefined);
    if (found !== undefined) return found;
    queue = [...queue, ...next];
  }
  return undefined;
}
