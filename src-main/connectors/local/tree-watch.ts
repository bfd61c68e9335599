/**
 * A watch of a folder and everything below it, for the local account's watch and a sync pair's
 * local folder.
 *
 * On Linux it costs one inotify watch per folder: a folder's watch already reports what happens
 * to its children (created, written, attributes, deleted, moved), so each folder gets one
 * non-recursive `fs.watch`, and an event re-reads only the name it names. Each folder keeps its
 * children's kind, inode, size and times, which tells an add from a change and says what an
 * unlinked name was. chokidar 4 puts an `fs.watch` on every file as well (one inotify watch, an
 * FSWatcher and its stat state each): over 50,000 files that was 50,501 inotify watches and about
 * 280 MB, against 501 watches and a few MB here. Elsewhere (macOS, Windows: folder watches there
 * behave differently and are not tried here) chokidar does the work behind the same events.
 *
 * Both report what changed after `ready` (not what was there), ignore symlinked folders' contents
 * (a link is reported with what it points to) and special files, and watch a deleted root again
 * once a folder of its name is back, reporting its contents as added.
 */
import { watch as fsWatch, type FSWatcher, type Stats } from 'node:fs';
import { lstat, opendir, stat } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { watch as chokidarWatch } from 'chokidar';
import { handMemoryBackSoon } from '../../memory';
import { isSpecial } from './files';

export interface Known {
  kind: 'file' | 'folder';
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

export interface TreeEvent {
  type: 'add' | 'addDir' | 'change' | 'unlink' | 'unlinkDir';
  /** Absolute path. */
  path: string;
  /** What is there now (add, addDir, change). */
  stats?: Stats;
  /** What the name was before (unlink, unlinkDir; change when known). */
  was?: Known;
}

export interface TreeWatchOptions {
  /** Paths (absolute) left out; an ignored folder is not entered. */
  ignored?: (abs: string) => boolean;
  /** false: the watch does not keep the process alive. */
  persistent?: boolean;
  /** Which implementation: per-folder watches (Linux default) or chokidar (elsewhere). */
  using?: 'folders' | 'chokidar';
}

export interface TreeWatch {
  /** Settles once the tree has been read and every folder is watched. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/** How often a watch whose root folder was deleted looks for it to be created again. */
export const ROOT_RECHECK_MS = 250;
/** Names stat'ed at once while reading a folder. */
const STAT_BATCH = 64;
const READS_AT_ONCE = 4;
/** A first read of the tree with at least this many names asks V8 to hand its garbage's memory back (memory.ts). */
const LARGE_READ = 10_000;

export function watchTree(root: string, onEvent: (e: TreeEvent) => void, onError: (e: Error) => void, options: TreeWatchOptions = {}): TreeWatch {
  const using = options.using ?? (process.platform === 'linux' ? 'folders' : 'chokidar');
  return using === 'folders' ? new FolderWatches(root, onEvent, onError, options) : chokidarTree(root, onEvent, onError, options);
}

/**
 * What a watch knows of many names (a folder's children, or chokidar's paths): name → slot,
 * each slot's kind, inode, size and times in typed arrays. An object of five fields per name,
 * two of them boxed doubles, cost about 120 bytes more each; a `Known` is made when asked for.
 */
export class KnownNames {
  private readonly slots = new Map<string, number>();
  private folders = new Uint8Array(0);
  /** ino, size, mtimeMs, ctimeMs of each slot. */
  private numbers = new Float64Array(0);
  private readonly free: number[] = [];
  private used = 0;

  get size(): number {
    return this.slots.size;
  }

  keys(): IterableIterator<string> {
    return this.slots.keys();
  }

  *[Symbol.iterator](): IterableIterator<[string, Known]> {
    for (const name of this.slots.keys()) yield [name, this.get(name)!];
  }

  get(name: string): Known | undefined {
    const i = this.slots.get(name);
    if (i === undefined) return undefined;
    const n = this.numbers;
    return { kind: this.folders[i] ? 'folder' : 'file', ino: n[4 * i], size: n[4 * i + 1], mtimeMs: n[4 * i + 2], ctimeMs: n[4 * i + 3] };
  }

  set(name: string, k: Known): void {
    let i = this.slots.get(name);
    if (i === undefined) {
      if (!this.free.length && this.used === this.folders.length) this.grow(Math.max(8, 2 * this.used));
      i = this.free.pop() ?? this.used++;
      this.slots.set(name, i);
    }
    this.folders[i] = k.kind === 'folder' ? 1 : 0;
    const n = this.numbers;
    n[4 * i] = k.ino;
    n[4 * i + 1] = k.size;
    n[4 * i + 2] = k.mtimeMs;
    n[4 * i + 3] = k.ctimeMs;
  }

  delete(name: string): boolean {
    const i = this.slots.get(name);
    if (i === undefined) return false;
    this.slots.delete(name);
    this.free.push(i);
    return true;
  }

  /** Makes room for `more` names beyond those known. */
  reserve(more: number): void {
    this.grow(this.used + Math.max(0, more - this.free.length));
  }

  private grow(capacity: number): void {
    if (capacity <= this.folders.length) return;
    const folders = new Uint8Array(capacity);
    const numbers = new Float64Array(4 * capacity);
    folders.set(this.folders.subarray(0, this.used));
    numbers.set(this.numbers.subarray(0, 4 * this.used));
    [this.folders, this.numbers] = [folders, numbers];
  }
}

const knownOf = (st: Stats): Known => ({ kind: st.isDirectory() ? 'folder' : 'file', ino: st.ino, size: st.isDirectory() ? 0 : st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
const gone = (e: unknown) => ['ENOENT', 'ENOTDIR', 'ELOOP'].includes((e as NodeJS.ErrnoException)?.code ?? '');
const asError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)));

/** What a name is now: stats (a symlink's target's), or undefined when absent, broken or special. */
async function look(abs: string): Promise<{ st: Stats; link: boolean } | undefined> {
  try {
    let st = await lstat(abs);
    const link = st.isSymbolicLink();
    if (link) st = await stat(abs);
    return isSpecial(st) ? undefined : { st, link };
  } catch (e) {
    if (gone(e)) return undefined;
    throw e;
  }
}

/**
 * A folder's names, read a batch at a time. `readdir` holds every entry in C memory at once
 * (scandir); after 100,000 names the allocator kept about 6 MB of it once idle.
 */
async function namesIn(abs: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of await opendir(abs, { bufferSize: 256 })) names.push(entry.name);
  return names;
}

interface Folder {
  abs: string;
  /**
   * `abs` with a separator at its end: a child's path is this and its name. `path.join`
   * normalises the whole path each time: about 1.4 KB of garbage per name in a first read, a
   * third of it. A name read from the folder or its watch is never `.` or `..` and has no
   * separator, so the two give the same path.
   */
  prefix: string;
  fsw?: FSWatcher;
  children: KnownNames;
  /** Names whose re-read is queued and not started: a burst of events costs one read. */
  queued: Set<string>;
  /** The folder's reads run one after another, in the order the events came. */
  tail: Promise<void>;
  closed: boolean;
}

class FolderWatches implements TreeWatch {
  readonly ready: Promise<void>;
  private readonly folders = new Map<string, Folder>();
  private rootGone?: NodeJS.Timeout;
  private rootIno?: number;
  private reading = 0;
  /** Names in the folders read for the first time so far. */
  private namesRead = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly onEvent: (e: TreeEvent) => void,
    private readonly onError: (e: Error) => void,
    private readonly options: TreeWatchOptions,
  ) {
    this.ready = this.open(root, false).then(() => {
      if (this.namesRead >= LARGE_READ) handMemoryBackSoon();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.rootGone) clearInterval(this.rootGone);
    for (const f of this.folders.values()) this.closeFolder(f);
    this.folders.clear();
  }

  /** Watches `abs` (before reading it, so nothing is missed between) and reads it, below too. */
  private open(abs: string, report: boolean): Promise<void> {
    const f: Folder = { abs, prefix: join(abs, sep), children: new KnownNames(), queued: new Set(), tail: Promise.resolve(), closed: false };
    this.folders.set(abs, f);
    try {
      f.fsw = fsWatch(abs, { persistent: this.options.persistent ?? true }, (_type, name) => this.event(f, name));
      f.fsw.on('error', (e) => this.failed(f, e));
    } catch (e) {
      this.folders.delete(abs);
      if (abs === this.root && gone(e)) this.waitForRoot();
      else this.failed(f, e);
      return Promise.resolve();
    }
    return this.queue(f, () => this.read(f, report));
  }

  private queue(f: Folder, task: () => Promise<void>): Promise<void> {
    f.tail = f.tail.then(() => (f.closed ? undefined : task())).catch((e) => this.failed(f, e));
    return f.tail;
  }

  private event(f: Folder, name: string | Buffer | null) {
    if (f.closed) return;
    // No name: something below changed that inotify could not say; read the folder again.
    if (name === null) return void this.queue(f, () => this.read(f, true));
    const n = name.toString();
    // A folder's own deletion or move comes with its own name; the parent reports it too, but
    // nothing reports the root's.
    if (f.abs === this.root && n === basename(f.abs)) void this.queue(f, () => this.checkRoot());
    if (f.queued.has(n)) return;
    f.queued.add(n);
    // One task reads every name queued by the time it starts, many at once (a copied-in folder
    // of thousands of files is not read one name after another).
    if (f.queued.size > 1) return;
    void this.queue(f, () => {
      const names = [...f.queued];
      f.queued.clear();
      return this.settle(f, names, true, []);
    });
  }

  private failed(f: Folder, e: unknown) {
    if (this.closed || f.closed || gone(e)) return;
    if (f.abs === this.root) void this.checkRoot();
    this.onError(asError(e));
  }

  /** Reads the folder: every name in it and every name it had is settled. */
  private async read(f: Folder, report: boolean): Promise<void> {
    const opened: Promise<void>[] = [];
    await this.slot();
    try {
      let names: string[];
      try {
        if (f.abs === this.root) this.rootIno = (await stat(f.abs)).ino;
        names = await namesIn(f.abs);
      } catch (e) {
        if (gone(e)) return f.abs === this.root ? this.checkRoot() : undefined;
        throw e;
      }
      if (!f.children.size) this.namesRead += names.length;
      // Room for the new names at once: no copies of the arrays as they grow.
      f.children.reserve(names.length - f.children.size);
      // A folder read for the first time knows no name the listing could lack: the listing as it is.
      await this.settle(f, f.children.size ? [...new Set([...names, ...f.children.keys()])] : names, report, opened);
    } finally {
      this.release();
    }
    // Outside the slot: the folders below need slots of their own.
    await Promise.all(opened);
  }

  /** At most READS_AT_ONCE folders are read at once (a start over many folders stays small). */
  private async slot(): Promise<void> {
    if (this.reading < READS_AT_ONCE) {
      this.reading++;
      return;
    }
    await new Promise<void>((res) => this.waiting.push(res));
  }

  private release() {
    const next = this.waiting.shift();
    if (next) next();
    else this.reading--;
  }

  private ignored(abs: string) {
    return this.options.ignored?.(abs) ?? false;
  }

  /** Reads names again, STAT_BATCH at a time, and reports how each differs from what the folder knew. */
  private async settle(f: Folder, names: string[], report: boolean, opened: Promise<void>[]): Promise<void> {
    for (let i = 0; i < names.length; i += STAT_BATCH) {
      const batch = names.slice(i, i + STAT_BATCH);
      const now = await Promise.all(
        batch.map((n) => {
          const abs = f.prefix + n;
          // null: left as it was (ignored, or cannot be read: permissions, reported as an error).
          if (this.ignored(abs)) return null;
          return look(abs).catch((e) => (this.failed(f, e), null));
        }),
      );
      if (f.closed) return;
      batch.forEach((n, j) => {
        const it = now[j];
        if (it !== null) this.apply(f, n, it, report, opened);
      });
    }
  }

  private apply(f: Folder, name: string, now: { st: Stats; link: boolean } | undefined, report: boolean, opened: Promise<void>[]) {
    const abs = f.prefix + name;
    const was = f.children.get(name);
    const kind = now && (now.st.isDirectory() ? 'folder' : 'file');
    if (was && (!now || was.kind !== kind || (kind === 'folder' && was.ino !== now.st.ino))) {
      this.remove(f, name, was);
      if (!now) return;
    } else if (was && now) {
      const k = knownOf(now.st);
      if (kind === 'file' && (k.ino !== was.ino || k.size !== was.size || k.mtimeMs !== was.mtimeMs || k.ctimeMs !== was.ctimeMs)) {
        f.children.set(name, k);
        if (report) this.onEvent({ type: 'change', path: abs, stats: now.st, was });
      }
      return;
    }
    if (!now) return;
    f.children.set(name, knownOf(now.st));
    if (report) this.onEvent({ type: kind === 'folder' ? 'addDir' : 'add', path: abs, stats: now.st });
    if (kind === 'folder' && !now.link) opened.push(this.open(abs, report));
  }

  /** A name gone (or another thing now): everything below it is reported gone first. */
  private remove(f: Folder, name: string, was: Known) {
    const abs = f.prefix + name;
    f.children.delete(name);
    const sub = this.folders.get(abs);
    if (sub) this.drop(sub);
    this.onEvent({ type: was.kind === 'folder' ? 'unlinkDir' : 'unlink', path: abs, was });
  }

  private drop(f: Folder) {
    this.closeFolder(f);
    this.folders.delete(f.abs);
    for (const [name, was] of f.children) this.remove(f, name, was);
  }

  private closeFolder(f: Folder) {
    f.closed = true;
    f.fsw?.close();
  }

  /** The root deleted, moved away or replaced: report its contents gone, then wait for it. */
  private async checkRoot(): Promise<void> {
    const r = this.folders.get(this.root);
    if (!r || this.closed) return;
    // stat, not lstat: the root may be a link to the folder (its ino was taken the same way).
    const now = await stat(this.root).catch(() => undefined);
    if (now?.isDirectory() && (this.rootIno === undefined || now.ino === this.rootIno)) return;
    if (this.folders.get(this.root) !== r || this.closed) return;
    this.drop(r);
    this.onEvent({ type: 'unlinkDir', path: this.root });
    this.waitForRoot();
  }

  private waitForRoot() {
    if (this.rootGone || this.closed) return;
    this.rootGone = setInterval(() => {
      void stat(this.root).then(
        (st) => {
          if (!st.isDirectory() || !this.rootGone || this.closed) return;
          clearInterval(this.rootGone);
          this.rootGone = undefined;
          void this.open(this.root, true);
        },
        () => {},
      );
    }, ROOT_RECHECK_MS);
    this.rootGone.unref();
  }
}

/** The same events through chokidar, which watches every file as well as every folder. */
function chokidarTree(root: string, onEvent: (e: TreeEvent) => void, onError: (e: Error) => void, options: TreeWatchOptions): TreeWatch {
  const known = new KnownNames();
  let ready = false;
  const w = chokidarWatch(root, { alwaysStat: true, persistent: options.persistent ?? true, ignored: options.ignored });
  const added = (type: 'add' | 'addDir') => (p: string, st?: Stats) => {
    if (p === root || (st && isSpecial(st))) return;
    if (st) known.set(p, knownOf(st));
    if (ready) onEvent({ type, path: p, stats: st });
  };
  const removed = (type: 'unlink' | 'unlinkDir') => (p: string) => {
    const was = known.get(p);
    known.delete(p);
    onEvent({ type, path: p, was });
  };
  // The root itself deleted: its watch died with it (chokidar does not notice a new folder of
  // that name), so look for it again until it is back, then watch it anew.
  let rootGone: NodeJS.Timeout | undefined;
  const rewatchRoot = () => {
    onEvent({ type: 'unlinkDir', path: root });
    if (rootGone) return;
    rootGone = setInterval(() => {
      void stat(root).then(
        (st) => {
          if (!st.isDirectory() || !rootGone) return;
          clearInterval(rootGone);
          rootGone = undefined;
          w.unwatch(root);
          w.add(root);
        },
        () => {},
      );
    }, ROOT_RECHECK_MS);
    rootGone.unref();
  };
  w.on('add', added('add'));
  w.on('addDir', added('addDir'));
  w.on('change', (p, st) => {
    if (st && isSpecial(st)) return;
    const was = known.get(p);
    if (st) known.set(p, knownOf(st));
    onEvent({ type: 'change', path: p, stats: st, was });
  });
  w.on('unlink', removed('unlink'));
  w.on('unlinkDir', (p) => (p === root ? rewatchRoot() : removed('unlinkDir')(p)));
  w.on('error', (e) => onError(asError(e)));
  return {
    ready: new Promise<void>((res) => w.once('ready', () => res())).then(() => void (ready = true)),
    close: async () => {
      if (rootGone) clearInterval(rootGone);
      rootGone = undefined;
      await w.close();
    },
  };
}
