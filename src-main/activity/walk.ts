/** One polling walk: list the monitored folders and diff them against the snapshot. */
import { parentOf } from '../connectors/shared/paths';
import type { Entry, StorageConnector } from '../connectors/types';
import { toServiceError } from '../errors';
import { fromRow, snapshotOf, tagOf, type SnapRow, type Snapshot } from './snapshot';
import type { ActivityChange, EntrySnapshot } from './types';

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
          if (emit) changes.push({ type: 'update', kind: 'file', path: e.path, metadata: s });
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
        changes.push({ type, kind: a.kind as 'file' | 'folder', path: a.path, previousPath: d.path, metadata: a, previousMetadata: fromRow(d) });
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
      changes.push({ type: 'add', kind: a.kind as 'file' | 'folder', path: a.path, metadata: a });
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
