/**
 * A side's last scan as the store keeps it between passes: the same tree, a fraction of the
 * memory. One object per entry with four strings of its own (path, `dev:ino`, `md5:<hex>`, a
 * stamp of four numbers) cost ~400 bytes; here numbers live in typed arrays (an MD5 in 16
 * bytes, a local stamp's times as two 64-bit integers), and an entry is made again, equal to
 * the one stored, when it is looked up. Read only: it is replaced, never changed.
 */
import type { BigIntStats, Stats } from 'node:fs';
import { etagFrom } from '../connectors/local/files';
import type { SideEntry, Tree } from './model';

const FOLDER = 1;
/** id is `${dev}:${ino}` (both in `dev` / `ino`). */
const ID_DEV_INO = 2;
/** hash is `md5:` and 32 hex digits (in `md5`). */
const HASH_MD5 = 4;
const VER_HASH = 8;
const VER_ID = 16;
const VER_DIR = 32;
/** stamp is `${size}:${mtimeNs}:${ctimeNs}:${ino}` (times in `mtimeNs` / `ctimeNs`). */
const STAMP_PACKED = 64;
/** id is a local account's ETag with the size, `${ino}-${size}-${mtime}|${size}` (hex, then decimal; in `ino`, `sizes`, `tagTime`). */
const ID_ACCOUNT_TAG = 128;

const MD5_TEXT = /^md5:[0-9a-f]{32}$/;
const STAMP_TEXT = /^\d+:(-?\d+):(-?\d+):\d+$/;
const ACCOUNT_TAG_TEXT = /^([0-9a-f]+)-([0-9a-f]+)-([0-9a-f]+)\|\d+$/;
/** A local account's child's identity and version: its ETag (connectors/local) with the size. */
export const accountTag = (ino: number, size: number, mtimeMs: number) => `${etagFrom(ino, size, mtimeMs)}|${size}`;

const num = (x: number) => (Number.isNaN(x) ? undefined : x);
/** Whether the whole number `b` is the double `x` (exactly: only below 2^53, else not told). */
const sameInt = (b: bigint, x: number) => b <= MAX_EXACT && Number(b) === x;
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

export class CompactTree extends Map<string, SideEntry> {
  /** The entries made again by this copy: a scan that kept one need not compare it field by field. */
  private readonly made = new WeakSet<SideEntry>();
  /** Path to entry number, in the order of the tree it was made from. */
  private readonly index = new Map<string, number>();
  private readonly flags: Uint8Array;
  /** NaN: none. */
  private readonly sizes: Float64Array;
  private readonly modified: Float64Array;
  private readonly seenAt: Float64Array;
  private readonly dev: Float64Array;
  private readonly ino: Float64Array;
  private readonly tagTime: Float64Array;
  private readonly md5: Buffer;
  private readonly mtimeNs: BigInt64Array;
  private readonly ctimeNs: BigInt64Array;
  /** What does not fit the forms above, as text (made only when some entry needs it). */
  private ids?: (string | undefined)[];
  private vers?: string[];
  private hashes?: (string | undefined)[];
  private stamps?: (string | undefined)[];

  /** A copy of `tree`. */
  static of(tree: Tree): CompactTree {
    return new CompactTree(tree.size, tree.values());
  }

  /** The `count` entries `entries` gives (each read once, kept by its path, in that order). */
  constructor(count: number, entries: Iterable<SideEntry>) {
    super();
    const n = count;
    this.flags = new Uint8Array(n);
    this.sizes = new Float64Array(n);
    this.modified = new Float64Array(n);
    this.seenAt = new Float64Array(n);
    this.dev = new Float64Array(n);
    this.ino = new Float64Array(n);
    this.tagTime = new Float64Array(n);
    this.md5 = Buffer.alloc(16 * n);
    this.mtimeNs = new BigInt64Array(n);
    this.ctimeNs = new BigInt64Array(n);
    let i = 0;
    for (const e of entries) {
      if (i === n) throw new Error('More entries than counted.');
      this.put(i++, e.path, e);
    }
    if (i !== n) throw new Error('Fewer entries than counted.');
  }

  /**
   * Stores entry `i`. Each packed form is used only when the text made back from it is exactly
   * the entry's own; anything else is kept as text.
   */
  private put(i: number, path: string, e: SideEntry): void {
    this.index.set(path, i);
    let f = e.kind === 'folder' ? FOLDER : 0;
    this.sizes[i] = e.size ?? NaN;
    this.modified[i] = e.modified ?? NaN;
    this.seenAt[i] = e.seenAt ?? NaN;
    const colon = e.id?.indexOf(':') ?? -1;
    if (e.id && colon > 0) {
      const dev = Number(e.id.slice(0, colon));
      const ino = Number(e.id.slice(colon + 1));
      if (`${dev}:${ino}` === e.id) {
        this.dev[i] = dev;
        this.ino[i] = ino;
        f |= ID_DEV_INO;
      }
    }
    const tag = e.id && e.size !== undefined && !(f & ID_DEV_INO) ? ACCOUNT_TAG_TEXT.exec(e.id) : null;
    if (tag) {
      const [ino, time] = [parseInt(tag[1], 16), parseInt(tag[3], 16)];
      if (accountTag(ino, e.size!, time) === e.id) {
        this.ino[i] = ino;
        this.tagTime[i] = time;
        f |= ID_ACCOUNT_TAG;
      }
    }
    if (!(f & (ID_DEV_INO | ID_ACCOUNT_TAG)) && e.id !== undefined) (this.ids ??= [])[i] = e.id;
    if (e.hash && MD5_TEXT.test(e.hash)) {
      this.md5.write(e.hash.slice(4), 16 * i, 'hex');
      f |= HASH_MD5;
    } else if (e.hash !== undefined) (this.hashes ??= [])[i] = e.hash;
    if (e.ver === e.hash) f |= VER_HASH;
    else if (e.ver === e.id) f |= VER_ID;
    else if (e.ver === 'd') f |= VER_DIR;
    else (this.vers ??= [])[i] = e.ver;
    const times = e.stamp !== undefined && f & ID_DEV_INO ? STAMP_TEXT.exec(e.stamp) : null;
    if (times && `${e.size}:${times[1]}:${times[2]}:${this.ino[i]}` === e.stamp) {
      this.mtimeNs[i] = BigInt(times[1]);
      this.ctimeNs[i] = BigInt(times[2]);
      // Read back as the same text (a time outside 64 bits would not be).
      if (`${this.mtimeNs[i]}` === times[1] && `${this.ctimeNs[i]}` === times[2]) f |= STAMP_PACKED;
    }
    if (!(f & STAMP_PACKED) && e.stamp !== undefined) (this.stamps ??= [])[i] = e.stamp;
    this.flags[i] = f;
  }

  /** Entry `i`, made again. */
  private entry(i: number, path: string): SideEntry {
    const f = this.flags[i];
    const id = f & ID_DEV_INO ? `${this.dev[i]}:${this.ino[i]}` : f & ID_ACCOUNT_TAG ? accountTag(this.ino[i], this.sizes[i], this.tagTime[i]) : this.ids?.[i];
    const hash = f & HASH_MD5 ? `md5:${this.md5.toString('hex', 16 * i, 16 * i + 16)}` : this.hashes?.[i];
    const size = num(this.sizes[i]);
    const e: SideEntry = {
      path,
      kind: f & FOLDER ? 'folder' : 'file',
      id,
      ver: f & VER_HASH ? hash! : f & VER_ID ? id! : f & VER_DIR ? 'd' : this.vers![i],
      hash,
      size,
      stamp: f & STAMP_PACKED ? `${size}:${this.mtimeNs[i]}:${this.ctimeNs[i]}:${this.ino[i]}` : this.stamps?.[i],
      modified: num(this.modified[i]),
      seenAt: num(this.seenAt[i]),
    };
    this.made.add(e);
    return e;
  }

  /**
   * True when the local entry stored at `path` is one a scan would keep as it is, by the stat
   * results `st` of what is there now (`kind`, as the scan tells it from them: a folder with the same device and inode; a hashed file with the same identity
   * and stamp), told from the packed numbers without making the entry again. False also where
   * this cannot tell (not packed, a number past 2^53): the caller then compares the entry itself.
   */
  keepsLocal(path: string, kind: 'file' | 'folder', st: BigIntStats): boolean {
    const i = this.index.get(path);
    if (i === undefined) return false;
    const f = this.flags[i];
    if ((f & FOLDER ? 'folder' : 'file') !== kind || !(f & ID_DEV_INO) || !sameInt(st.dev, this.dev[i]) || !sameInt(st.ino, this.ino[i])) return false;
    if (kind === 'folder') return true;
    return (
      (f & HASH_MD5 ? true : !!this.hashes?.[i]) &&
      !!(f & STAMP_PACKED) &&
      sameInt(st.size, this.sizes[i]) &&
      st.mtimeNs === this.mtimeNs[i] &&
      st.ctimeNs === this.ctimeNs[i]
    );
  }

  /**
   * Whether storing `e` at `path` would write nothing (model.ts sameStored with the entry stored
   * there), compared field by field on the packed form: no entry is made again.
   */
  storesSame(path: string, e: SideEntry): boolean {
    const i = this.index.get(path);
    if (i === undefined) return false;
    const f = this.flags[i];
    if ((f & FOLDER ? 'folder' : 'file') !== e.kind || num(this.sizes[i]) !== e.size) return false;
    const id =
      f & ID_DEV_INO
        ? e.id !== undefined && e.id === `${this.dev[i]}:${this.ino[i]}`
        : f & ID_ACCOUNT_TAG
          ? e.id !== undefined && e.id === accountTag(this.ino[i], this.sizes[i], this.tagTime[i])
          : this.ids?.[i] === e.id;
    if (!id) return false;
    const hash = f & HASH_MD5 ? e.hash !== undefined && e.hash === `md5:${this.md5.toString('hex', 16 * i, 16 * i + 16)}` : this.hashes?.[i] === e.hash;
    if (!hash) return false;
    const ver = f & VER_HASH ? e.ver === e.hash : f & VER_ID ? e.ver === e.id : f & VER_DIR ? e.ver === 'd' : this.vers?.[i] === e.ver;
    if (!ver) return false;
    return f & STAMP_PACKED ? e.stamp === `${num(this.sizes[i])}:${this.mtimeNs[i]}:${this.ctimeNs[i]}:${this.ino[i]}` : this.stamps?.[i] === e.stamp;
  }

  /**
   * True when a local account's child, by its stat results `st`, is stored the same as the entry
   * at `path` (storesSame with what the scan makes of it: a folder, or a file whose ETag and size
   * are its identity and version), told from the packed numbers without making either entry.
   * False also where this cannot tell: the caller then compares the entries.
   */
  keepsAccountChild(path: string, st: Stats): boolean {
    const i = this.index.get(path);
    if (i === undefined) return false;
    const f = this.flags[i];
    // The flags below leave out a packed hash or stamp; the text ones are looked at here.
    if (this.hashes?.[i] !== undefined || this.stamps?.[i] !== undefined) return false;
    if (st.isDirectory()) return f === (FOLDER | VER_DIR) && this.ids?.[i] === undefined && Number.isNaN(this.sizes[i]);
    return f === (ID_ACCOUNT_TAG | VER_ID) && this.sizes[i] === st.size && this.ino[i] === st.ino && this.tagTime[i] === Math.round(st.mtimeMs);
  }

  /** Whether `e` is an entry this copy made (entries are never changed: it is the one stored at its path). */
  holds(e: SideEntry): boolean {
    return this.made.has(e);
  }

  override get size(): number {
    return this.index.size;
  }

  override get(path: string): SideEntry | undefined {
    const i = this.index.get(path);
    return i === undefined ? undefined : this.entry(i, path);
  }

  override has(path: string): boolean {
    return this.index.has(path);
  }

  override keys(): MapIterator<string> {
    return this.index.keys();
  }

  override *entries(): MapIterator<[string, SideEntry]> {
    for (const [path, i] of this.index) yield [path, this.entry(i, path)];
  }

  override *values(): MapIterator<SideEntry> {
    for (const [path, i] of this.index) yield this.entry(i, path);
  }

  override [Symbol.iterator](): MapIterator<[string, SideEntry]> {
    return this.entries();
  }

  override forEach(fn: (value: SideEntry, key: string, map: Map<string, SideEntry>) => void, thisArg?: unknown): void {
    for (const [path, e] of this.entries()) fn.call(thisArg, e, path, this);
  }

  override set(_path: string, _entry: SideEntry): this {
    throw new Error('A compact tree is read only.');
  }

  override delete(_path: string): boolean {
    throw new Error('A compact tree is read only.');
  }

  override clear(): void {
    throw new Error('A compact tree is read only.');
  }
}
