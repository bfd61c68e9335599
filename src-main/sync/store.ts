/**
 * The sync tables (migration 0630): pairs, the three trees of each pair, the journal of
 * operations in progress and the conflict copies made.
 */
import type Database from 'better-sqlite3';
import { nowIso, type Db } from '../cache/db';
import { notFound } from '../errors';
import { CompactTree } from './compact';
import { sameRow, sameStored, type Op, type Side, type SideEntry, type SyncedEntry, type SyncedTree, type Tree } from './model';
import { sameScan } from './scan';

export type PairState = 'idle' | 'syncing' | 'error' | 'held' | 'refused';

export interface PairRow {
  id: number;
  localPath: string;
  account: number;
  remotePath: string;
  excluded: string[];
  paused: boolean;
  allowDeletes: boolean;
  state: PairState;
  error: string | null;
  lastSync: string | null;
  created: string;
}

export interface JournalRow {
  id: number;
  op: Op;
  stage: 'started' | 'written';
  temp: string | null;
  result: SideEntry | null;
}

interface TreeRow {
  path: string;
  kind: 'file' | 'folder';
  local_id: string | null;
  local_ver: string | null;
  remote_id: string | null;
  remote_ver: string | null;
  hash: string | null;
  size: number | null;
  stamp: string | null;
}

const u = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export class SyncStore {
  private readonly statements = new Map<string, Database.Statement>();
  constructor(readonly db: Db) {}

  /** Statements are prepared once: a scan of 50,000 entries writes 50,000 rows. */
  private st(sql: string) {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  // ---- pairs -------------------------------------------------------------------------------

  pairs(): PairRow[] {
    return (this.st('SELECT * FROM sync_pairs ORDER BY id').all() as Record<string, unknown>[]).map(pairOf);
  }

  pair(id: number): PairRow {
    const row = this.st('SELECT * FROM sync_pairs WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    if (!row) throw notFound('This sync pair');
    return pairOf(row);
  }

  createPair(p: { localPath: string; account: number; remotePath: string; excluded?: string[] }): PairRow {
    const r = this.db
      .prepare('INSERT INTO sync_pairs (local_path, account_id, remote_path, excluded, created) VALUES (?, ?, ?, ?, ?)')
      .run(p.localPath, p.account, p.remotePath, JSON.stringify(p.excluded ?? []), nowIso());
    return this.pair(Number(r.lastInsertRowid));
  }

  removePair(id: number): void {
    this.mirrors.delete(`${id}:local`);
    this.mirrors.delete(`${id}:remote`);
    this.st('DELETE FROM sync_pairs WHERE id = ?').run(id);
  }

  update(id: number, patch: Partial<Pick<PairRow, 'paused' | 'allowDeletes' | 'state' | 'error' | 'lastSync' | 'excluded'>>): void {
    const cols: Record<string, unknown> = {};
    if (patch.paused !== undefined) cols.paused = patch.paused ? 1 : 0;
    if (patch.allowDeletes !== undefined) cols.allow_deletes = patch.allowDeletes ? 1 : 0;
    if (patch.state !== undefined) cols.state = patch.state;
    if (patch.error !== undefined) cols.error = patch.error;
    if (patch.lastSync !== undefined) cols.last_sync = patch.lastSync;
    if (patch.excluded !== undefined) cols.excluded = JSON.stringify(patch.excluded);
    const keys = Object.keys(cols);
    if (!keys.length) return;
    this.st(`UPDATE sync_pairs SET ${keys.map((k) => `${k} = ?`).join(', ')} WHERE id = ?`).run(...Object.values(cols), id);
  }

  /**
   * Pairs whose last plan was empty with nothing held, and whose trees and journal were not
   * written since (migration 0850: the database clears the mark on any such write). Kept in the
   * database, so the first pass after a start can trust it too.
   */
  readonly settled = {
    has: (pair: number): boolean => this.st('SELECT settled FROM sync_pairs WHERE id = ?').pluck().get(pair) === 1,
    add: (pair: number): void => void this.st('UPDATE sync_pairs SET settled = 1 WHERE id = ?').run(pair),
    delete: (pair: number): void => void this.st('UPDATE sync_pairs SET settled = 0 WHERE id = ? AND settled = 1').run(pair),
  };

  // ---- trees -------------------------------------------------------------------------------

  /**
   * Per pair and side, the tree as last stored or read, between runs in its compact form
   * (compact.ts: ~40 MB of entries for two sides of 50,000 files held between passes would be
   * the most of a process's memory), while no other write touched that side (the engine's store is the only
   * writer of a database's trees): a scan is then compared with it in memory and only the rows
   * that differ are written. Any other write of the side drops it; a row count that no longer
   * matches (the pair was removed with its account) does too.
   */
  private readonly mirrors = new Map<string, Tree>();

  /**
   * Keeps a scan as stored. During a run it stays as it is (the next round's scan shares its
   * entries); compactScans() makes the compact copy once the run is over.
   */
  private keep(pair: number, side: Side, tree: Tree): void {
    this.mirrors.set(`${pair}:${side}`, tree);
  }

  /** The pair's scans kept in memory, in their compact form (at the end of a run). */
  compactScans(pair: number): void {
    for (const side of ['local', 'remote'] as const) {
      const key = `${pair}:${side}`;
      const tree = this.mirrors.get(key);
      if (!tree || tree instanceof CompactTree) continue;
      const copy = CompactTree.of(tree);
      sameScan(tree, copy);
      this.mirrors.set(key, copy);
    }
  }

  private mirror(pair: number, side: Side): Tree | undefined {
    const key = `${pair}:${side}`;
    const m = this.mirrors.get(key);
    if (m && this.st('SELECT count(*) FROM sync_tree WHERE pair_id = ? AND tree = ?').pluck().get(pair, side) === m.size) return m;
    this.mirrors.delete(key);
    return undefined;
  }

  /**
   * A side's last scan: also the cache of local content hashes (by inode, size and times). The
   * map is the store's own compact copy (its entries are made again at each lookup, nothing is
   * copied per pass): callers only read it.
   */
  tree(pair: number, side: Side): Tree {
    const m = this.mirror(pair, side);
    if (m) return m;
    // Read straight into the compact form, in one read: no map of 50,000 entries in between.
    const copy = this.db.transaction(() => new CompactTree(this.st('SELECT count(*) FROM sync_tree WHERE pair_id = ? AND tree = ?').pluck().get(pair, side) as number, this.rowEntries(pair, side)))();
    // The rows as they are now: the next scan of the side is compared with them in memory.
    this.mirrors.set(`${pair}:${side}`, copy);
    return copy;
  }

  /** A side's stored rows as entries, one at a time. */
  private *rowEntries(pair: number, side: Side): Generator<SideEntry> {
    for (const [path, kind, localId, localVer, rowHash, size, stamp] of this.sideRows(pair, side)) {
      // One string where two columns hold the same text (a local hash is its version, a remote
      // ETag its identity): each column read is a string of its own.
      const hash = u(rowHash);
      const id = u(localId);
      const ver = localVer === hash ? hash! : localVer === id ? id! : (localVer ?? '');
      yield { path, kind, id, ver, hash, size: u(size), stamp: u(stamp) };
    }
  }

  /** A side's stored rows, the columns a side keeps, as arrays (50,000 rows: no object per row). */
  private sideRows(pair: number, side: Side) {
    type Row = [path: string, kind: 'file' | 'folder', id: string | null, ver: string | null, hash: string | null, size: number | null, stamp: string | null];
    let s = this.statements.get('side rows');
    if (!s) this.statements.set('side rows', (s = this.db.prepare('SELECT path, kind, local_id, local_ver, hash, size, stamp FROM sync_tree WHERE pair_id = ? AND tree = ?').raw(true)));
    return s.iterate(pair, side) as IterableIterator<Row>;
  }

  /** The side's last scan when it is still in memory (never read from the database for this). */
  lastScan(pair: number, side: Side): Tree | undefined {
    return this.mirror(pair, side);
  }

  /**
   * Stores a side's scan, writing only the rows that changed: compared with the last stored
   * scan in memory when there is one, else with the stored rows read one at a time. Returns how
   * many rows it wrote or deleted (0: the side is as it was at its last scan).
   */
  saveTree(pair: number, side: Side, tree: Tree): number {
    const last = this.mirror(pair, side);
    const written = this.db.transaction(() => {
      const gone: string[] = [];
      const changed: SideEntry[] = [];
      if (last) {
        let kept = 0;
        const copy = last instanceof CompactTree ? last : undefined;
        for (const e of tree.values()) {
          // An entry the scan kept from the copy itself is its row (not made again to compare).
          if (copy?.holds(e)) {
            kept++;
            continue;
          }
          const r = last.get(e.path);
          if (r) kept++;
          if (!r || !sameStored(e, r)) changed.push(e);
        }
        // Every stored path is in the scan when as many of the scan's paths were stored.
        if (kept < last.size) for (const path of last.keys()) if (!tree.has(path)) gone.push(path);
      } else {
        const same = new Set<string>();
        for (const [path, kind, id, ver, hash, size, stamp] of this.sideRows(pair, side)) {
          const e = tree.get(path);
          if (!e) gone.push(path);
          else if (sameRow(e, kind, u(id), ver ?? '', u(hash), u(size), u(stamp))) same.add(path);
        }
        for (const e of tree.values()) if (!same.has(e.path)) changed.push(e);
      }
      const del = this.st('DELETE FROM sync_tree WHERE pair_id = ? AND tree = ? AND path = ?');
      for (const p of gone) del.run(pair, side, p);
      for (const e of changed) this.insTree(pair, side, e);
      return gone.length + changed.length;
    })();
    this.keep(pair, side, tree);
    return written;
  }

  /** One entry of a side's stored tree (a file Tributary itself just wrote: its hash is known). */
  putTreeEntry(pair: number, side: Side, e: SideEntry): void {
    this.mirrors.delete(`${pair}:${side}`);
    this.insTree(pair, side, e);
  }

  private insTree(pair: number, side: Side, e: SideEntry): void {
    this.st('INSERT OR REPLACE INTO sync_tree (pair_id, tree, path, kind, local_id, local_ver, hash, size, stamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)').run(pair, side, e.path, e.kind, e.id ?? null, e.ver, e.hash ?? null, e.size ?? null, e.stamp ?? null);
  }

  synced(pair: number): SyncedTree {
    const t: SyncedTree = new Map();
    for (const r of this.st("SELECT * FROM sync_tree WHERE pair_id = ? AND tree = 'synced'").iterate(pair) as IterableIterator<TreeRow>) {
      t.set(r.path, { path: r.path, kind: r.kind, localId: u(r.local_id), localVer: u(r.local_ver), remoteId: u(r.remote_id), remoteVer: u(r.remote_ver), hash: u(r.hash) });
    }
    return t;
  }

  putSynced(pair: number, s: SyncedEntry): void {
    this.st("INSERT OR REPLACE INTO sync_tree (pair_id, tree, path, kind, local_id, local_ver, remote_id, remote_ver, hash) VALUES (?, 'synced', ?, ?, ?, ?, ?, ?, ?)").run(pair, s.path, s.kind, s.localId ?? null, s.localVer ?? null, s.remoteId ?? null, s.remoteVer ?? null, s.hash ?? null);
  }

  getSynced(pair: number, path: string): SyncedEntry | undefined {
    return this.synced1(pair, path);
  }

  private synced1(pair: number, path: string): SyncedEntry | undefined {
    const r = this.st("SELECT * FROM sync_tree WHERE pair_id = ? AND tree = 'synced' AND path = ?").get(pair, path) as TreeRow | undefined;
    return r && { path: r.path, kind: r.kind, localId: u(r.local_id), localVer: u(r.local_ver), remoteId: u(r.remote_id), remoteVer: u(r.remote_ver), hash: u(r.hash) };
  }

  forgetSynced(pair: number, path: string): void {
    this.st("DELETE FROM sync_tree WHERE pair_id = ? AND tree = 'synced' AND path = ?").run(pair, path);
  }

  /**
   * Renames a synced entry and, for a folder, everything below it. Entries below a file's path
   * belong to other nodes (a folder that took the name while the file moved on) and stay.
   */
  renameSynced(pair: number, from: string, to: string): void {
    if (from === to) return;
    const rows =
      this.synced1(pair, from)?.kind === 'file'
        ? [from]
        : (this.db
            .prepare("SELECT path FROM sync_tree WHERE pair_id = ? AND tree = 'synced' AND (path = ? OR substr(path, 1, ?) = ?)")
            .pluck()
            .all(pair, from, from.length + 1, `${from}/`) as string[]);
    // Through a temporary prefix, so renaming into a place below the old one cannot collide.
    const move = this.st("UPDATE OR REPLACE sync_tree SET path = ? WHERE pair_id = ? AND tree = 'synced' AND path = ?");
    for (const p of rows) move.run(`\u0000${p}`, pair, p);
    for (const p of rows) move.run(to + p.slice(from.length), pair, `\u0000${p}`);
  }

  /**
   * The rows of the three trees directly inside `folder` (a pair-relative path): one range of
   * the primary key, so answering a listed folder never reads the whole tree.
   */
  children(pair: number, folder: string): { tree: Side | 'synced'; path: string; kind: 'file' | 'folder'; ver: string | null; remoteVer: string | null }[] {
    const prefix = folder === '/' ? '/' : `${folder}/`;
    // '0' is the character after '/': [prefix, prefix0) is everything below the folder.
    const end = `${prefix.slice(0, -1)}0`;
    return this.st(
      "SELECT tree, path, kind, local_ver AS ver, remote_ver AS remoteVer FROM sync_tree WHERE pair_id = ? AND tree IN ('local', 'remote', 'synced') AND path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0",
    ).all(pair, prefix, end, prefix.length + 1) as ReturnType<SyncStore['children']>;
  }

  // ---- journal -----------------------------------------------------------------------------

  journal(pair: number): JournalRow[] {
    return (this.st('SELECT * FROM sync_journal WHERE pair_id = ? ORDER BY id').all(pair) as Record<string, unknown>[]).map((r) => ({
      id: r.id as number,
      op: JSON.parse(r.op as string) as Op,
      stage: r.stage as JournalRow['stage'],
      temp: r.temp as string | null,
      result: r.result ? (JSON.parse(r.result as string) as SideEntry) : null,
    }));
  }

  begin(pair: number, op: Op, temp?: string): number {
    return Number(this.st("INSERT INTO sync_journal (pair_id, op, stage, temp, created) VALUES (?, ?, 'started', ?, ?)").run(pair, JSON.stringify(op), temp ?? null, nowIso()).lastInsertRowid);
  }

  written(id: number, result: SideEntry): void {
    this.st("UPDATE sync_journal SET stage = 'written', result = ? WHERE id = ?").run(JSON.stringify(result), id);
  }

  /** Ends a journal entry, with the synced-tree changes that complete it, in one transaction. */
  finish(id: number, apply: () => void = () => {}): void {
    this.db.transaction(() => {
      apply();
      this.st('DELETE FROM sync_journal WHERE id = ?').run(id);
    })();
  }

  // ---- conflicts ---------------------------------------------------------------------------

  addConflict(pair: number, path: string, copyPath: string): void {
    this.st('INSERT INTO sync_conflicts (pair_id, path, copy_path, created) VALUES (?, ?, ?, ?)').run(pair, path, copyPath, nowIso());
  }

  conflicts(pair?: number): { id: number; pair: number; path: string; copyPath: string; created: string }[] {
    const rows = (pair === undefined ? this.st('SELECT * FROM sync_conflicts ORDER BY id').all() : this.st('SELECT * FROM sync_conflicts WHERE pair_id = ? ORDER BY id').all(pair)) as Record<string, unknown>[];
    return rows.map((r) => ({ id: r.id as number, pair: r.pair_id as number, path: r.path as string, copyPath: r.copy_path as string, created: r.created as string }));
  }

  conflict(id: number) {
    const c = this.conflicts().find((x) => x.id === id);
    if (!c) throw notFound('This conflict');
    return c;
  }

  removeConflict(id: number): void {
    this.st('DELETE FROM sync_conflicts WHERE id = ?').run(id);
  }
}

function pairOf(r: Record<string, unknown>): PairRow {
  return {
    id: r.id as number,
    localPath: r.local_path as string,
    account: r.account_id as number,
    remotePath: r.remote_path as string,
    excluded: JSON.parse(r.excluded as string) as string[],
    paused: r.paused === 1,
    allowDeletes: r.allow_deletes === 1,
    state: r.state as PairState,
    error: (r.error as string | null) ?? null,
    lastSync: (r.last_sync as string | null) ?? null,
    created: r.created as string,
  };
}
