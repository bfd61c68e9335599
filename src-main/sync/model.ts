/**
 * The sync model: three trees per pair (what the local folder holds now, what the remote folder
 * holds now, and the synced tree, the state both sides last agreed on, used as the merge base),
 * and the operations the planner asks for. Paths are relative to the pair's roots and written
 * like upstream ids ('/a/b.txt'); the roots themselves are never entries.
 */

export type Side = 'local' | 'remote';
export const otherSide = (s: Side): Side => (s === 'local' ? 'remote' : 'local');

/** One entry of a side as the scanner saw it. */
export interface SideEntry {
  path: string;
  kind: 'file' | 'folder';
  /**
   * Identity that survives a rename or move: local `dev:ino`; remote a stable upstream id where
   * the backend has one, else its ETag with the size (unique ones only count). Absent: none.
   */
  id?: string;
  /**
   * Version: changes whenever the content may have changed. Local: the content hash, computed
   * again whenever size, mtime, ctime or inode changed (ctime cannot be set back, so a time reset
   * by an editor or a bad clock still shows); remote: ETag or version id with the size. Never a
   * time alone.
   */
  ver: string;
  /** A content hash when cheaply known (`md5:...`), to tell equal content without a download. */
  hash?: string;
  size?: number;
  /** Local: size, mtime, ctime and inode as scanned; unchanged means the cached hash still holds. */
  stamp?: string;
  /**
   * Modification time (ms), kept on copies where the target can set it; remotely also when it was
   * seen (asked for), to tell versions a same-second change could hide.
   */
  modified?: number;
  seenAt?: number;
  /** Remote, from a look right before a write (never scanned or stored): the backend's ETag, the version a replace is conditional on. */
  etag?: string;
}

export type Tree = Map<string, SideEntry>;

/** Whether a scanned entry is what a stored row holds (the columns a side's row keeps). */
export const sameRow = (e: SideEntry, kind: string, id?: string, ver?: string, hash?: string, size?: number, stamp?: string) =>
  e.kind === kind && e.id === id && e.ver === ver && e.hash === hash && e.size === size && e.stamp === stamp;

/** Whether storing `e` in place of `was` would write nothing (the columns a side's row keeps). */
export const sameStored = (e: SideEntry, was: SideEntry) => e === was || sameRow(e, was.kind, was.id, was.ver, was.hash, was.size, was.stamp);

/** The synced tree: per path, what each side held when both last agreed. */
export interface SyncedEntry {
  path: string;
  kind: 'file' | 'folder';
  localId?: string;
  localVer?: string;
  remoteId?: string;
  remoteVer?: string;
  hash?: string;
}

export type SyncedTree = Map<string, SyncedEntry>;

/**
 * What the planner asks for. Every operation states what it expects to find (`expect`), so the
 * executor can refuse one that the world overtook (the file changed again meanwhile): nothing is
 * overwritten or deleted that the plan did not see. Operations of one batch touch disjoint
 * paths and run in parallel, except that a copy into a folder the same batch makes waits for it.
 */
export type Op =
  /** Both sides hold the node at `path`: write the synced entry (replacing `from`'s subtree). */
  | { type: 'record'; path: string; from?: string; kind: 'file' | 'folder'; local: SideEntry; remote: SideEntry; hash?: string }
  /** A synced entry neither side holds any more. */
  | { type: 'forget'; path: string }
  | { type: 'mkdir'; side: Side; path: string; from?: string }
  /**
   * Copies the file at `src` on the other side to `path` on `side` (temp name, then into place).
   * `expectTarget`: the version `path` holds now (undefined: the path is free). `synced`: the
   * synced entry the node has, updated with both versions when done.
   */
  | { type: 'copy'; side: Side; path: string; src: string; expectSource: string; expectTarget?: string; synced?: string }
  /** A server-side or file-system move within one side; `synced` as above. */
  | { type: 'move'; side: Side; from: string; path: string; expect: { kind: 'file' | 'folder'; id?: string; ver: string }; synced?: string }
  /** Moves `path` (and what is below it, exactly `expect`) to the trash of `side`, forgets `synced`. */
  | { type: 'delete'; side: Side; path: string; expect: { path: string; ver: string }[]; synced?: string }
  /**
   * Both sides changed the file at `path` (or added one there). Equal content: record it. Else
   * the local version is kept as `copyPath` (a local rename) and the remote one takes the name.
   */
  | { type: 'conflict'; path: string; copyPath: string; local: SideEntry; remote: SideEntry; synced?: string };

export interface PlanOptions {
  /** The remote side folds case ('A.txt' and 'a.txt' are one name there). */
  remoteCaseInsensitive?: boolean;
  localCaseInsensitive?: boolean;
  /** Clock of the conflict names, so that planning stays a pure function. */
  now: Date;
  /** Deletes wait for the user above this share of the synced files (default 0.5)... */
  maxDeleteShare?: number;
  /** ...or above this count (default 1000). */
  maxDeleteCount?: number;
  /** Below this count the share rule does not apply (default 10): one file of two may go. */
  minDeleteCountForShare?: number;
  /** The user confirmed the held deletes. */
  allowDeletes?: boolean;
  /** The user confirmed that an empty side is really empty (not a failed listing). */
  allowEmptySide?: boolean;
  /** The root of each side was checked to exist (and is a folder). */
  rootsPresent?: { local: boolean; remote: boolean };
}

export interface Plan {
  ops: Op[];
  /** Set when the planner refuses to act at all (vanished root, suspicious empty side). */
  refused?: { reason: 'root-missing' | 'empty-side'; side: Side };
  /** Deletes waiting for the user (more than the allowed share or count). */
  heldDeletes?: { count: number; total: number };
  /** Work remains that no operation can start yet (never expected; reported as an error). */
  stuck?: boolean;
}
