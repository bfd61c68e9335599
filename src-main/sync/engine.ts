/**
 * The sync engine: keeps each pair in step. A run scans both sides (a full rescan: the planner
 * needs no cursor, so a follower's reset or a restart costs one walk, never a wrong delete),
 * plans, executes the batch a few operations at a time, and plans again until nothing is left.
 * Runs are triggered by the local folder's watch (tree-watch.ts), by remote changes (remote-watch.ts:
 * the account's watch, or a walk every few seconds and when an activity follower recorded
 * something), on start, and on demand; one run per pair at a time, a trigger during a run asks
 * for one more.
 */
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { LOCAL_CASE_SENSITIVE, LocalConnector } from '../connectors/local';
import { watchTree, type TreeWatch } from '../connectors/local/tree-watch';
import { baseName, parentOf, ROOT } from '../connectors/shared/paths';
import type { StorageConnector } from '../connectors/types';
import { ServiceError, toServiceError } from '../errors';
import type { Op, Plan, PlanOptions, Side, Tree } from './model';
import { checkRacy, Executor, type OpResult } from './executor';
import { planSync } from './planner';
import { below, DEFAULT_REMOTE_POLL_SECONDS, RemoteWatch, type RemoteChange } from './remote-watch';
import { IGNORE_FILE, loadIgnore, localRootPresent, localUnchanged, remoteRootPresent, remoteUnchanged, scanLocal, scanRemote } from './scan';
import { SyncStore, type PairRow } from './store';

export interface SyncEngineOptions {
  /** Where deleted local files go; the desktop trash when absent. */
  trashDir?: string;
  /** Time between two walks of a remote folder whose backend cannot push (ms); 0: none. Overrides `remotePollMs`. */
  pollMs?: number;
  /** The same, read at each walk (the `sync.remotePollSeconds` setting); 5 s when neither is given. */
  remotePollMs?: () => number;
  /** Folder ETags of this account change with anything below them: unchanged folders are not walked. */
  deepFolderEtags?: (account: number) => boolean;
  /** Quiet time after a local change before a run (ms). */
  debounceMs?: number;
  /** Operations run at once. */
  concurrency?: number;
  /** Planning rounds per run before it stops and reports an error. */
  maxRounds?: number;
  /** Time before a run that failed is tried again (ms); 30 s by default. */
  retryMs?: number;
  /** No watch, no poll, no run of its own: runs only when asked (tests, benchmarks). */
  manual?: boolean;
}

export interface PairStatus extends PairRow {
  /** Operations left in the current batch (the "syncing N" figure). */
  pending: number;
  conflicts: number;
}

export interface RunResult {
  rounds: number;
  ops: number;
  plan: Plan;
  /** Operations this run stopped trying (they failed the same way in two rounds), with why. */
  failed: { path: string; message: string }[];
}

/** An operation that failed: what it was (kind, side, path) and how it failed. */
interface Failure {
  key: string;
  side?: Side;
  path: string;
  code: string;
  message: string;
  /** Rounds in a row it failed with this code. */
  rounds: number;
}

export class SyncEngine {
  readonly store: SyncStore;
  private readonly running = new Map<number, Promise<RunResult>>();
  private readonly again = new Set<number>();
  private readonly pending = new Map<number, number>();
  private readonly watchers = new Map<number, TreeWatch>();
  /**
   * Per pair with a ready watch: the local folders (pair-relative) the watch saw change since
   * the last local scan began. Absent: the next scan reads every folder.
   */
  private readonly dirty = new Map<number, Set<string>>();
  private readonly ready = new Set<number>();
  private readonly fullScanAt = new Map<number, number>();
  /** Pairs whose last plan was empty with nothing held; no operation ran since (kept in the database). */
  private get settled() {
    return this.store.settled;
  }
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private readonly retries = new Map<number, NodeJS.Timeout>();
  /** Per pair: the operations its last run stopped trying; the next run tries each once more. */
  private readonly failed = new Map<number, Failure[]>();
  private remote?: RemoteWatch;
  private closed = false;
  private readonly listeners = new Set<(pair: number) => void>();
  private readonly remoteListeners = new Set<(pair: number, change: RemoteChange) => void>();

  constructor(
    db: SyncStore['db'],
    private readonly remoteOf: (account: number) => Promise<StorageConnector>,
    private readonly options: SyncEngineOptions = {},
  ) {
    this.store = new SyncStore(db);
  }

  /** Called whenever a pair's state or counts change. */
  onChange(fn: (pair: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  private changed(pair: number) {
    for (const fn of this.listeners) fn(pair);
  }

  /** Called when a remote change (not the pair's own write) makes a pair run. */
  onRemoteChange(fn: (pair: number, change: RemoteChange) => void): () => void {
    this.remoteListeners.add(fn);
    return () => this.remoteListeners.delete(fn);
  }

  /** How each running pair learns of remote changes: its account's watch, or walks. */
  remoteModes(): Record<number, 'watch' | 'walk'> {
    return this.remote?.modes() ?? {};
  }

  /** An activity follower recorded changes of `account`: its pairs look at their remote folder now. */
  remoteChanged(account: number): void {
    this.remote?.poke(account);
  }

  /** Resumes every pair's journal, starts the watches of both sides, and runs each pair once. */
  async start(): Promise<void> {
    for (const p of this.store.pairs()) {
      // A pair whose account cannot be reached now resumes its journal on its next run.
      await this.makeExecutor(p)
        .then((x) => x.resume())
        .catch((e) => this.store.update(p.id, { state: 'error', error: toServiceError(e).message }));
      if (!p.paused) this.watchPair(p);
    }
    if (this.options.manual) return;
    this.remote = new RemoteWatch({
      pairs: () => this.store.pairs().filter((p) => !p.paused),
      connector: this.remoteOf,
      stored: (pair) => this.store.tree(pair, 'remote'),
      ignored: (p) => loadIgnore(p.localPath, p.excluded),
      busy: (pair) => this.running.get(pair),
      trigger: (pair, change) => {
        for (const fn of this.remoteListeners) fn(pair, change);
        void this.run(pair).catch(() => {});
      },
      intervalMs: () => this.options.pollMs ?? this.options.remotePollMs?.() ?? DEFAULT_REMOTE_POLL_SECONDS * 1000,
      deepFolderEtags: this.options.deepFolderEtags,
    });
    this.triggerAll();
  }

  private triggerAll() {
    for (const p of this.store.pairs()) if (!p.paused) void this.run(p.id).catch(() => {});
  }

  status(): PairStatus[] {
    const conflicts = this.store.conflicts();
    return this.store.pairs().map((p) => ({ ...p, pending: this.pending.get(p.id) ?? 0, conflicts: conflicts.filter((c) => c.pair === p.id).length }));
  }

  /**
   * The sync state of the entries of a listed folder of `account` (docs/sync.md, *Badges*), by
   * name, from the stored trees (no scan): the folder is inside a pair's remote folder, or, with
   * `localFolder` (the account's folder on this computer), inside a pair's local folder. A pair
   * root listed in its parent gets the pair's state. Names no scan has seen have no state.
   */
  fileStates(account: number, folder: string, localFolder?: string): Record<string, FileSyncState> {
    const out: Record<string, FileSyncState> = {};
    const abs = localFolder && join(resolve(localFolder), ...folder.split('/').filter(Boolean));
    const conflicts = this.store.conflicts();
    for (const p of this.status()) {
      const rel = (p.account === account ? below(p.remotePath, folder) : undefined) ?? (abs ? localBelow(p.localPath, abs) : undefined);
      if (rel === undefined) {
        // The pair's root itself, listed in its parent folder.
        const root = p.account === account && p.remotePath !== ROOT && parentOf(p.remotePath) === folder ? p.remotePath : abs && dirname(p.localPath) === abs ? p.localPath : undefined;
        if (root !== undefined) out[basename(root)] = p.conflicts > 0 ? 'conflict' : p.state === 'idle' && !p.paused ? 'synced' : 'pending';
        continue;
      }
      const mine = conflicts.filter((c) => c.pair === p.id).flatMap((c) => [c.path, c.copyPath]);
      const rows = new Map<string, { local?: string | null; remote?: string | null; synced?: { local: string | null; remote: string | null }; kind: string }>();
      for (const r of this.store.children(p.id, rel)) {
        const e = rows.get(r.path) ?? { kind: r.kind };
        if (r.tree === 'synced') e.synced = { local: r.ver, remote: r.remoteVer };
        else e[r.tree] = r.ver;
        rows.set(r.path, e);
      }
      for (const [path, e] of rows) {
        if (e.local === undefined && e.remote === undefined) continue;
        const inConflict = mine.some((c) => c === path || c.startsWith(`${path}/`));
        const same = !!e.synced && e.local !== undefined && e.remote !== undefined && (e.kind === 'folder' || (e.local === e.synced.local && e.remote === e.synced.remote));
        out[baseName(path)] = inConflict ? 'conflict' : same ? 'synced' : 'pending';
      }
    }
    return out;
  }

  async create(p: { localPath: string; account: number; remotePath: string; excluded?: string[] }): Promise<PairRow> {
    const localPath = resolve(p.localPath);
    if (!(await localRootPresent(localPath))) throw new ServiceError('invalid_parameters', `${localPath} is not an existing folder.`);
    const remote = await this.remoteOf(p.account);
    const remotePath = p.remotePath.replace(/\/+$/, '') || ROOT;
    if (!(await remoteRootPresent(remote, remotePath))) throw new ServiceError('invalid_parameters', `${remotePath} is not an existing folder of this account.`);
    for (const other of this.store.pairs()) {
      if (localPath === other.localPath || localPath.startsWith(`${other.localPath}/`) || other.localPath.startsWith(`${localPath}/`))
        throw new ServiceError('conflict', `${localPath} overlaps the synced folder ${other.localPath}.`);
    }
    const row = this.store.createPair({ ...p, localPath, remotePath, excluded: excludedList(p.excluded ?? []) });
    this.watchPair(row);
    if (!this.options.manual) void this.run(row.id).catch(() => {});
    return row;
  }

  async remove(id: number): Promise<void> {
    this.store.pair(id);
    await this.unwatch(id);
    await this.running.get(id)?.catch(() => {});
    this.store.removePair(id);
    this.settled.delete(id);
    this.failed.delete(id);
    this.changed(id);
  }

  async pause(id: number): Promise<void> {
    this.store.update(id, { paused: true });
    await this.unwatch(id);
    this.changed(id);
  }

  resume(id: number): void {
    this.store.update(id, { paused: false });
    this.watchPair(this.store.pair(id));
    this.changed(id);
    if (!this.options.manual) void this.run(id).catch(() => {});
  }

  /**
   * Replaces the pair's excluded folders (selective sync). A newly excluded folder stops syncing
   * and both copies stay where they are (the scans no longer see it, so its synced entries are
   * forgotten, never acted on); a folder taken off the list is synced again from scratch like a
   * new one: equal files are recorded, different ones kept both as a conflict, one-sided ones
   * copied over.
   */
  setExcluded(id: number, excluded: string[]): PairRow {
    this.store.pair(id);
    this.store.update(id, { excluded: excludedList(excluded) });
    // Folders that were skipped are read again.
    this.dirty.delete(id);
    this.changed(id);
    if (!this.options.manual) void this.run(id).catch(() => {});
    return this.store.pair(id);
  }

  /**
   * The pair's folders (pair-relative, sorted) for picking exclusions: those the last scans saw
   * on either side, and the excluded ones (not scanned, so their own subfolders are not known).
   */
  folders(id: number): string[] {
    const p = this.store.pair(id);
    const out = new Set(p.excluded);
    for (const side of ['local', 'remote'] as const) for (const e of this.store.tree(id, side).values()) if (e.kind === 'folder') out.add(e.path);
    return [...out].sort();
  }

  /** A run that reads every local folder again, whatever the watch said. */
  rescan(id: number): Promise<RunResult> {
    this.dirty.delete(id);
    return this.run(id);
  }

  /** The user confirmed held deletes (or a suspicious empty side): the next run may go ahead. */
  confirm(id: number): Promise<RunResult> {
    this.store.update(id, { allowDeletes: true });
    return this.run(id);
  }

  /**
   * Settles a conflict in the local folder (the next run carries it over): `mine` puts the local
   * version under the name (the remote version goes to the trash), `theirs` trashes the local
   * copy, `both` keeps the two files and only clears the entry.
   */
  async resolve(conflictId: number, keep: 'mine' | 'theirs' | 'both'): Promise<void> {
    const c = this.store.conflict(conflictId);
    const p = this.store.pair(c.pair);
    const local = new LocalConnector({ path: p.localPath, trashDir: this.options.trashDir });
    try {
      const exists = (path: string) => local.stat(path).then(() => true, () => false);
      if (keep === 'mine' && (await exists(c.copyPath))) {
        if (await exists(c.path)) await local.features.trash!.put(c.path);
        await local.features.move!(c.copyPath, c.path);
      } else if (keep === 'theirs' && (await exists(c.copyPath)) && (await exists(c.path))) {
        await local.features.trash!.put(c.copyPath);
      }
    } finally {
      await local.close();
    }
    this.store.removeConflict(conflictId);
    this.changed(c.pair);
    if (!this.options.manual) void this.run(c.pair).catch(() => {});
  }

  private watchPair(p: PairRow) {
    if (this.watchers.has(p.id) || this.closed || this.options.manual) return;
    const w = watchTree(
      p.localPath,
      ({ type, path: abs }) => {
        const rel = localBelow(p.localPath, abs);
        const set = this.dirty.get(p.id);
        // The ignore rules changed, or a path outside the folder: every folder is read again.
        if (rel === undefined || rel === ROOT || basename(abs) === IGNORE_FILE) this.dirty.delete(p.id);
        else if (set) {
          set.add(parentOf(rel));
          if (type === 'addDir' || type === 'unlinkDir') set.add(rel);
        }
        this.schedule(p.id);
      },
      () => {
        // Events may have been lost: the next scan reads everything.
        this.dirty.delete(p.id);
        this.schedule(p.id);
      },
      { persistent: false },
    );
    void w.ready.then(() => this.watchers.get(p.id) === w && this.ready.add(p.id));
    this.watchers.set(p.id, w);
  }

  private async unwatch(id: number) {
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
    await this.watchers.get(id)?.close();
    this.watchers.delete(id);
    this.ready.delete(id);
    this.dirty.delete(id);
  }

  private schedule(id: number) {
    clearTimeout(this.timers.get(id));
    this.timers.set(
      id,
      setTimeout(() => void this.run(id).catch(() => {}), this.options.debounceMs ?? 500),
    );
  }

  /** Runs the pair until it is in step (or refused, held, paused); one run at a time per pair. */
  run(id: number): Promise<RunResult> {
    const busy = this.running.get(id);
    if (busy) {
      this.again.add(id);
      return busy;
    }
    const p = this.doRun(id).finally(() => {
      this.running.delete(id);
      if (this.again.delete(id) && !this.closed && !this.options.manual) void this.run(id).catch(() => {});
    });
    this.running.set(id, p);
    return p;
  }

  private async doRun(id: number): Promise<RunResult> {
    let pair = this.store.pair(id);
    const result: RunResult = { rounds: 0, ops: 0, plan: { ops: [] }, failed: [] };
    if (pair.paused || this.closed) return result;
    clearTimeout(this.retries.get(id));
    this.store.update(id, { state: 'syncing', error: null });
    this.changed(id);
    try {
      const x = await this.makeExecutor(pair);
      // A resumed operation changed the synced tree.
      if ((await x.resume()).completed) this.settled.delete(id);
      const max = this.options.maxRounds ?? 100;
      // The scans of the last round with what its operations made added, when they only made
      // folders and files and all of them did: the next round plans from these instead of
      // scanning both sides again. Anything
      // else that changed meanwhile is caught by the operations' checks and by the real scans of
      // the round that finds nothing left to do, which never plans from these.
      let made: Record<Side, Tree> | undefined;
      // Operations that failed, by kind, side and path. One that failed the same way (the same
      // error code) in GIVE_UP_ROUNDS rounds is not tried again in this run: each round scans
      // both sides, and a persistent cause (a name the server refuses, a quota, a locked file)
      // would otherwise make the run go round until its bound. Those the last run stopped
      // trying are tried once more here.
      const failures = new Map<string, Failure>((this.failed.get(id) ?? []).map((f) => [f.key, { ...f, rounds: GIVE_UP_ROUNDS - 1 }]));
      for (;;) {
        pair = this.store.pair(id);
        if (pair.paused || this.closed) break;
        // Only the first round may trust the watch: later ones follow this run's own writes.
        const { plan, trees } = made ? this.planFrom(pair, made, await this.remoteOf(pair.account)) : await this.planPair(pair, result.rounds === 0);
        // A failure the plan no longer asks for is over (the file was renamed or removed meanwhile).
        const keys = new Set(plan.ops.map(opKey));
        for (const k of failures.keys()) if (!keys.has(k)) failures.delete(k);
        const givenUp = [...failures.values()].filter((f) => f.rounds >= GIVE_UP_ROUNDS);
        const ops = givenUp.length ? plan.ops.filter((op) => !givenUp.some((f) => covers(f, op))) : plan.ops;
        if (made && ops.length === 0) {
          made = undefined;
          continue;
        }
        made = undefined;
        result.plan = plan;
        if (plan.refused) {
          this.settled.delete(id);
          this.store.update(id, { state: 'refused', error: refusal(plan) });
          return result;
        }
        if (ops.length === 0) {
          result.failed = givenUp.map((f) => ({ path: f.path, message: f.message }));
          if (givenUp.length) this.failed.set(id, givenUp);
          else this.failed.delete(id);
          if (!plan.heldDeletes && !givenUp.length) this.settled.add(id);
          // Never "up to date" while an operation is left undone: the pair shows which and why.
          const problem = givenUp.length ? failedMessage(givenUp) : undefined;
          if (plan.heldDeletes) this.store.update(id, { state: 'held', error: problem ? `${held(plan)} ${problem}` : held(plan) });
          else if (problem) this.store.update(id, { state: 'error', error: problem });
          else this.store.update(id, { state: 'idle', lastSync: new Date().toISOString() });
          if (!plan.heldDeletes && pair.allowDeletes) this.store.update(id, { allowDeletes: false });
          // The cause may go away on its own (space freed, a file unlocked).
          if (problem) this.retryLater(id);
          return result;
        }
        if (++result.rounds > max) throw new ServiceError('internal_error', `The pair did not settle after ${max} rounds.`);
        x.made = [];
        x.madeUnsure = false;
        x.failures.clear();
        const done = await this.execute(id, x, ops, trees);
        result.ops += done;
        for (const op of ops) {
          const k = opKey(op);
          const now = x.failures.get(k);
          const was = failures.get(k);
          if (!now) failures.delete(k);
          else failures.set(k, { key: k, side: 'side' in op ? op.side : undefined, path: op.path, code: now.code, message: now.message, rounds: was?.code === now.code ? was.rounds + 1 : 1 });
        }
        // Only new folders can have brought new work (their contents): after copies alone the
        // next round is the real scans' (planning from these first found nothing, at 10,000 files 0.4–1.5 s).
        if (done === ops.length && !x.madeUnsure && ops.some((op) => op.type === 'mkdir') && ops.every((op) => op.type === 'mkdir' || op.type === 'copy')) {
          made = { local: new Map(trees.local), remote: new Map(trees.remote) };
          for (const { side, entry } of x.made) made[side].set(entry.path, entry);
        }
        // Versions just recorded as racy are looked at again once their second is over, not sooner.
        const wait = Math.min(x.racyUntil - Date.now(), 2000);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      this.store.update(id, { state: 'idle' });
      return result;
    } catch (e) {
      this.store.update(id, { state: 'error', error: toServiceError(e).message });
      this.retryLater(id);
      throw e;
    } finally {
      // Between runs the last scans are kept compact.
      this.store.compactScans(id);
      this.pending.delete(id);
      this.changed(id);
    }
  }

  /** Remote walks only look for changes: a failed run is tried again on its own. */
  private retryLater(id: number) {
    if (this.options.manual || this.closed) return;
    clearTimeout(this.retries.get(id));
    this.retries.set(id, setTimeout(() => void this.run(id).catch(() => {}), this.options.retryMs ?? ERROR_RETRY_MS).unref());
  }

  private async makeExecutor(p: PairRow): Promise<NotingExecutor> {
    const remote = await this.remoteOf(p.account);
    return new NotingExecutor(this.store, p.id, {
      local: new LocalConnector({ path: p.localPath, trashDir: this.options.trashDir }),
      localRoot: p.localPath,
      remote,
      remoteRoot: p.remotePath,
      ignored: await loadIgnore(p.localPath, p.excluded),
    });
  }

  /** Scans both sides (storing the scans) and plans. */
  async planPair(pair: PairRow, incremental = false): Promise<{ plan: Plan; trees: Record<Side, Tree> }> {
    const remote = await this.remoteOf(pair.account);
    const roots = { local: await localRootPresent(pair.localPath), remote: await remoteRootPresent(remote, pair.remotePath) };
    const empty: Record<Side, Tree> = { local: new Map(), remote: new Map() };
    if (!roots.local || !roots.remote) return { plan: planSync(new Map(), new Map(), new Map(), { now: new Date(), rootsPresent: roots }), trees: empty };
    const ignored = await loadIgnore(pair.localPath, pair.excluded);
    const seen = this.changedFolders(pair.id, incremental);
    // Both scans as they were when the last plan came out empty: the plan would again (it is a
    // function of the scans and the synced tree, which only operations change), so the synced
    // tree is not read and nothing is planned.
    const settled = this.settled.has(pair.id);
    // Each side is compared with its last scan while it is read (after a start, the stored rows
    // read into their compact form), and when neither differs nothing is built or stored: a
    // second tree of each side would double the memory of the pass. At the first difference,
    // the sides are scanned in full below.
    // The local side as stored: the watch saw nothing, or it was just read and found so.
    let localQuiet = settled && seen?.size === 0;
    if (settled && (!seen || seen.size === 0)) {
      localQuiet ||= await localUnchanged(pair.localPath, ignored, this.store.tree(pair.id, 'local'));
      const last = localQuiet ? (this.store.lastScan(pair.id, 'remote') ?? this.store.tree(pair.id, 'remote')) : undefined;
      if (last && (await remoteUnchanged(remote, pair.remotePath, ignored, last))) return { plan: { ops: [] }, trees: { local: seen ? new Map() : this.store.tree(pair.id, 'local'), remote: last } };
    }
    let known: Tree | undefined;
    if (localQuiet) {
      // The local side is not even loaded unless the remote one changed, and then not read again.
      known = await scanRemote(remote, pair.remotePath, ignored, undefined, this.store.lastScan(pair.id, 'remote'));
      if (this.store.saveTree(pair.id, 'remote', known) === 0) return { plan: { ops: [] }, trees: { local: new Map(), remote: known } };
    }
    const changedFolder = localQuiet ? () => false : seen && ((folder: string) => seen.has(folder));
    const [local, rtree] = await Promise.all([scanLocal(pair.localPath, ignored, this.store.tree(pair.id, 'local'), changedFolder), known ?? scanRemote(remote, pair.remotePath, ignored, undefined, this.store.lastScan(pair.id, 'remote'))]);
    // With `known`, the remote scan was stored above and differed.
    const written = this.store.saveTree(pair.id, 'local', local) + (known ? 1 : this.store.saveTree(pair.id, 'remote', rtree));
    if (written === 0 && settled) return { plan: { ops: [] }, trees: { local, remote: rtree } };
    this.settled.delete(pair.id);
    const synced = this.store.synced(pair.id);
    // A version that only reading again can tell from a same-second change is settled here, so a
    // pass is only ever "settled" with no such version left.
    await checkRacy(this.store, pair.id, remote, pair.remotePath, rtree, synced);
    return { plan: planSync(local, rtree, synced, planOptions(pair, remote)), trees: { local, remote: rtree } };
  }

  /** Plans from trees already known (no scan; they are not stored). */
  private planFrom(pair: PairRow, trees: Record<Side, Tree>, remote: StorageConnector): { plan: Plan; trees: Record<Side, Tree> } {
    return { plan: planSync(trees.local, trees.remote, this.store.synced(pair.id), planOptions(pair, remote)), trees };
  }

  /**
   * Which local folders the coming scan must read: undefined for all of them (no ready watch, a
   * lost event, the ignore rules changed, not the first round, or the last full read is older
   * than FULL_SCAN_MS); else the folders the watch saw change. Starts recording anew either way.
   */
  private changedFolders(id: number, incremental: boolean): Set<string> | undefined {
    const seen = this.dirty.get(id);
    if (this.ready.has(id)) this.dirty.set(id, new Set());
    else this.dirty.delete(id);
    const fresh = Date.now() - (this.fullScanAt.get(id) ?? 0) < FULL_SCAN_MS;
    if (incremental && seen && fresh) return seen;
    this.fullScanAt.set(id, Date.now());
    return undefined;
  }

  private async execute(id: number, x: NotingExecutor, ops: Op[], trees: Record<Side, Tree>): Promise<number> {
    this.settled.delete(id);
    this.pending.set(id, ops.length);
    this.changed(id);
    return x.execute(ops, trees, this.options.concurrency ?? 4, (left) => this.pending.set(id, left), () => this.closed);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.retries.values()) clearTimeout(t);
    await this.remote?.close();
    // A copy of the keys: unwatch removes from the map being walked.
    for (const id of Array.from(this.watchers.keys())) await this.unwatch(id);
    await Promise.allSettled(this.running.values());
  }
}

function planOptions(pair: PairRow, remote: StorageConnector): PlanOptions {
  return { now: new Date(), remoteCaseInsensitive: !remote.features.caseSensitive, localCaseInsensitive: !LOCAL_CASE_SENSITIVE, allowDeletes: pair.allowDeletes, allowEmptySide: pair.allowDeletes };
}

/** An operation that failed the same way in this many rounds of a run is not tried again in it. */
const GIVE_UP_ROUNDS = 2;

const opKey = (op: Op) => `${op.type}:${'side' in op ? op.side : ''}:${op.path}`;

/** Whether `op` is the given-up operation `f`, or lies below the path it did not make. */
const covers = (f: Failure, op: Op) => opKey(op) === f.key || ((f.side === undefined || !('side' in op) || op.side === f.side) && op.path.startsWith(`${f.path}/`));

function failedMessage(failed: Failure[]): string {
  const shown = failed.slice(0, 5).map((f) => `${f.path}: ${f.message}`);
  if (failed.length > shown.length) shown.push(`and ${failed.length - shown.length} more`);
  return failed.length === 1 ? `Could not sync ${shown[0]}` : `Could not sync ${failed.length} items: ${shown.join('; ')}`;
}

/**
 * Errors that say a side cannot be reached or used at all, not that one operation failed: they
 * end the run (the next scan would fail too).
 */
const SIDE_ERRORS = new Set(['unauthorized', 'invalid_token', 'upstream_auth_failed', 'service_not_available', 'request_timeout', 'too_many_requests']);

/** An executor that tells which operations failed, and why. */
class NotingExecutor extends Executor {
  /** Operations of the last batch that failed, by `opKey`. */
  readonly failures = new Map<string, ServiceError>();

  protected override refused(op: Op, error: ServiceError): OpResult {
    this.failures.set(opKey(op), error);
    return 'skipped';
  }

  override async run(op: Op, trees: Record<Side, Tree>): Promise<OpResult> {
    try {
      return await super.run(op, trees);
    } catch (e) {
      const err = toServiceError(e);
      if (SIDE_ERRORS.has(err.code)) throw e;
      // One operation's failure does not stop the others.
      this.failures.set(opKey(op), err);
      return 'skipped';
    }
  }
}

/** A run that failed is tried again after this long. */
const ERROR_RETRY_MS = 30_000;

/** A local scan reads every folder at least this often, whatever the watch said. */
const FULL_SCAN_MS = 10 * 60_000;

export type FileSyncState = 'synced' | 'pending' | 'conflict';

/** Excluded folders as stored: pair-relative, one leading slash, no trailing one, no `.` or `..`, sorted, once each. */
function excludedList(paths: string[]): string[] {
  const out = paths.map((p) => {
    const parts = p.split('/').filter((x) => x && x !== '.');
    if (parts.includes('..')) throw new ServiceError('invalid_parameters', `${p} is not a folder inside the pair.`);
    return `/${parts.join('/')}`;
  });
  return [...new Set(out.filter((e) => e !== ROOT))].sort();
}

/** The same for a file-system path and a pair's local folder. */
function localBelow(root: string, abs: string): string | undefined {
  const r = relative(root, abs);
  if (r === '') return ROOT;
  return r.startsWith('..') || isAbsolute(r) ? undefined : `/${r.split(sep).join('/')}`;
}

function refusal(plan: Plan): string {
  const side = plan.refused!.side === 'local' ? 'The local folder' : 'The remote folder';
  return plan.refused!.reason === 'root-missing' ? `${side} is missing (unmounted or deleted): nothing is synced until it is back.` : `${side} looks empty while the other side is not: nothing is deleted until you confirm.`;
}

function held(plan: Plan): string {
  return `${plan.heldDeletes!.count} of ${plan.heldDeletes!.total} files would be deleted: waiting for your confirmation.`;
}
