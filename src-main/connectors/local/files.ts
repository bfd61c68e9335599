/**
 * What a file on this computer is, for the local connector: its entry, and the special files
 * (FIFOs, sockets, devices) never opened or copied.
 */
import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { knownDate } from '../shared/dates';
import { baseName } from '../shared/paths';
import type { Entry } from '../types';

export const isSpecial = (st: Stats) => !st.isFile() && !st.isDirectory() && !st.isSymbolicLink();

/** fs.cp of a folder leaves out the special files inside it (listings do not show them either). */
export const COPY_OPTIONS = {
  recursive: true,
  errorOnExist: true,
  force: false,
  preserveTimestamps: true,
  filter: (source: string) => lstat(source).then((st) => !isSpecial(st), () => true),
};

export function entryOf(path: string, st: Stats, raw?: Record<string, unknown>): Entry {
  const folder = st.isDirectory();
  return {
    path,
    name: baseName(path),
    kind: folder ? 'folder' : 'file',
    size: folder ? null : st.size,
    // A 64-bit file system time past what a Date holds (year 275,760) is an Invalid Date: unknown.
    modified: knownDate(st.mtime),
    created: st.birthtimeMs > 0 ? knownDate(st.birthtime) : null,
    etag: etagOf(st),
    raw: { mode: st.mode, inode: st.ino, ...raw },
  };
}

/** A local file's ETag: inode, size and modification time (ms), so any change gives a new one. */
export const etagOf = (st: Stats) => etagFrom(st.ino, st.size, Math.round(st.mtimeMs));
/** etagOf from its three numbers (the sync store keeps them packed): inode, size and modification time in ms. */
export const etagFrom = (ino: number, size: number, mtimeMs: number) => `${ino.toString(16)}-${size.toString(16)}-${mtimeMs.toString(16)}`;
