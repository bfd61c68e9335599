/**
 * A subscription's snapshot: the entries below its monitored folders as the last walk or watch
 * batch saw them (table activity_snapshot), and its upstream state (activity_followers). A walk
 * diffs listings against it; it moves only together with the activity it produced.
 */
import type { Db } from '../cache/db';
import { baseName, parentOf } from '../connectors/shared/paths';
import type { Entry } from '../connectors/types';
import type { EntrySnapshot } from './types';

export interface SnapRow {
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

export const fromRow = (r: SnapRow): EntrySnapshot => ({ path: r.path, name: baseName(r.path), kind: r.kind, size: r.size, modified: r.modified, created: null, ...(r.etag ? { etag: r.etag } : {}) });
/** Change tag of an entry: its ETag, else size and modification time. */
export const tagOf = (e: { etag?: string | null; size: number | null; modified: string | null }) => e.etag || `${e.size ?? ''}:${e.modified ?? ''}`;
/** Descendants of `p`: paths in [p + '/', p + '0') ('0' follows '/'). */
const below = (p: string): [string, string] => (p === '/' ? ['/', '0'] : [`${p}/`, `${p}0`]);
export const isUnder = (path: string, root: string) => root === '/' || path === root || path.startsWith(`${root}/`);

/** Monitored folders without those inside another one (walked once). */
export function outermost(roots: string[]): string[] {
  return roots.filter((r) => !roots.some((o) => o !== r && isUnder(r, o)));
}

/** Snapshot storage of one subscription. */
export class Snapshot {
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
