/**
 * Cached folder listings: what each folder held when last listed, so browsing is instant and
 * `recent` and search can answer from what Tributary has seen.
 *
 * It is only a cache: a write that fails (the data disk is full) never fails the operation that
 * changed the files. The rows it could not update are dropped, or, when even that cannot be
 * written, remembered as stale in memory and not served until the folder is listed again.
 *
 * A fresh listing is written after the request that listed it has been answered (the next turns
 * of the event loop, ROWS_PER_TURN rows a turn, the latest listing of a folder winning), and only
 * the rows that changed: found by comparing in memory with the listing this process last wrote
 * there, or else with the rows read back. A listing identical to the one last written costs one
 * lookup and that comparison. Every read or other write here first writes what is pending, so
 * callers always see their own listings.
 */
import { knownDate } from '../../connectors/shared/dates';
import { parentOf } from '../../connectors/shared/paths';
import type { Entry } from '../../connectors/types';
import { nowIso, statement, type Db } from '../db';

export interface EntryRow {
  account_id: number;
  path: string;
  parent: string;
  name: string;
  kind: 'file' | 'folder';
  size: number | null;
  modified: string | null;
  created: string | null;
  etag: string | null;
  mime_type: string | null;
}

export function rowToEntry(r: EntryRow): Entry {
  return {
    path: r.path,
    name: r.name,
    kind: r.kind,
    size: r.size,
    modified: r.modified ? new Date(r.modified) : null,
    created: r.created ? new Date(r.created) : null,
    etag: r.etag ?? undefined,
    mimeType: r.mime_type ?? undefined,
  };
}

export class EntriesTable {
  /** Per account, folders whose cached rows (theirs and below) may be stale and are not served. */
  private readonly stale = new Map<number, Set<string>>();
  /**
   * Listings waiting to be written, by folder; the latest of a folder replaces an older one (and
   * the rest of one being written: the newer one is compared with the rows as they are then).
   */
  private readonly pending = new Map<string, Pending>();
  private scheduled: NodeJS.Immediate | undefined;
  /**
   * The listing last written per folder (bounded): its rows as they are in the database, since
   * every other write to that folder's rows forgets it. A new listing is compared with it in
   * memory (the rows are not read back), and the same array again (a listing found unchanged
   * upstream) costs nothing.
   */
  private readonly written = new Map<string, Entry[]>();

  constructor(private readonly db: Db) {}

  /**
   * Replaces the cached children of `parent` with `entries`. Written on the next turns of the
   * event loop (or by the next read), off the request that listed them.
   */
  replaceListing(accountId: number, parent: string, entries: Entry[]): void {
    const key = folderKey(accountId, parent);
    this.pending.delete(key);
    this.pending.set(key, { accountId, parent, entries, seen: nowIso() });
    this.schedule();
  }

  private schedule(): void {
    this.scheduled ??= setImmediate(() => this.flush(ROWS_PER_TURN));
  }

  /**
   * Writes every pending listing now (before reads, other writes and closing the database). On
   * its own turn of the event loop it writes at most `rows` rows per listing and leaves the rest
   * for the next turn, so a folder's first listing of 100,000 rows does not hold every other
   * request for seconds; its listing mark, which makes it served, comes with its last rows.
   */
  flush(rows = Infinity): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (!this.pending.size) return;
    const batch = [...this.pending.values()];
    this.pending.clear();
    for (const p of batch) {
      const rest = this.write(p, rows);
      if (rest) this.pending.set(folderKey(p.accountId, p.parent), rest);
    }
    if (this.pending.size) this.schedule();
  }

  /**
   * One listing: only new, changed and vanished rows are touched, at most `rows` of them in this
   * transaction. Returns what is left to write. Runs from a timer: the comparison (which reads
   * rows) fails as a write does, never out of it, or the process would end.
   */
  private write(p: Pending, rows: number): Pending | undefined {
    let rest: Pending | undefined;
    this.bestEffort(p.accountId, p.parent, () => {
      rest = this.writeSome(p, rows);
    });
    return rest;
  }

  private writeSome(p: Pending, rows: number): Pending | undefined {
    const { accountId, parent, entries, seen } = p;
    const key = folderKey(accountId, parent);
    const wasStale = this.stale.get(accountId)?.has(parent) ?? false;
    let rest = p.rest;
    if (!rest) {
      const last = !wasStale ? this.written.get(key) : undefined;
      const known = last && this.listed(accountId, parent) ? last : undefined;
      if (known === entries) return undefined;
      this.written.delete(key);
      rest = (known ? this.changedSince(known, entries) : this.changedInRows(accountId, parent, entries, seen)) ?? undefined;
      if (!rest) {
        this.written.set(key, entries); // the same rows: nothing to write
        return undefined;
      }
    }
    const { changed, gone, done } = rest;
    const upTo = Math.min(changed.length, done + rows);
    const last = upTo === changed.length;
    this.db.transaction(() => {
      // Listings below a folder marked stale were not dropped when it was marked.
      if (wasStale) this.dropListings(accountId, parent);
      // Rows are updated in place, so a version Tributary already knew keeps its `learned_at`.
      const ins = this.insertStatement();
      for (let i = done; i < upTo; i++) ins.run(toParams(accountId, parent, changed[i]!, seen));
      if (!last) return;
      const del = this.db.prepare('DELETE FROM entries WHERE account_id = ? AND path = ?');
      for (const path of gone) del.run(accountId, path);
      this.db
        .prepare('INSERT INTO folder_listings (account_id, path, listed_at) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET listed_at = excluded.listed_at')
        .run(accountId, parent, seen);
    })();
    if (!last) return { ...p, rest: { changed, gone, done: upTo } };
    this.stale.get(accountId)?.delete(parent);
    this.written.set(key, entries);
    if (this.written.size > MAX_WRITTEN) this.written.delete(this.written.keys().next().value!);
    return undefined;
  }

  /** The entries of `entries` whose rows differ from `known`'s (the rows last written), and the paths gone; null: none. */
  private changedSince(known: Entry[], entries: Entry[]): Pending['rest'] | null {
    const changed: Entry[] = [];
    // Listings come sorted: entry by entry while the paths line up, by path from the first shift.
    let i = 0;
    for (const n = Math.min(known.length, entries.length); i < n && known[i]!.path === entries[i]!.path; i++) {
      if (!sameRow(known[i]!, entries[i]!)) changed.push(entries[i]!);
    }
    const before = new Map<string, Entry>();
    for (let j = i; j < known.length; j++) before.set(known[j]!.path, known[j]!);
    for (let j = i; j < entries.length; j++) {
      const e = entries[j]!;
      const old = before.get(e.path);
      if (!old || !sameRow(old, e)) changed.push(e);
      before.delete(e.path);
    }
    return changed.length || before.size ? { changed, gone: [...before.keys()], done: 0 } : null;
  }

  /** The same for a folder not written from this process: compared with the rows it has. */
  private changedInRows(accountId: number, parent: string, entries: Entry[], seen: string): NonNullable<Pending['rest']> {
    const before = new Map<string, string>();
    const cols = this.db.prepare(`SELECT ${COMPARED.join(', ')} FROM entries WHERE account_id = ? AND parent = ?`);
    for (const r of cols.iterate(accountId, parent) as Iterable<Record<string, unknown>>) before.set(r.path as string, rowKey(r));
    if (!before.size) return { changed: entries, gone: [], done: 0 };
    const changed = entries.filter((e) => {
      const same = before.get(e.path) === rowKey(toParams(accountId, parent, e, seen));
      before.delete(e.path);
      return !same;
    });
    return { changed, gone: [...before.keys()], done: 0 };
  }

  private listed(accountId: number, parent: string): boolean {
    return statement(this.db, 'SELECT 1 FROM folder_listings WHERE account_id = ? AND path = ?').get(accountId, parent) !== undefined;
  }

  /** Forgets the listings written of `folder` and below: their rows were changed another way. */
  private unwritten(accountId: number, folder: string): void {
    const prefix = folderKey(accountId, folder === '/' ? '' : folder);
    for (const key of this.written.keys()) if (key === folderKey(accountId, folder) || key.startsWith(`${prefix}/`)) this.written.delete(key);
  }

  upsert(accountId: number, parent: string, entry: Entry): void {
    this.flush();
    this.written.delete(folderKey(accountId, parent));
    this.bestEffort(accountId, parent, () => this.insertStatement().run(toParams(accountId, parent, entry, nowIso())));
  }

  /** Forgets an entry and, for a folder, everything below it. */
  forget(accountId: number, path: string): void {
    this.flush();
    this.written.delete(folderKey(accountId, parentOf(path)));
    this.unwritten(accountId, path);
    const below = path === '/' ? '/%' : `${escapeLike(path)}/%`;
    this.bestEffort(accountId, parentOf(path), () =>
      this.db.transaction(() => {
        this.db.prepare("DELETE FROM entries WHERE account_id = ? AND (path = ? OR path LIKE ? ESCAPE '\\')").run(accountId, path, below);
        this.dropListings(accountId, path);
      })(),
    );
  }

  /** Marks the listings of `folder` and below as not cached (its rows then go unused). */
  private dropListings(accountId: number, folder: string): void {
    const below = folder === '/' ? '/%' : `${escapeLike(folder)}/%`;
    this.db.prepare("DELETE FROM folder_listings WHERE account_id = ? AND (path = ? OR path LIKE ? ESCAPE '\\')").run(accountId, folder, below);
  }

  /**
   * Runs a cache write; when it fails, the cached listing of `folder` (and below) is dropped so
   * that it is not served stale, in memory when the database cannot take even that.
   */
  private bestEffort(accountId: number, folder: string, write: () => void): void {
    try {
      write();
    } catch (e) {
      this.unwritten(accountId, folder);
      console.warn(`[cache] could not update the cached listing of ${folder} (account ${accountId}): ${(e as Error)?.message ?? e}`);
      let set = this.stale.get(accountId);
      if (!set) this.stale.set(accountId, (set = new Set()));
      set.add(folder);
      try {
        this.dropListings(accountId, folder);
      } catch {
        /* remembered in memory above */
      }
    }
  }

  private isStale(accountId: number, path: string): boolean {
    const set = this.stale.get(accountId);
    if (!set?.size) return false;
    for (const folder of set) if (folder === '/' || path === folder || path.startsWith(`${folder}/`)) return true;
    return false;
  }

  /** The cached listing, or undefined when the folder was never listed (or may be stale). */
  listing(accountId: number, parent: string): { entries: Entry[]; listedAt: string } | undefined {
    this.flush();
    if (this.isStale(accountId, parent)) return undefined;
    const mark = statement(this.db, 'SELECT listed_at FROM folder_listings WHERE account_id = ? AND path = ?').get(accountId, parent) as
      | { listed_at: string }
      | undefined;
    if (!mark) return undefined;
    const rows = statement(this.db, 'SELECT * FROM entries WHERE account_id = ? AND parent = ?').all(accountId, parent) as EntryRow[];
    return { entries: rows.map(rowToEntry), listedAt: mark.listed_at };
  }

  get(accountId: number, path: string): Entry | undefined {
    this.flush();
    if (this.isStale(accountId, parentOf(path))) return undefined;
    const row = statement(this.db, 'SELECT * FROM entries WHERE account_id = ? AND path = ?').get(accountId, path) as EntryRow | undefined;
    return row && rowToEntry(row);
  }

  /**
   * Files modified after `after`, newest first (the `recent` endpoint). Where the backend keeps
   * whole seconds (S3) a version's time is refined by when Tributary learned of it within that
   * second, so two files made in one second are told apart by `after`; ties are broken by the
   * order Tributary learned of the changes.
   */
  recent(accountId: number, after: string | null, limit: number, offset: number): { rows: Entry[]; total: number } {
    this.flush();
    // A whole-second time (…:SS.000Z) learned later reads as the learned time within that second,
    // or as the second's last millisecond when Tributary learned of it only after the second ended
    // (a slow answer): never later than the second the backend gave, never earlier than it.
    const time = `CASE WHEN substr(modified, 20) = '.000Z' AND learned_at > modified
      THEN CASE WHEN substr(learned_at, 1, 19) = substr(modified, 1, 19) THEN learned_at ELSE substr(modified, 1, 19) || '.999Z' END
      ELSE modified END`;
    const cond = `account_id = ? AND kind = 'file' AND modified IS NOT NULL${after ? ` AND ${time} > ?` : ''}`;
    const params: unknown[] = after ? [accountId, after] : [accountId];
    const total = (this.db.prepare(`SELECT count(*) AS n FROM entries WHERE ${cond}`).get(...params) as { n: number }).n;
    const rows = this.db.prepare(`SELECT * FROM entries WHERE ${cond} ORDER BY modified DESC, learned_at DESC, path LIMIT ? OFFSET ?`).all(...params, limit, offset) as EntryRow[];
    return { rows: rows.map(rowToEntry), total };
  }

  private insertStatement() {
    return statement(
      this.db,
      `INSERT INTO entries (account_id, path, parent, name, kind, size, modified, created, etag, mime_type, seen_at, learned_at)
       VALUES (@account_id, @path, @parent, @name, @kind, @size, @modified, @created, @etag, @mime_type, @seen_at, @seen_at)
       ON CONFLICT (account_id, path) DO UPDATE SET parent = excluded.parent, name = excluded.name, kind = excluded.kind,
         learned_at = CASE WHEN entries.modified IS excluded.modified AND entries.size IS excluded.size AND entries.etag IS excluded.etag
           THEN entries.learned_at ELSE excluded.learned_at END,
         size = excluded.size, modified = excluded.modified, created = excluded.created, etag = excluded.etag,
         mime_type = excluded.mime_type, seen_at = excluded.seen_at`,
    );
  }
}

function toParams(accountId: number, parent: string, e: Entry, seen: string) {
  return {
    account_id: accountId,
    path: e.path,
    parent,
    name: e.name,
    kind: e.kind,
    size: e.size,
    // A connector that let an Invalid Date through: stored as unknown, not thrown on.
    modified: knownDate(e.modified)?.toISOString() ?? null,
    created: knownDate(e.created)?.toISOString() ?? null,
    etag: e.etag ?? null,
    mime_type: e.mimeType ?? null,
    seen_at: seen,
  };
}

/** The columns whose change rewrites a row (`seen_at` and `learned_at` follow them). */
const COMPARED = ['path', 'name', 'kind', 'size', 'modified', 'created', 'etag', 'mime_type'] as const;
// Every compared value is a string, a number or null, both in parameters and in rows read back.
const rowKey = (r: Record<string, unknown>) => `${r.path}\0${r.name}\0${r.kind}\0${r.size}\0${r.modified}\0${r.created}\0${r.etag}\0${r.mime_type}`;
/** Whether an entry's row would be written as `old`'s (the fields of COMPARED, as toParams gives them). */
const sameRow = (old: Entry, e: Entry) =>
  old.path === e.path &&
  old.name === e.name &&
  old.kind === e.kind &&
  old.size === e.size &&
  (knownDate(old.modified)?.getTime() ?? null) === (knownDate(e.modified)?.getTime() ?? null) &&
  (knownDate(old.created)?.getTime() ?? null) === (knownDate(e.created)?.getTime() ?? null) &&
  (old.etag ?? null) === (e.etag ?? null) &&
  (old.mimeType ?? null) === (e.mimeType ?? null);
const folderKey = (accountId: number, folder: string) => `${accountId}:${folder}`;
/** Rows a listing writes per turn of the event loop when it is written on its own (about 10–20 ms). */
const ROWS_PER_TURN = 1000;

interface Pending {
  accountId: number;
  parent: string;
  entries: Entry[];
  seen: string;
  /** Set once it is compared: the rows to write (the first `done` of them written), and the paths to delete with the last of them. */
  rest?: { changed: Entry[]; gone: string[]; done: number };
}
const MAX_WRITTEN = 10_000;

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
