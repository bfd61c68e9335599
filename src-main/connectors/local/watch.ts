/**
 * Push notifications of changes below a local folder (chokidar), in batches. An unlink and an
 * add of the same inode and size close together are reported as one rename or move; a root
 * folder deleted and created again is watched anew.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { sep } from 'node:path';
import { watch as chokidarWatch } from 'chokidar';
import { baseName, parentOf, TEMP_NAME } from '../shared/paths';
import type { Entry, RawChange, Watcher } from '../types';
import { entryOf, isSpecial } from './files';

/** An unlink followed this soon by an add of the same inode and size is one rename/move. */
const RENAME_WINDOW_MS = 150;
/** How often a watch whose root folder was deleted looks for it to be created again. */
const ROOT_RECHECK_MS = 250;

/** Watches `root`; `toUpstream` turns a file system path below it into an upstream path. */
export async function watchFolder(root: string, toUpstream: (abs: string) => string, onChanges: (changes: RawChange[]) => void, onError: (e: Error) => void): Promise<Watcher> {
  const known = new Map<string, { ino: number; size: number; kind: 'file' | 'folder' }>();
  // Both halves of a rename wait up to RENAME_WINDOW_MS for their partner: chokidar reports
  // them in either order (it stats both names of the directory event concurrently).
  interface Half {
    change: RawChange;
    ino: number;
    size: number;
    timer: NodeJS.Timeout;
  }
  const unlinked = new Map<string, Half>();
  const addedHalf = new Map<string, Half>();
  let ready = false;
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
  // An add and a delete of one name with one inode are no rename: chokidar can report an add
  // (again) whose stat was taken before the delete. What is on disk now says which is true.
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
  const watcher = chokidarWatch(root, {
    alwaysStat: true,
    ignored: (p: string) => TEMP_NAME.test(baseName(p.split(sep).join('/'))),
  });
  const added = (abs: string, st: Stats | undefined, kind: 'file' | 'folder') => {
    if (st && isSpecial(st)) return; // not shown, so not activity either
    const path = toUpstream(abs);
    const size = kind === 'file' && st ? st.size : 0;
    if (st) known.set(path, { ino: st.ino, size, kind });
    if (!ready) return;
    const entry = st ? entryOf(path, st) : undefined;
    const change: RawChange = { type: 'add', path, kind, entry };
    if (!st) return emit(change);
    const from = partner(unlinked, st.ino, size, kind);
    if (from && from[0] === path) return sameName(abs, path, kind, from[1].change);
    if (from) return pair(from[0], path, kind, entry);
    hold(addedHalf, path, change, st.ino, size);
  };
  const removed = (abs: string, kind: 'file' | 'folder') => {
    const path = toUpstream(abs);
    const was = known.get(path);
    known.delete(path);
    const change: RawChange = { type: 'delete', path, kind };
    if (!was) return emit(change);
    const to = partner(addedHalf, was.ino, was.size, kind);
    if (to && to[0] === path) return sameName(abs, path, kind, change);
    if (to) return pair(path, to[0], kind, to[1].change.entry);
    hold(unlinked, path, change, was.ino, was.size);
  };
  watcher.on('add', (p, st) => added(p, st, 'file'));
  watcher.on('addDir', (p, st) => (p === root ? undefined : added(p, st, 'folder')));
  watcher.on('change', (p, st) => {
    if (st && isSpecial(st)) return;
    const path = toUpstream(p);
    if (st) known.set(path, { ino: st.ino, size: st.size, kind: 'file' });
    emit({ type: 'update', path, kind: 'file', entry: st ? entryOf(path, st) : undefined });
  });
  watcher.on('unlink', (p) => removed(p, 'file'));
  // The root itself deleted: its watch died with it (chokidar does not notice a new folder of
  // that name), so look for it again until it is back, then watch it anew.
  let rootGone: NodeJS.Timeout | undefined;
  const rewatchRoot = () => {
    if (rootGone) return;
    rootGone = setInterval(() => {
      void stat(root).then(
        (st) => {
          if (!st.isDirectory() || !rootGone) return;
          clearInterval(rootGone);
          rootGone = undefined;
          watcher.unwatch(root);
          watcher.add(root);
        },
        () => {},
      );
    }, ROOT_RECHECK_MS);
    rootGone.unref();
  };
  watcher.on('unlinkDir', (p) => (p === root ? rewatchRoot() : removed(p, 'folder')));
  watcher.on('error', (e) => onError(e instanceof Error ? e : new Error(String(e))));
  await new Promise<void>((res) => watcher.once('ready', () => res()));
  ready = true;
  return {
    close: async () => {
      for (const h of [...unlinked.values(), ...addedHalf.values()]) clearTimeout(h.timer);
      if (flushTimer) clearTimeout(flushTimer);
      if (rootGone) clearInterval(rootGone);
      rootGone = undefined;
      await watcher.close();
    },
  };
}
