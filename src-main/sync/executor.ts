/**
 * The executor: runs the planner's operations on the two sides, with a durable journal.
 *
 * Every operation first checks that the world still is what the plan saw (the expected versions;
 * a file that changed meanwhile is left alone and the next plan sees the change). Writes go
 * through the connectors' atomic writes (a temporary name moved into place) and, where a name
 * must be new, their no-replace publish, so nothing outside Tributary is overwritten. Deletes go
 * to the trash where the backend has one. An operation that changes a side is journaled before
 * it starts and its synced-tree update is committed in one transaction with the end of its
 * journal entry; after a SIGKILL, `resume` finishes what had reached the side (a copy whose new
 * file is in place, a conflict copy already renamed) and drops the rest, which the next plan,
 * made from fresh scans, does again or no longer needs.
 */
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline, Transform } from 'node:stream';
import { knownDate } from '../connectors/shared/dates';
import { ChangedMeanwhile } from '../connectors/shared/if-match';
import { joinPath, parentOf, tempName } from '../connectors/shared/paths';
import type { Entry, StorageConnector } from '../connectors/types';
import { ServiceError, toServiceError } from '../errors';
import { withStreamingHeadroom } from '../memory';
import { otherSide, type Op, type Side, type SideEntry, type SyncedEntry, type SyncedTree, type Tree } from './model';
import { FOLDER_VIEW_FILES, localEntry, md5Of, remoteAbs, remoteEntry, type Ignored } from './scan';
import type { SyncStore } from './store';

export interface ExecutorSides {
  /** A local connector over the pair's local folder (paths relative to it). */
  local: StorageConnector;
  localRoot: string;
  remote: StorageConnector;
  remoteRoot: string;
  /** The pair's ignore rules: what a folder delete finds below it, beyond the plan, apart from these stops it. */
  ignored?: Ignored;
}

export type OpResult = 'done' | 'skipped';

export class Executor {
  constructor(
    private readonly store: SyncStore,
    private readonly pair: number,
    private readonly sides: ExecutorSides,
  ) {}

  private conn(side: Side): StorageConnector {
    return side === 'local' ? this.sides.local : this.sides.remote;
  }
  private abs(side: Side, path: string): string {
    return side === 'local' ? path : remoteAbs(this.sides.remoteRoot, path);
  }

  /** The entry at `path` now (null when absent); local files reuse `known`'s hash when unchanged. */
  async current(side: Side, path: string, known?: SideEntry): Promise<SideEntry | null> {
    if (side === 'local') return localEntry(this.sides.localRoot, path, known);
    const asked = Date.now();
    try {
      const e = await this.sides.remote.stat(this.abs('remote', path));
      return { ...remoteEntry(e, path, asked), etag: e.etag };
    } catch (e) {
      if (toServiceError(e).code === 'not_found') return null;
      throw e;
    }
  }

  private async matches(side: Side, path: string, ver: string | undefined, trees: Record<Side, Tree>): Promise<boolean> {
    const now = await this.current(side, path, trees[side].get(path));
    return ver === undefined ? now === null : now?.ver === ver;
  }

  /** Runs one operation; `trees` are the scans the plan was made from. A copy's end is committed by `execute`. */
  /**
   * An operation the backend refused in a way that reads like a change (the copy is skipped and
   * planned again): 'skipped' here; the engine overrides it to tell such refusals from changes.
   */
  protected refused(_op: Op, _error: ServiceError): OpResult {
    return 'skipped';
  }

  async run(op: Op, trees: Record<Side, Tree>): Promise<OpResult> {
    switch (op.type) {
      case 'record': {
        if (!(await this.matches('local', op.path, op.local.ver, trees)) || !(await this.matches('remote', op.path, op.remote.ver, trees))) return 'skipped';
        this.store.db.transaction(() => this.record(op.path, op.from, op.local, op.remote, op.hash))();
        return 'done';
      }
      case 'forget':
        this.store.forgetSynced(this.pair, op.path);
        return 'done';
      case 'mkdir':
        return this.mkdir(op, trees);
      case 'copy':
        return this.copy(op, trees);
      case 'move':
        return this.move(op, trees);
      case 'delete':
        return this.delete(op, trees);
      case 'conflict':
        return this.conflict(op, trees);
    }
  }

  /**
   * A remote version seen (or written by Tributary) within its backend's time precision of its
   * modification (SFTP and SMB keep whole seconds, and their ETags are made of time and size)
   * could hide a same-size change made later in that second: it is recorded as "racy", and once
   * that second is over `checkRacy` compares its content (git's racy-index rule). A version that
   * carries the content's hash (S3's ETag) cannot hide a change and is never racy.
   */
  private settled(r: SideEntry): SideEntry {
    if (!isRacy(r, this.sides.remote)) return r;
    this.racyUntil = Math.max(this.racyUntil, r.modified! + precisionOf(this.sides.remote));
    return { ...r, ver: `${RACY}${r.ver}` };
  }

  /** When the racy versions recorded so far can be told apart from a later change (epoch ms). */
  racyUntil = 0;

  /**
   * The entries mkdir and copy operations made on a side, and the sources of copies, as the
   * synced tree now holds them (see SyncEngine.doRun); `madeUnsure` when a copy's source changed
   * while it was read, so that only a scan can tell what it holds.
   */
  made: { side: Side; entry: SideEntry }[] = [];
  madeUnsure = false;

  /** The synced tree is keyed by path: an entry of another node there is not overwritten. */
  private mayRecord(path: string, from?: string): boolean {
    return from === path || !this.store.getSynced(this.pair, path);
  }

  private record(path: string, from: string | undefined, local: SideEntry, seen: SideEntry, hash?: string): void {
    const remote = this.settled(seen);
    if (from && from !== path) this.store.renameSynced(this.pair, from, path);
    this.store.putSynced(this.pair, { path, kind: local.kind, localId: local.id, localVer: local.ver, remoteId: remote.id, remoteVer: remote.ver, hash: hash ?? local.hash ?? remote.hash });
  }

  private async mkdir(op: Extract<Op, { type: 'mkdir' }>, trees: Record<Side, Tree>): Promise<OpResult> {
    try {
      await this.conn(op.side).mkdir(this.abs(op.side, op.path));
    } catch (e) {
      if (toServiceError(e).code !== 'naming_conflict') throw e;
      if ((await this.current(op.side, op.path))?.kind !== 'folder') return 'skipped';
    }
    const mine = (await this.current(op.side, op.path))!;
    const other = await this.current(otherSide(op.side), op.path, trees[otherSide(op.side)].get(op.path));
    if (other?.kind === 'folder' && this.mayRecord(op.path, op.from)) {
      const [l, r] = op.side === 'local' ? [mine, other] : [other, mine];
      this.store.db.transaction(() => this.record(op.path, op.from, l, r))();
    }
    this.made.push({ side: op.side, entry: mine });
    return 'done';
  }

  /**
   * Runs a plan's operations; `left` hears how many are still to start. Copies of files from
   * SMALL_FILE up (and of unknown size) run `concurrency` at a time, which bounds the memory of
   * their streams; smaller files, where a copy is mostly waiting on round trips, and the other
   * operations run SMALL_WIDTH times as many at a time.
   * Copies are journaled ahead, JOURNAL_BATCH operations in one transaction, always before any of
   * them starts writing; what was journaled and never started is ended here (or, after a kill,
   * dropped by `resume`).
   */
  async execute(ops: Op[], trees: Record<Side, Tree>, concurrency: number, left: (n: number) => void, stopped: () => boolean): Promise<number> {
    let next = 0;
    let journaled = 0;
    let done = 0;
    let large = 0;
    const waiting: (() => void)[] = [];
    const isLarge = (op: Op) => op.type === 'copy' && !((trees[otherSide(op.side)].get(op.src)?.size ?? SMALL_FILE) < SMALL_FILE);
    // The folders this batch makes: what the plan puts into one of them (a new folder and its
    // contents in one batch) starts once it is made, and not at all if it was not. The plan
    // lists a folder's mkdir before everything that goes into it.
    const made = new Map<string, { result: Promise<OpResult>; settle: (r: OpResult) => void }>();
    for (const op of ops) {
      if (op.type !== 'mkdir') continue;
      let settle!: (r: OpResult) => void;
      made.set(`${op.side}:${op.path}`, { result: new Promise<OpResult>((r) => (settle = r)), settle });
    }
    const folderOf = (op: Op) => (op.type === 'mkdir' || op.type === 'copy' ? made.get(`${op.side}:${parentOf(op.path)}`) : undefined);
    const worker = async () => {
      while (next < ops.length && !stopped()) {
        if (next >= journaled) journaled = this.journalAhead(ops, next);
        const op = ops[next++];
        const mine = op.type === 'mkdir' ? made.get(`${op.side}:${op.path}`) : undefined;
        const folder = folderOf(op);
        if (folder && (await folder.result) !== 'done') {
          // Its folder was not made: nothing was written; the next plan looks again.
          const ahead = this.ahead.get(op);
          this.ahead.delete(op);
          if (ahead) this.store.finish(ahead.id);
          mine?.settle('skipped');
          left(ops.length - next);
          continue;
        }
        const big = isLarge(op);
        if (big) {
          while (large >= concurrency) await new Promise<void>((r) => waiting.push(r));
          if (stopped()) {
            // Not started: its journal entry is ended below; the slot passes on to the next waiter.
            waiting.shift()?.();
            break;
          }
          large++;
        }
        let result: OpResult = 'skipped';
        try {
          result = await this.run(op, trees);
          if (result === 'done') done++;
        } finally {
          mine?.settle(result);
          if (big) {
            large--;
            waiting.shift()?.();
          }
        }
        left(ops.length - next);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(concurrency * SMALL_WIDTH, ops.length) }, worker));
    } finally {
      // Stopped (or failed) before a folder was made: what waits for it does not start.
      for (const m of made.values()) m.settle('skipped');
      this.flush();
      const unused = [...this.ahead.values()];
      this.ahead.clear();
      if (unused.length) this.store.db.transaction(() => unused.forEach((j) => this.store.finish(j.id)))();
    }
    if (this.flushError) {
      const e = this.flushError;
      this.flushError = undefined;
      throw e;
    }
    return done;
  }

  /** Completed copies whose journal entries and synced-tree updates are not committed yet. */
  private finishing: { id: number; apply: () => void }[] = [];
  private finishTimer: NodeJS.Timeout | undefined;
  private flushError: unknown;

  /**
   * Ends a copy's journal entry with its synced-tree update, committed together with other
   * copies' (FINISH_BATCH of them, or FINISH_WAIT_MS after the first, and at the end of
   * `execute`): one transaction for many. A kill before the commit leaves the entry journaled
   * and the file in place; the next plan pairs it with its source by content, it is not copied again.
   */
  private finishLater(id: number, apply: () => void): void {
    this.finishing.push({ id, apply });
    if (this.finishing.length >= FINISH_BATCH) this.flush();
    else
      this.finishTimer ??= setTimeout(() => {
        try {
          this.flush();
        } catch (e) {
          this.flushError ??= e;
        }
      }, FINISH_WAIT_MS);
  }

  /** Commits the completions `finishLater` holds, in one transaction. */
  private flush(): void {
    clearTimeout(this.finishTimer);
    this.finishTimer = undefined;
    const batch = this.finishing;
    this.finishing = [];
    if (batch.length) this.store.db.transaction(() => batch.forEach((f) => this.store.finish(f.id, f.apply)))();
  }

  /** Copies journaled by `execute` and not yet started: their entry and temporary name. */
  private readonly ahead = new Map<Op, { id: number; temp: string }>();

  /** Journals the copies among ops[from, from + JOURNAL_BATCH) in one transaction; returns the end. */
  private journalAhead(ops: Op[], from: number): number {
    const end = Math.min(ops.length, from + JOURNAL_BATCH);
    this.store.db.transaction(() => {
      for (let i = from; i < end; i++) {
        const op = ops[i];
        if (op.type !== 'copy') continue;
        const temp = tempName();
        this.ahead.set(op, { id: this.store.begin(this.pair, op, temp), temp });
      }
    })();
    return end;
  }

  private async copy(op: Extract<Op, { type: 'copy' }>, trees: Record<Side, Tree>): Promise<OpResult> {
    // The temporary file's name is journaled first: what a kill leaves of it is removed on resume.
    const ahead = this.ahead.get(op);
    this.ahead.delete(op);
    const temp = ahead?.temp ?? tempName();
    const journal = ahead?.id ?? this.store.begin(this.pair, op, temp);
    const from = otherSide(op.side);
    const target = this.conn(op.side);
    // A file of this computer towards a target on this computer too (a local account): the file
    // system copies the bytes (copy_file_range, or a clone), none pass through this process. Its
    // hash is the scan's, which holds while its stamp (size, times, inode) is unchanged: checked
    // after the copy, as the scanner trusts it; that check alone also catches a change between
    // the scan and the copy (one stat less per file), and a file gone or replaced by a folder
    // meanwhile fails the copy (localFile) and is left to the next plan.
    const planned = trees[from].get(op.src);
    const direct = from === 'local' && planned?.ver === op.expectSource && !!planned.hash && !!planned.stamp && !!target.features.writeFile && !!this.sides.local.features.localFile;
    try {
      const source = direct ? planned : await this.current(from, op.src, planned);
      if (!source || source.ver !== op.expectSource) return this.skip(journal);
      // A new name is published without replacing (below): a file that appeared there meanwhile
      // fails the write, so it needs no look beforehand (one stat, a round trip, less per new file).
      const fresh = op.expectTarget === undefined && !!target.features.noReplace;
      const there = fresh ? null : await this.current(op.side, op.path, trees[op.side].get(op.path));
      if (op.expectTarget === undefined ? there !== null : there?.ver !== op.expectTarget) return this.skip(journal);
      // The source's time, where the target keeps it (local folder, SFTP): a version written with a
      // time of an earlier second cannot be confused with a later change. Only a time of a later
      // second than the version replaced, so that time and size never repeat an older version's.
      // A time no Date holds (a 64-bit file system time past year 275,760) is not kept.
      const second = (ms: number) => Math.floor(ms / 1000);
      const sourceTime = source.modified === undefined ? null : knownDate(new Date(source.modified));
      const keepTime = sourceTime !== null && (there === null || (there.modified !== undefined && second(source.modified!) > second(there.modified)));
      const options = {
        size: source.size,
        modified: keepTime ? sourceTime : undefined,
        // A new name must still be free when published: a file that appeared meanwhile is not replaced.
        noReplace: op.expectTarget === undefined && target.features.noReplace ? {} : undefined,
        // A remote file is replaced only while it is the version looked at: a save by someone else
        // during the upload stays (the next plan sees both sides changed: a conflict, both kept).
        ifMatch: op.side === 'remote' && op.expectTarget !== undefined ? there?.etag : undefined,
        tempName: temp,
      };
      const started = Date.now();
      let hash: string;
      let written: Entry;
      if (direct) {
        written = await target.features.writeFile!(this.abs(op.side, op.path), await this.sides.local.features.localFile!(op.src), options);
        hash = source.hash!;
      } else {
        const h = createHash('md5');
        const source = await this.conn(from).read(this.abs(from, op.src));
        // A pipeline, not `pipe`: a source that fails part-way (a dropped connection) fails the
        // write, where `pipe` left the writer waiting for bytes for good.
        const body = pipeline(
          source,
          new Transform({
            transform(chunk: Buffer, _enc, done) {
              h.update(chunk);
              done(null, chunk);
            },
          }),
          () => {},
        );
        // A file of this computer that is replaced: the bytes go under a staging name first, and
        // the user's file is looked at again right before the rename (see `replaceIfUnchanged`).
        const stage = op.side === 'local' && there ? joinPath(parentOf(op.path), stageOf(temp)) : undefined;
        try {
          written = await withStreamingHeadroom(() => target.write(this.abs(op.side, stage ?? op.path), body, stage ? { ...options, noReplace: {} } : options));
        } finally {
          // A write that failed part-way leaves the source unread: its file or connection is let
          // go now rather than whenever the collector finds it.
          source.destroy();
        }
        hash = `md5:${h.digest('hex')}`;
        if (stage && !(await this.replaceIfUnchanged(stage, op.path, there!))) return this.skip(journal);
      }
      // Tributary's own remote write is as racy as a version seen: a same-size change by someone
      // else later in the same second would keep its ETag.
      const result = op.side === 'local' ? ((await localEntry(this.sides.localRoot, op.path, undefined, hash)) ?? undefined) : { ...this.settled(remoteEntry(written, op.path, started)), hash };
      if (!result) throw new ServiceError('internal_error', `${op.path} vanished right after it was written.`);
      // The look at a remote source below is a round trip: a kill meanwhile finds the write
      // recorded and `resume` completes it. A local source is one stat away from the entry's end.
      if (from === 'remote') this.store.written(journal, result);
      // The source changed while it was read: what went over is not that version, so the synced
      // tree keeps the source as changed and the next plan copies it again.
      const after = await this.current(from, op.src, source);
      const unchanged = after?.ver === source.ver && hash === (source.hash ?? hash) && (!direct || after.stamp === source.stamp);
      const sourceVer = unchanged ? source : { ...source, ver: `changed:${source.ver}` };
      this.finishLater(journal, () => this.completeCopy(op, result, sourceVer));
      if (!unchanged) this.madeUnsure = true;
      // A remote source is recorded settled (racy or not), the version the next plan compares with.
      this.made.push({ side: op.side, entry: result }, { side: from, entry: from === 'remote' ? this.settled(source) : source });
      return 'done';
    } catch (e) {
      this.store.finish(journal);
      const code = toServiceError(e).code;
      if (code === 'naming_conflict' || e instanceof ChangedMeanwhile || (direct && code === 'not_found')) return 'skipped';
      // A name or file the backend cannot take: skipped as a change would be, but told apart.
      if (direct && code === 'invalid_parameters') return this.refused(op, toServiceError(e));
      throw e;
    }
  }

  /**
   * Renames the downloaded `stage` over the local file at `path` if that file still is `was` (its
   * stamp: size, times and inode), else drops the download: a save made while it was transferred
   * stays, and the next plan sees both sides changed (a conflict, both kept). The look and the
   * rename are synchronous, one after the other; the target keeps its mode, as with a plain write.
   */
  private async replaceIfUnchanged(stage: string, path: string, was: SideEntry): Promise<boolean> {
    const abs = (p: string) => join(this.sides.localRoot, ...p.split('/').filter(Boolean));
    try {
      const now = lstatSync(abs(path), { bigint: true, throwIfNoEntry: false });
      if (now?.isFile() && was.stamp !== undefined && `${now.size}:${now.mtimeNs}:${now.ctimeNs}:${now.ino}` === was.stamp) {
        chmodSync(abs(stage), Number(now.mode & 0o777n));
        renameSync(abs(stage), abs(path));
        return true;
      }
    } catch (e) {
      await this.removeTemp('local', stage);
      throw e;
    }
    await this.removeTemp('local', stage);
    return false;
  }

  /** Ends the journal entry of an operation that found the world changed: nothing was written. */
  private skip(journal: number): OpResult {
    this.store.finish(journal);
    return 'skipped';
  }

  private completeCopy(op: Extract<Op, { type: 'copy' }>, written: SideEntry, source: SideEntry): void {
    if (op.side === 'local') this.store.putTreeEntry(this.pair, 'local', written);
    const [l, r] = op.side === 'local' ? [written, this.settled(source)] : [source, written];
    const s = op.synced ? this.store.getSynced(this.pair, op.synced) : undefined;
    if (s) {
      // Both sides now hold it at one place: the synced entry follows it there.
      const at = op.src === op.path && s.path !== op.path && this.mayRecord(op.path) ? op.path : s.path;
      if (at !== s.path) this.store.renameSynced(this.pair, s.path, at);
      this.store.putSynced(this.pair, { ...s, path: at, localId: l.id, localVer: l.ver, remoteId: r.id, remoteVer: r.ver, hash: written.hash });
    }
    else if (op.src === op.path && this.mayRecord(op.path)) this.store.putSynced(this.pair, { path: op.path, kind: 'file', localId: l.id, localVer: l.ver, remoteId: r.id, remoteVer: r.ver, hash: written.hash });
  }

  private async move(op: Extract<Op, { type: 'move' }>, trees: Record<Side, Tree>): Promise<OpResult> {
    const now = await this.current(op.side, op.from, trees[op.side].get(op.from));
    if (!now || now.kind !== op.expect.kind || now.ver !== op.expect.ver || (op.side === 'local' && now.id !== op.expect.id)) return 'skipped';
    const c = this.conn(op.side);
    const [src, dst] = [this.abs(op.side, op.from), this.abs(op.side, op.path)];
    try {
      if (c.features.move) await c.features.move(src, dst);
      else await moveByCopy(c, src, dst, op.expect.kind);
    } catch (e) {
      if (toServiceError(e).code === 'naming_conflict' || toServiceError(e).code === 'not_found') return 'skipped';
      throw e;
    }
    const other = otherSide(op.side);
    const there = await this.current(other, op.path, trees[other].get(op.path));
    if (op.synced && there?.kind === op.expect.kind && this.mayRecord(op.path, op.synced)) {
      const moved = await this.current(op.side, op.path, now);
      this.store.db.transaction(() => {
        const s = this.store.getSynced(this.pair, op.synced!);
        if (!s) return;
        this.store.renameSynced(this.pair, op.synced!, op.path);
        this.store.putSynced(this.pair, { ...s, path: op.path, ...(op.side === 'local' ? { localId: moved?.id } : { remoteId: moved?.id }) });
      })();
    }
    return 'done';
  }

  private async delete(op: Extract<Op, { type: 'delete' }>, trees: Record<Side, Tree>): Promise<OpResult> {
    // Exactly what the plan saw, nothing more below it: a file added meanwhile stops the delete.
    const expected = new Map(op.expect.map((x) => [x.path, x.ver]));
    const top = await this.current(op.side, op.path, trees[op.side].get(op.path));
    if (!top || expected.get(op.path) !== top.ver) return 'skipped';
    let below: SideEntry[] = [];
    let unsynced = false;
    if (top.kind === 'folder') {
      ({ synced: below, unsynced } = await this.listBelow(op.side, op.path, trees[op.side]));
      if (below.length !== expected.size - 1 || below.some((e) => expected.get(e.path) !== e.ver)) return 'skipped';
    }
    const c = this.conn(op.side);
    // A trash keeps what the folder holds, ignored entries included (docs/sync.md, "What is synced").
    if (c.features.trash) await c.features.trash.put(this.abs(op.side, op.path));
    else if (!unsynced) await c.remove(this.abs(op.side, op.path), { recursive: top.kind === 'folder' });
    // Without a trash, only versions this computer had may go (docs/sync.md, "Safety"): the
    // synced files, then the folders they leave empty; the rest stays, in its folder.
    else await this.removeSynced(op.side, [top, ...below]);
    if (op.synced) this.store.forgetSynced(this.pair, op.synced);
    return 'done';
  }

  /** Removes the files of `entries` (a folder and what is below it), then those of its folders left empty. */
  private async removeSynced(side: Side, entries: SideEntry[]): Promise<void> {
    const c = this.conn(side);
    const gone = (e: unknown, also?: string) => {
      const code = toServiceError(e).code;
      if (code !== 'not_found' && code !== also) throw e;
    };
    for (const e of entries) if (e.kind === 'file') await c.remove(this.abs(side, e.path), { recursive: false }).catch((err) => gone(err));
    const folders = entries.filter((e) => e.kind === 'folder').sort((a, b) => b.path.length - a.path.length);
    for (const f of folders) await c.remove(this.abs(side, f.path), { recursive: false }).catch((err) => gone(err, 'folder_not_empty'));
  }

  /**
   * Everything below `folder`: the entries sync would see, and whether anything else is there
   * (ignored or excluded, a link or special file), which this computer never synced. An OS's
   * folder-view files (.DS_Store, Thumbs.db) hold no one's content and do not count.
   */
  private async listBelow(side: Side, folder: string, known: Tree): Promise<{ synced: SideEntry[]; unsynced: boolean }> {
    const synced: SideEntry[] = [];
    let unsynced = false;
    const visit = async (p: string) => {
      for (const e of await this.conn(side).list(this.abs(side, p))) {
        const rel = joinPath(p, e.name);
        const entry = this.sides.ignored?.(rel, e.kind) ? null : side === 'local' ? await localEntry(this.sides.localRoot, rel, known.get(rel)) : remoteEntry(e, rel);
        if (!entry) {
          if (!(e.kind === 'file' && FOLDER_VIEW_FILES.has(e.name))) unsynced = true;
          continue;
        }
        synced.push(entry);
        if (entry.kind === 'folder') await visit(rel);
      }
    };
    await visit(folder);
    return { synced, unsynced };
  }

  private async conflict(op: Extract<Op, { type: 'conflict' }>, trees: Record<Side, Tree>): Promise<OpResult> {
    const l = await this.current('local', op.path, trees.local.get(op.path));
    const r = await this.current('remote', op.path, trees.remote.get(op.path));
    if (!l || !r || l.ver !== op.local.ver || r.ver !== op.remote.ver) return 'skipped';
    // Equal content is no conflict: compare hashes, downloading the remote file when it has none.
    const remoteHash = r.hash ?? (await this.hashOf('remote', op.path));
    if (remoteHash === l.hash) {
      if (!this.mayRecord(op.path, op.synced)) return 'skipped';
      this.store.db.transaction(() => this.record(op.path, op.synced !== op.path ? op.synced : undefined, l, r, remoteHash))();
      return 'done';
    }
    const journal = this.store.begin(this.pair, op);
    try {
      await this.sides.local.features.move!(op.path, op.copyPath);
    } catch (e) {
      this.store.finish(journal);
      if (toServiceError(e).code === 'naming_conflict' || toServiceError(e).code === 'not_found') return 'skipped';
      throw e;
    }
    this.store.finish(journal, () => this.completeConflict(op));
    return 'done';
  }

  private completeConflict(op: Extract<Op, { type: 'conflict' }>): void {
    // The local version now lives under the conflict name as a new file: the synced entry forgets
    // its local identity so that the rename is not read as the user's move.
    const s = op.synced ? this.store.getSynced(this.pair, op.synced) : undefined;
    if (s) this.store.putSynced(this.pair, { ...s, localId: undefined, localVer: undefined });
    this.store.addConflict(this.pair, op.path, op.copyPath);
  }

  private async hashOf(side: Side, path: string): Promise<string> {
    return md5Of(await this.conn(side).read(this.abs(side, path)));
  }

  /** Removes what a killed write left at `path` (a temporary name of this pair's journal). */
  private async removeTemp(side: Side, path: string): Promise<void> {
    await this.conn(side)
      .remove(this.abs(side, path), { recursive: false })
      .catch((e) => {
        if (toServiceError(e).code !== 'not_found') throw e;
      });
  }

  /**
   * After a crash: completes journaled operations whose effect reached the side, drops the rest.
   * Nothing is redone here; the next plan starts from fresh scans.
   */
  async resume(): Promise<{ completed: number; dropped: number }> {
    let completed = 0;
    let dropped = 0;
    for (const j of this.store.journal(this.pair)) {
      const op = j.op;
      let done = false;
      // A killed write's temporary file goes before the entry naming it (a kill in between finds it again).
      if (op.type === 'copy' && j.temp) {
        await this.removeTemp(op.side, joinPath(parentOf(op.path), j.temp));
        if (op.side === 'local') await this.removeTemp('local', joinPath(parentOf(op.path), stageOf(j.temp)));
      }
      if (op.type === 'copy' && j.stage === 'written' && j.result) {
        const now = await this.current(op.side, op.path);
        const same = now && (op.side === 'local' ? now.id === j.result.id && now.ver === j.result.ver : now.ver === plainVer(j.result.ver));
        const from = otherSide(op.side);
        const source = await this.current(from, op.src);
        if (same && source) {
          const src = source.ver === op.expectSource ? source : { ...source, ver: `changed:${op.expectSource}` };
          this.store.finish(j.id, () => this.completeCopy(op, j.result!, src));
          done = true;
        }
      } else if (op.type === 'conflict') {
        const copy = await this.current('local', op.copyPath);
        if (copy && copy.id === op.local.id) {
          this.store.finish(j.id, () => this.completeConflict(op));
          done = true;
        }
      }
      if (done) completed++;
      else {
        this.store.finish(j.id);
        dropped++;
      }
    }
    return { completed, dropped };
  }
}

/** A move on a backend without one (object stores): copy, then remove the source. */
async function moveByCopy(c: StorageConnector, from: string, to: string, kind: 'file' | 'folder'): Promise<void> {
  if (kind === 'file') {
    if (c.features.copy) await c.features.copy(from, to);
    else {
      const e = await c.stat(from);
      await c.write(to, await c.read(from), { size: e.size ?? undefined });
    }
    await c.remove(from, { recursive: false });
    return;
  }
  await c.mkdir(to);
  for (const e of await c.list(from)) await moveByCopy(c, e.path, joinPath(to, e.name), e.kind);
  await c.remove(from, { recursive: true });
}

/** The staging name of a local file's replacement, made from its journaled temporary name (ignored as it). */
const stageOf = (temp: string) => temp.replace(/\.[a-z]+$/, '.tmp');

/** Finished copies committed in one transaction (see Executor.finishLater), and how long the first waits for others (ms). */
const FINISH_BATCH = 64;
const FINISH_WAIT_MS = 100;

/** Files below this size are copied SMALL_WIDTH times as many at a time as larger ones (see Executor.execute). */
const SMALL_FILE = 1 << 20;
const SMALL_WIDTH = 4;

/** Copies journaled in one transaction (see Executor.execute): a kill drops at most this many unstarted ones. */
const JOURNAL_BATCH = 64;

/** The prefix of a synced remote version that a same-second change could hide (see `checkRacy`). */
const RACY = 'racy:';
const plainVer = (ver: string) => (ver.startsWith(RACY) ? ver.slice(RACY.length) : ver);
const precisionOf = (c: StorageConnector) => c.features.modTimePrecisionMs ?? 1000;

/** A remote file version asked for (or written) before its second of modification was over. */
function isRacy(r: SideEntry, c: StorageConnector): boolean {
  const precision = precisionOf(c);
  if (r.kind !== 'file' || precision < 1000 || r.hash || r.modified === undefined || r.seenAt === undefined) return false;
  return r.seenAt < r.modified + precision;
}

/**
 * Settles the racy synced versions of a pair against a fresh remote scan (docs/sync.md, *How
 * changes are found*): a file still showing the racy version once its second is over (waited for
 * when needed, then asked again) is read and hashed; the same content as synced makes the version
 * plain (no change), other content leaves it racy, which the planner takes as a remote change.
 * `synced` is the pair's synced tree, updated in place as stored. Returns how many it settled.
 */
export async function checkRacy(store: SyncStore, pair: number, remote: StorageConnector, remoteRoot: string, tree: Tree, synced: SyncedTree, concurrency = 4): Promise<number> {
  const precision = precisionOf(remote);
  const byId = new Map<string, SideEntry | null>();
  for (const e of tree.values()) if (e.id) byId.set(e.id, byId.has(e.id) ? null : e);
  const candidates: { s: SyncedEntry; e: SideEntry; ver: string }[] = [];
  for (const s of synced.values()) {
    if (s.kind !== 'file' || !s.remoteVer?.startsWith(RACY) || !s.hash) continue;
    const ver = plainVer(s.remoteVer);
    // At its place, or wherever its identity went (a move keeps the time and size).
    const e = tree.get(s.path)?.ver === ver ? tree.get(s.path) : s.remoteId ? byId.get(s.remoteId) : undefined;
    if (e && e.ver === ver) candidates.push({ s, e, ver });
  }
  if (!candidates.length) return 0;
  const until = Math.max(...candidates.map(({ e }) => (isRacy(e, remote) ? e.modified! + precision : 0)));
  if (until > Date.now()) await new Promise((r) => setTimeout(r, until - Date.now() + 1));
  let settled = 0;
  let next = 0;
  const worker = async () => {
    while (next < candidates.length) {
      const { s, e, ver } = candidates[next++];
      const abs = remoteAbs(remoteRoot, e.path);
      try {
        // Asked again after its second: a time and size still the same now hide nothing later.
        if (isRacy(e, remote) && remoteEntry(await remote.stat(abs), e.path).ver !== ver) continue;
        if ((await md5Of(await remote.read(abs))) !== s.hash) continue;
      } catch (err) {
        if (toServiceError(err).code === 'not_found') continue;
        throw err;
      }
      const now = store.getSynced(pair, s.path);
      if (now && now.remoteVer === s.remoteVer) {
        const plain = { ...now, remoteVer: ver };
        store.putSynced(pair, plain);
        synced.set(s.path, plain);
        settled++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, candidates.length) }, worker));
  return settled;
}
