/**
 * Push notifications of changes below a local folder (tree-watch.ts), in batches. An unlink and
 * an add of the same inode and size close together are reported as one rename or move; a root
 * folder deleted and created again is watched anew.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { sep } from 'node:path';
import { baseName, parentOf, TEMP_NAME } from '../shared/paths';
import type { Entry, RawChange, Watcher } from '../types';
import { entryOf } from './files';
import { watchTree, type Known } from './tree-watch';

/** An unlink followed this soon by an add of the same inode and size is one rename/move. */
const RENAME_WINDOW_MS = 150;

/** Watches `root`; `toUpstream` turns a file system path below it into an upstream path. */
export async function watchFolder(root: string, toUpstream: (abs: string) => string, onChanges: (changes: RawChange[]) => void, onError: (e: Error) => void): Promise<Watcher> {
  // Both halves of a rename wait up to RENAME_WINDOW_MS for their partner: they can be reported
  // in either order (both names of a directory event are stat'ed concurrently).
  interface Half {
    change: RawChange;
    ino: number;
    size: number;
    timer: NodeJS.Timeout;
  }
  const unlinked = new Map<string, Half>();
  const addedHalf = new Map<string, Half>();
  let batch: RawChange[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  const emit = (c: RawChange) => {
    batch.push(c);
    flushTimer ??= setTimeout(() => {
      flushTimer = undefined;
      const out = batch;
      batch = [];
      if (out.length) onChanges(out);
    }, 30);
  };
  const pair = (from: string, to: string, kind: 'file' | 'folder', entry?: Entry) =>
    emit({ type: parentOf(from) === parentOf(to) ? 'rename' : 'move', path: to, previousPath: from, kind, entry });
  const hold = (map: Map<string, Half>, path: string, change: RawChange, ino: number, size: number) => {
    const timer = setTimeout(() => {
      map.delete(path);
      emit(change);
    }, RENAME_WINDOW_MS);
    map.set(path, { change, ino, size, timer });
  };
  // An add and a delete of one name with one inode are no rename: an add can be reported
  // (again) from a stat taken before the delete. What is on disk now says which is true.
  const sameName = (abs: string, path: string, kind: 'file' | 'folder', deleted: RawChange) =>
    void stat(abs).then(
      (now) => emit({ type: 'update', path, kind, entry: entryOf(path, now) }),
      () => emit(deleted),
    );
  const partner = (map: Map<string, Half>, ino: number, size: number, kind: 'file' | 'folder'): [string, Half] | undefined => {
    for (const [path, h] of map) {
      if (h.ino === ino && h.size === size && h.change.kind === kind) {
        clearTimeout(h.timer);
        map.delete(path);
        return [path, h];
      }
    }
    return undefined;
  };
  const added = (abs: string, st: Stats | undefined, kind: 'file' | 'folder') => {
    const path = toUpstream(abs);
    const size = kind === 'file' && st ? st.size : 0;
    const entry = st ? entryOf(path, st) : undefined;
    const change: RawChange = { type: 'add', path, kind, entry };
    if (!st) return emit(change);
    const from = partner(unlinked, st.ino, size, kind);
    if (from && from[0] === path) return sameName(abs, path, kind, from[1].change);
    if (from) return pair(from[0], path, kind, entry);
    hold(addedHalf, path, change, st.ino, size);
  };
  const removed = (abs: string, kind: 'file' | 'folder', was: Known | undefined) => {
    const path = toUpstream(abs);
    const change: RawChange = { type: 'delete', path, kind };
    if (!was) return emit(change);
    const to = partner(addedHalf, was.ino, was.size, kind);
    if (to && to[0] === path) return sameName(abs, path, kind, change);
    if (to) return pair(path, to[0], kind, to[1].change.entry);
    hold(unlinked, path, change, was.ino, was.size);
  };
  const watcher = watchTree(
    root,
    (e) => {
      if (e.type === 'add' || e.type === 'addDir') added(e.path, e.stats, e.type === 'add' ? 'file' : 'folder');
      else if (e.type === 'unlink') removed(e.path, 'file', e.was);
      // The root deleted: the tree watch reports what was in it and watches it again once it is back.
      else if (e.type === 'unlinkDir') return e.path === root ? undefined : removed(e.path, 'folder', e.was);
      else {
        const path = toUpstream(e.path);
        emit({ type: 'update', path, kind: 'file', entry: e.stats ? entryOf(path, e.stats) : undefined });
      }
    },
    onError,
    { ignored: (p: string) => TEMP_NAME.test(baseName(p.split(sep).join('/'))) },
  );
  await watcher.ready;
  return {
    close: async () => {
      for (const h of [...unlinked.values(), ...addedHalf.values()]) clearTimeout(h.timer);
      if (flushTimer) clearTimeout(flushTimer);
      await watcher.close();
    },
  };
}
