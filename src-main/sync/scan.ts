/**
 * Scanners: the current tree of each side of a pair, and the ignore rules both share.
 *
 * Local: a walk of the folder with lstat; identity is device + inode; the version is the MD5 of
 * the content, hashed again only when size, mtime, ctime or inode changed since the last scan (a
 * file whose time was set back, to 1970 or to the same second, still changes ctime). Symbolic
 * links and special files are not synced.
 * Remote: a walk of the folder through the connector; version = ETag and size (a time only where
 * a backend has no ETag, and then always with the size); identity = the ETag with the size.
 */
import { createHash } from 'node:crypto';
import { constants, lstatSync, readdirSync, type BigIntStats, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import ignore from 'ignore';
import { LocalConnector } from '../connectors/local';
import { joinPath, parentOf, ROOT, TEMP_NAME } from '../connectors/shared/paths';
import { md5OfWholeFile } from '../connectors/shared/md5';
import type { Entry, StorageConnector } from '../connectors/types';
import { ServiceError, toServiceError } from '../errors';
import { accountTag, CompactTree } from './compact';
import { sameStored, type SideEntry, type Tree } from './model';

/** Never synced: system clutter, Office lock files, editors' temporary files, our own temp files. */
export const DEFAULT_IGNORES = ['.DS_Store', 'Thumbs.db', 'desktop.ini', '~$*', '.~lock.*#', '*~', '.*.sw[a-p]', '*.tmp', '.#*', '.tributary-*'];
export const IGNORE_FILE = '.tributaryignore';
/** What an OS writes about a folder's view (no one's content): a deleted folder may take it along. */
export const FOLDER_VIEW_FILES = new Set(['.DS_Store', 'Thumbs.db', 'desktop.ini']);

/** Says whether a pair-relative path is left out: defaults, `.tributaryignore`, excluded folders. */
export type Ignored = (path: string, kind: 'file' | 'folder') => boolean;

/** Answers an ignore matcher remembers before it starts over. */
const MEMO_MAX = 500_000;

export function ignoreRules(fileText: string | undefined, excluded: string[] = []): Ignored {
  const ig = ignore().add(DEFAULT_IGNORES);
  if (fileText) ig.add(fileText);
  const ex = excluded.map((e) => (e.startsWith('/') ? e : `/${e}`).replace(/\/+$/, ''));
  // Every pass asks about the same paths again: answers are remembered (a few MB per 50,000).
  const memo = new Map<string, boolean>();
  const test = (path: string, kind: 'file' | 'folder') => {
    if (ex.some((e) => path === e || path.startsWith(`${e}/`))) return true;
    if (TEMP_NAME.test(path.slice(path.lastIndexOf('/') + 1))) return true;
    return ig.ignores(path.slice(1) + (kind === 'folder' ? '/' : ''));
  };
  return (path, kind) => {
    const key = kind === 'folder' ? `${path}/` : path;
    let answer = memo.get(key);
    if (answer === undefined) {
      if (memo.size >= MEMO_MAX) memo.clear();
      memo.set(key, (answer = test(path, kind)));
    }
    return answer;
  };
}

/**
 * The rules each scan's tree was made with. A tree holds only what its rules let through and
 * the rules are a pure function of path and kind, so a later scan with the same rules need not
 * ask them again about a path the tree holds with the same kind.
 */
const scannedWith = new WeakMap<Tree, Ignored>();

/** `copy` holds exactly what `tree` holds (the store's compact form of a scan): the same rules made it. */
export function sameScan(tree: Tree, copy: Tree): void {
  const rules = scannedWith.get(tree);
  if (rules) scannedWith.set(copy, rules);
}

/**
 * Whether a scan leaves `path` out: the rules are asked unless the last scan, made with the same
 * ones (`trusted`), held the path with the same kind (`was`, its entry there).
 */
const leftOut = (rules: Ignored, trusted: boolean, path: string, kind: 'file' | 'folder', was: SideEntry | undefined) => !(trusted && was?.kind === kind) && rules(path, kind);

/** The last rules made per local root, with what they were made from. */
const lastRules = new Map<string, { text: string | undefined; excluded: string; rules: Ignored }>();

/**
 * The rules of a pair: the local root's `.tributaryignore` (itself synced) and the exclusions.
 * The same rules are given again while neither changed: the matcher remembers each path it
 * answered, so a pass over unchanged paths does not match them again.
 */
export async function loadIgnore(localRoot: string, excluded: string[]): Promise<Ignored> {
  const text = await readFile(join(localRoot, IGNORE_FILE), 'utf8').catch(() => undefined);
  const key = JSON.stringify(excluded);
  const last = lastRules.get(localRoot);
  if (last && last.text === text && last.excluded === key) return last.rules;
  const rules = ignoreRules(text, excluded);
  lastRules.set(localRoot, { text, excluded: key, rules });
  return rules;
}

export async function localRootPresent(root: string): Promise<boolean> {
  return stat(root).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** The content hash of a stream of bytes, as versions and synced entries write it (`md5:<hex>`). */
export async function md5Of(body: AsyncIterable<unknown>): Promise<string> {
  const h = createHash('md5');
  for await (const chunk of body) h.update(chunk as Buffer);
  return `md5:${h.digest('hex')}`;
}

/** Hashed by the worker pool: ~half the CPU of a stream per file, and off the event loop. */
export const md5File = async (file: string): Promise<string> => `md5:${(await md5OfWholeFile(file)).toString('hex')}`;

/**
 * One local entry as the scanner sees it; `previous` gives the hash when the stamp is unchanged,
 * `knownHash` when Tributary itself just wrote the file.
 */
export async function localEntry(root: string, path: string, previous?: SideEntry, knownHash?: string, stats?: BigIntStats): Promise<SideEntry | null> {
  const abs = path === ROOT ? root : join(root, ...path.split('/').filter(Boolean));
  let st = stats;
  if (!st) {
    // Synchronous, as the walk's: on cached metadata a fraction of a trip through the I/O pool.
    try {
      st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw e;
    }
    if (!st) return null;
  }
  if (!knownHash) {
    const known = entryWithoutReading(path, st, `${st.dev}:${st.ino}`, previous);
    if (known !== undefined) return known;
  }
  const id = `${st.dev}:${st.ino}`;
  const stamp = stampOf(st);
  const hash = knownHash ?? (previous && previous.id === id && previous.stamp === stamp && previous.hash ? previous.hash : await md5File(abs));
  return { path, kind: 'file', id, ver: hash, hash, size: Number(st.size), stamp, modified: Number(st.mtimeNs / 1_000_000n) };
}

const stampOf = (st: BigIntStats) => `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`;

/**
 * A local entry that needs no reading: a folder, null for what is not synced (links, special
 * files), or a file unchanged since the last scan (that scan's entry itself, so both trees
 * share it in memory); undefined when the file's content must be hashed.
 */
export function entryWithoutReading(path: string, st: BigIntStats, id: string, previous?: SideEntry): SideEntry | null | undefined {
  if (st.isDirectory()) {
    return previous && previous.path === path && previous.kind === 'folder' && previous.id === id ? previous : { path, kind: 'folder', id, ver: 'd' };
  }
  if (!st.isFile()) return null;
  if (previous && previous.path === path && previous.kind === 'file' && previous.hash && previous.id === id && previous.stamp === stampOf(st)) return previous;
  return undefined;
}

const S_IFMT = BigInt(constants.S_IFMT);

/** What a walk syncs an entry as: one conversion of its mode (a BigIntStats' isFile() makes BigInts each call). */
function kindOf(st: BigIntStats): 'file' | 'folder' | null {
  const type = Number(st.mode & S_IFMT);
  return type === constants.S_IFDIR ? 'folder' : type === constants.S_IFREG ? 'file' : null;
}

/** Entries a walk reads between two turns of the event loop. */
const YIELD_EVERY = 2000;

/**
 * The local folder's tree; `cache` is the previous scan (its hashes are reused by stamp). With
 * `changed`, a folder of the previous scan for which it answers false (the watch saw nothing in
 * it) is not read again: its entries are the cached ones, and only its subfolders are walked.
 */
export async function scanLocal(root: string, rules: Ignored, cache: Tree = new Map(), changed?: (folder: string) => boolean): Promise<Tree> {
  const trusted = scannedWith.get(cache) === rules;
  // Files of the cache by identity (a moved file keeps its hash), made at the first file not
  // found at its own place: a pass where nothing moved never needs it.
  let byId: Map<string, SideEntry> | undefined;
  const cachedById = (id: string) => {
    if (!byId) {
      byId = new Map();
      for (const e of cache.values()) if (e.id && e.hash) byId.set(e.id, e);
    }
    return byId.get(id);
  };
  let kids: Map<string, SideEntry[]> | undefined;
  if (changed) {
    kids = new Map();
    for (const e of cache.values()) {
      const parent = parentOf(e.path);
      const list = kids.get(parent);
      if (list) list.push(e);
      else kids.set(parent, [e]);
    }
  }
  const tree: Tree = new Map();
  let sinceYield = 0;
  const walk = async (folder: string, known: boolean) => {
    if (kids && known && !changed!(folder)) {
      for (const e of (kids.get(folder) ?? []).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
        // The cache's own entry at its path: the rules are asked only when they are not the cache's.
        if (!trusted && rules(e.path, e.kind)) continue;
        tree.set(e.path, e);
        if (e.kind === 'folder') await walk(e.path, true);
      }
      return;
    }
    const abs = folder === ROOT ? root : join(root, ...folder.split('/').filter(Boolean));
    // Synchronous calls: on metadata the kernel has cached they cost a fraction of a promise
    // round trip each (50,000 lstat: ~0.4 s against 1–2 s with one promise per entry). The walk
    // yields to the event loop every YIELD_EVERY entries, so the process keeps answering.
    const names = readdirSync(abs).sort();
    const prefix = abs.endsWith(sep) ? abs : abs + sep;
    const pending: (SideEntry | null | Promise<SideEntry | null>)[] = [];
    for (const name of names) {
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((r) => setImmediate(r));
      }
      const path = joinPath(folder, name);
      let st: BigIntStats | undefined;
      try {
        st = lstatSync(prefix + name, { bigint: true, throwIfNoEntry: false });
      } catch {
        continue; // unreadable: left out, as a vanished entry
      }
      const kind = st ? kindOf(st) : null;
      if (!st || !kind) continue;
      const here = cache.get(path);
      if (leftOut(rules, trusted, path, kind, here)) continue;
      const id = `${st.dev}:${st.ino}`;
      const previous = here?.id === id ? here : cachedById(id);
      const known = entryWithoutReading(path, st, id, previous);
      // Files to hash are hashed in parallel.
      pending.push(known !== undefined ? known : localEntry(root, path, previous, undefined, st));
    }
    for (const e of pending.some((x) => x instanceof Promise) ? await Promise.all(pending) : (pending as (SideEntry | null)[])) {
      if (!e) continue;
      tree.set(e.path, e);
      // A folder read before under this name and identity: its cached entries are its own.
      if (e.kind === 'folder') {
        const was = cache.get(e.path);
        await walk(e.path, was?.kind === 'folder' && was.id === e.id);
      }
    }
  };
  await walk(ROOT, cache.size > 0);
  scannedWith.set(tree, rules);
  return tree;
}

/**
 * Whether the local folder still holds exactly `last` (a scan or the stored rows, made with `rules`): every entry one
 * scanLocal would keep as it is, none added, none gone. Nothing is built: a pass over an
 * unchanged pair compares while it reads each folder instead of making a second tree of 50,000
 * entries. False at the first difference (or a folder it cannot read): the caller scans in full.
 */
export async function localUnchanged(root: string, rules: Ignored, last: Tree): Promise<boolean> {
  const trusted = scannedWith.get(last) === rules;
  // Its entries were let through by these rules: one kept as it is needs no asking.
  const compact = trusted && last instanceof CompactTree ? last : undefined;
  let matched = 0;
  let sinceYield = 0;
  const walk = async (folder: string): Promise<boolean> => {
    const abs = folder === ROOT ? root : join(root, ...folder.split('/').filter(Boolean));
    let names: string[];
    try {
      names = readdirSync(abs);
    } catch {
      return false;
    }
    const prefix = abs.endsWith(sep) ? abs : abs + sep;
    const folders: string[] = [];
    for (const name of names) {
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((r) => setImmediate(r));
      }
      const path = joinPath(folder, name);
      let st: BigIntStats | undefined;
      try {
        st = lstatSync(prefix + name, { bigint: true, throwIfNoEntry: false });
      } catch {
        continue; // left out, as scanLocal does: an entry of `last` not met is counted below
      }
      const kind = st ? kindOf(st) : null;
      if (!st || !kind) continue;
      // The store's copy tells an unchanged entry from its numbers, without making it again.
      if (compact?.keepsLocal(path, kind, st)) {
        matched++;
        if (kind === 'folder') folders.push(path);
        continue;
      }
      // One lookup: the store's copy makes the entry again for each.
      const was = last.get(path);
      if (leftOut(rules, trusted, path, kind, was)) continue;
      if (!was || entryWithoutReading(path, st, `${st.dev}:${st.ino}`, was) !== was) return false;
      matched++;
      if (kind === 'folder') folders.push(path);
    }
    for (const f of folders) if (!(await walk(f))) return false;
    return true;
  };
  return (await walk(ROOT)) && matched === last.size && trustedNow(last, rules);
}

/** The remote side's view of one connector entry, at `path` relative to the pair's root. */
export function remoteEntry(e: Entry, path: string, seenAt = Date.now()): SideEntry {
  if (e.kind === 'folder') return { path, kind: 'folder', ver: 'd' };
  const tag = e.etag ? `${e.etag}|${e.size ?? ''}` : undefined;
  const md5 = e.hashes?.md5;
  return {
    path,
    kind: 'file',
    id: tag,
    ver: tag ?? `t:${e.modified?.getTime() ?? ''}|${e.size ?? ''}`,
    hash: md5 ? `md5:${md5.toLowerCase()}` : undefined,
    size: e.size ?? undefined,
    modified: e.modified?.getTime(),
    seenAt,
  };
}

export const remoteAbs = (root: string, path: string) => (path === ROOT ? root : root === ROOT ? path : `${root}${path}`);

export async function remoteRootPresent(c: StorageConnector, root: string): Promise<boolean> {
  if (root === ROOT) return true;
  try {
    return (await c.stat(root)).kind === 'folder';
  } catch (e) {
    if (toServiceError(e).code === 'not_found') return false;
    throw e;
  }
}

/**
 * A local account's child as remoteEntry(entryOf(...)) makes it, from its stat result alone:
 * the same ETag, size and time (a `Date` rounds the milliseconds), no `Entry` in between.
 */
export function localAccountEntry(st: Stats, path: string, seenAt: number): SideEntry {
  if (st.isDirectory()) return { path, kind: 'folder', ver: 'd' };
  const tag = accountTag(st.ino, st.size, Math.round(st.mtimeMs));
  return { path, kind: 'file', id: tag, ver: tag, hash: undefined, size: st.size, modified: Math.round(st.mtimeMs), seenAt };
}

/**
 * The remote folder's tree, listing folders a few at a time; a failed listing throws (never
 * "empty"). `previous`, the side's last scan: for a local account, a file whose stat gives what
 * its previous entry says keeps that entry (both trees share it in memory).
 */
export async function scanRemote(c: StorageConnector, root: string, rules: Ignored, concurrency = 4, previous?: Tree): Promise<Tree> {
  const trusted = !!previous && scannedWith.get(previous) === rules;
  const tree: Tree = new Map();
  // `was`: the previous scan's entry at the path (looked up once: the store's copy makes it again each time).
  const add = (folders: string[], e: SideEntry, was: SideEntry | undefined) => {
    if (leftOut(rules, trusted, e.path, e.kind, was)) return;
    tree.set(e.path, e);
    if (e.kind === 'folder') folders.push(e.path);
  };
  // A local account: its stat results are read directly (the connector's checks still apply).
  const local = c instanceof LocalConnector ? c : undefined;
  const precision = c.features.modTimePrecisionMs ?? 1000;
  await eachRemoteFolder(root, concurrency, async (folder, asked) => {
    const folders: string[] = [];
    if (local) {
      for (const { name, st } of await local.listStats(remoteAbs(root, folder))) {
        const e = localAccountEntry(st, joinPath(folder, name), asked);
        const was = previous?.get(e.path);
        add(folders, was && keptAccountEntry(was, e, precision) ? was : e, was);
      }
    } else {
      for (const child of await c.list(remoteAbs(root, folder))) {
        const e = remoteEntry(child, joinPath(folder, child.name), asked);
        add(folders, e, previous?.get(e.path));
      }
    }
    return folders;
  });
  scannedWith.set(tree, rules);
  return tree;
}

/**
 * The same version and time as `was`, seen when its second of modification was already over
 * (not racy, docs/sync.md): a local account's new entry `e` would differ only in when it was seen.
 */
const keptAccountEntry = (was: SideEntry, e: SideEntry, precision: number) =>
  was.kind === e.kind && was.id === e.id && was.size === e.size && was.modified === e.modified && (e.kind === 'folder' || (was.seenAt !== undefined && was.seenAt >= was.modified! + precision));

/**
 * Lists the remote folder and every folder below it, a few at a time: `list` reads one (asked
 * at `asked`, ms) and the folders found in it are listed next. A failed listing throws.
 */
async function eachRemoteFolder(root: string, concurrency: number, list: (folder: string, asked: number) => Promise<string[] | void>): Promise<void> {
  const queue: string[] = [ROOT];
  let active = 0;
  let failure: unknown;
  await new Promise<void>((resolve) => {
    const pump = () => {
      if (failure !== undefined || (queue.length === 0 && active === 0)) return resolve();
      while (active < concurrency && queue.length) {
        const folder = queue.shift()!;
        active++;
        // Seen as of when the listing was asked for: the server may have answered any time after.
        list(folder, Date.now()).then(
          (folders) => {
            if (folders) queue.push(...folders);
            active--;
            pump();
          },
          (e) => {
            failure = e;
            active--;
            pump();
          },
        );
      }
    };
    pump();
  });
  if (failure !== undefined) throw new ServiceError(toServiceError(failure).code, `Listing the remote folder failed: ${toServiceError(failure).message}`, {}, { cause: failure });
}

/**
 * Whether the remote folder still holds exactly `last` (a scan or the stored rows, made with
 * `rules`) as far as storing goes: each entry stored the same (sameStored: a racy one too, as a
 * full scan would store nothing for it either), none added, none gone. Builds no tree; false at
 * the first difference. A failed listing throws, as a scan's does.
 */
export async function remoteUnchanged(c: StorageConnector, root: string, rules: Ignored, last: Tree, concurrency = 4): Promise<boolean> {
  const trusted = scannedWith.get(last) === rules;
  const local = c instanceof LocalConnector ? c : undefined;
  let matched = 0;
  let differs = false;
  // One child: whether it is stored as `last` holds it (or left out); a folder is walked next.
  const compact = trusted && last instanceof CompactTree ? last : undefined;
  const same = (e: SideEntry, folders: string[]) => {
    // The store's copy compares the entry on its packed form, making none again.
    if (compact?.storesSame(e.path, e)) {
      matched++;
      if (e.kind === 'folder') folders.push(e.path);
      return true;
    }
    const was = last.get(e.path);
    if (leftOut(rules, trusted, e.path, e.kind, was)) return true;
    if (!was || !sameStored(e, was)) return false;
    matched++;
    if (e.kind === 'folder') folders.push(e.path);
    return true;
  };
  await eachRemoteFolder(root, concurrency, async (folder, asked) => {
    const folders: string[] = [];
    if (differs) return folders;
    if (local) {
      for (const { name, st } of await local.listStats(remoteAbs(root, folder))) {
        const path = joinPath(folder, name);
        // Told from the stat numbers, where the copy can: no entry and no ETag text made.
        if (compact?.keepsAccountChild(path, st)) {
          matched++;
          if (st.isDirectory()) folders.push(path);
        } else if (!same(localAccountEntry(st, path, asked), folders)) return void (differs = true);
      }
    } else {
      for (const child of await c.list(remoteAbs(root, folder))) if (!same(remoteEntry(child, joinPath(folder, child.name), asked), folders)) return void (differs = true);
    }
    return folders;
  });
  return !differs && matched === last.size && trustedNow(last, rules);
}

/** `last` was just found to hold exactly what a scan with `rules` would: later passes need not ask them about its paths. */
function trustedNow(last: Tree, rules: Ignored): true {
  scannedWith.set(last, rules);
  return true;
}
