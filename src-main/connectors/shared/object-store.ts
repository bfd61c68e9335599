/**
 * What object stores (S3, Azure Blob) have in common above their SDKs: a flat key space where
 * the account root is a key prefix, folders are prefixes (an empty one kept as a zero-byte
 * marker `<prefix>/`, a prefix with objects below it a folder even without one), and folder
 * moves and copies are server-side copies of every key below the prefix. A connector supplies
 * the few object operations; this class turns them into the StorageConnector core.
 */
import { Readable } from 'node:stream';
import { lookup as mimeLookup } from 'mime-types';
import { ServiceError } from '../../errors';
import type { Entry, ReadOptions, ReadToFileOptions, StorageConnector, StorageFeatures, WriteOptions } from '../types';
import { knownDate } from './dates';
import { ChangedMeanwhile } from './if-match';
import { DEFAULT_PART, partSizeFor } from './parts';
import { assertFree, baseName, isInside, ROOT } from './paths';
import { streamIntoFile } from './sinks';

/** An object below a prefix, as a flat listing gives it. */
export interface StoredObject {
  key: string;
  size: number;
  /** The store's ETag, quotes stripped. */
  etag?: string;
}

/** Objects copied or deleted at once by a folder move, copy or removal. */
const PARALLEL_OBJECTS = 8;

/** Rounds a move makes after the first for the objects that changed while it ran. */
const MOVE_RETRY_ROUNDS = 2;

/**
 * How long a read may go without a byte from the server before its connection counts as dead
 * (the WebDAV connector's body timeout). Only the server's silence counts: not while the reader is
 * behind.
 */
export const READ_IDLE_MS = 30_000;

/**
 * Runs `fn` over `items` with at most `limit` calls in flight. After the first failure no new call
 * is started; the calls in flight are let finish, then that first failure is thrown.
 */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  let failed = false;
  let failure: unknown;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (!failed && next < items.length) {
        const item = items[next++]!;
        try {
          await fn(item);
        } catch (e) {
          if (!failed) [failed, failure] = [true, e];
        }
      }
    }),
  );
  if (failed) throw failure;
}

/**
 * `body` as a stream that fails with `fail()` after `idleMs` without a byte while its reader waits
 * for one (a connection gone silent), and with `mapError(e)` for any error `body` emits; the
 * timer never keeps the process alive.
 */
function guardedRead(body: Readable, idleMs: number, fail: () => Error, mapError: (e: unknown) => Error): Readable {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const wait = () => {
    if (timer) timer.refresh();
    else timer = setTimeout(() => out.destroy(fail()), idleMs).unref();
  };
  const stopWaiting = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const out = new Readable({
    // With the default 16 KiB the body was paused and resumed for nearly every chunk; 1 MiB
    // per range raised the downloader's peak by some 30 MiB (4 ranges of 1 GiB).
    highWaterMark: Math.max(body.readableHighWaterMark, 256 * 1024),
    read() {
      wait();
      body.resume();
    },
    destroy(err, done) {
      stopWaiting();
      body.destroy();
      done(err);
    },
  });
  body.pause();
  body.on('data', (chunk: Buffer) => {
    if (out.push(chunk)) wait();
    else {
      // The reader is behind: no byte is asked for until it reads again.
      stopWaiting();
      body.pause();
    }
  });
  body.once('end', () => {
    ended = true;
    stopWaiting();
    out.push(null);
  });
  body.once('error', (e) => out.destroy(mapError(e)));
  body.once('close', () => {
    if (!ended && !out.destroyed) out.destroy(mapError(Object.assign(new Error('The connection closed before the end of the data.'), { code: 'ECONNRESET' })));
  });
  return out;
}

/** The Content-Type an object is stored with: the caller's, else guessed from the name. */
export const contentTypeOf = (path: string, mimeType?: string): string => mimeType || mimeLookup(baseName(path)) || 'application/octet-stream';

/** The buffer size of a streamed upload: one multipart part of a file of `size` bytes. */
export const uploadPartSize = (size: number | undefined): number => (size !== undefined ? partSizeFor(size) : DEFAULT_PART);

export abstract class ObjectStoreConnector implements StorageConnector {
  abstract readonly features: StorageFeatures;

  /** `prefix`: the key prefix of the account root, '' or ending in '/'. */
  protected constructor(protected readonly prefix: string) {}

  /** How long a read may go without a byte: READ_IDLE_MS (a subclass may shorten it, as tests do). */
  protected readonly readIdleMs: number = READ_IDLE_MS;

  // ---- what each store supplies ----------------------------------------------------------

  /** Maps the SDK's failure onto the documented codes (ServiceErrors pass through). */
  protected abstract mapError(e: unknown, what: string): ServiceError;
  /** The object stored under `path`'s key as a file entry; undefined when there is none. */
  protected abstract headFile(path: string): Promise<Entry | undefined>;
  /** The folder marker `key`; undefined when there is none. */
  protected abstract headMarker(key: string): Promise<{ modified: Date | null } | undefined>;
  /** Whether any object's key starts with `prefix`. */
  protected abstract anyBelow(prefix: string): Promise<boolean>;
  /** The level below `prefix`, page by page: its sub-prefixes and its objects as file entries. */
  protected abstract listLevel(prefix: string): AsyncIterable<{ prefixes: string[]; files: Entry[] }>;
  /** Every object at or below `prefix`, the marker included, each with its ETag where the store lists one. */
  protected abstract objectsBelow(prefix: string): Promise<StoredObject[]>;
  /** The bytes of `key`, exactly the range asked for. */
  protected abstract download(key: string, options: ReadOptions): Promise<Readable>;
  protected abstract putMarker(key: string): Promise<void>;
  /**
   * Deletes each object; one with an `etag` only while it still has that ETag. Returns the keys
   * not deleted because they had changed; an object already gone counts as deleted.
   */
  protected abstract deleteObjects(objects: { key: string; etag?: string }[]): Promise<string[]>;
  /**
   * Server-side copy of one object of `size` bytes to `to` (replaced if there). With `etag`, only
   * while the source still has that ETag: a source that changed or went throws ChangedMeanwhile.
   */
  protected abstract copyObject(from: string, to: string, size: number, etag?: string): Promise<void>;
  /** Raw data of a folder entry (served as `raw`) for its prefix. */
  protected abstract folderRaw(prefix: string): Record<string, unknown>;

  abstract write(path: string, body: Readable, options?: WriteOptions): Promise<Entry>;
  abstract close(): Promise<void>;

  /** The features every object store has; a connector adds its multipart and upload URLs. */
  protected commonFeatures() {
    return {
      caseSensitive: true,
      hashes: ['md5'],
      modTimePrecisionMs: 1000,
      atomicWrites: true,
      noReplace: true,
      move: (from: string, to: string) => this.moveOrCopy(from, to, true),
      copy: (from: string, to: string) => this.moveOrCopy(from, to, false),
      partSizeFor: (size: number) => partSizeFor(size),
      readToFile: (path: string, file: string, opts?: ReadToFileOptions) => this.readToFile(path, file, opts),
      readRangesToFile: true,
    } satisfies Partial<StorageFeatures>;
  }

  /**
   * A range [start, end) of the object into a local file (an object store serves ranges to any
   * number of connections at once, which is how aws cli and rclone download big objects). Without
   * `end`, null: the caller streams `read` as for any backend, chunk by chunk.
   */
  private async readToFile(path: string, file: string, opts: ReadToFileOptions = {}): Promise<number | null> {
    if (opts.end === undefined) return null;
    const start = opts.start ?? 0;
    opts.signal?.throwIfAborted();
    const stream = await this.read(path, { start, end: opts.end - 1, signal: opts.signal });
    return streamIntoFile(stream, file, { start, ranged: true, onBytes: opts.onBytes });
  }

  // ---- keys ------------------------------------------------------------------------------

  protected key(path: string): string {
    return this.prefix + path.slice(1);
  }

  /** The prefix of a folder's children (the root prefix for the root). */
  protected dirKey(path: string): string {
    return path === ROOT ? this.prefix : `${this.key(path)}/`;
  }

  protected pathOf(key: string): string {
    return '/' + key.slice(this.prefix.length).replace(/\/$/, '');
  }

  protected folderEntry(path: string, modified: Date | null = null): Entry {
    // A marker's date comes from the SDK as it parsed it, possibly an Invalid Date.
    return { path, name: baseName(path), kind: 'folder', size: null, modified: knownDate(modified), created: null, raw: this.folderRaw(this.dirKey(path)) };
  }

  protected async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw this.mapError(e, what);
    }
  }

  /** A URL a third party can PUT `path`'s object to (`uploadUrl`), minted by `sign` for its key. */
  protected async presignedPut(path: string, useHttp: boolean, sign: (key: string) => Promise<string>): Promise<{ method: string; url: string }> {
    const url = await this.call(path, () => sign(this.key(path)));
    // S3's and Azure's signatures cover host and path, not the scheme: the http variant stays valid.
    return { method: 'PUT', url: useHttp ? url.replace(/^https:/, 'http:') : url };
  }

  // ---- the core --------------------------------------------------------------------------

  /** The root's entry; a store that can check the container or bucket here does. */
  protected async statRoot(): Promise<Entry> {
    return this.folderEntry(ROOT);
  }

  async stat(path: string): Promise<Entry> {
    if (path === ROOT) return this.statRoot();
    const file = await this.headFile(path);
    if (file) return file;
    const marker = await this.headMarker(this.dirKey(path));
    if (marker) return this.folderEntry(path, marker.modified);
    // An implicit folder: objects exist below the prefix but no marker does.
    if (await this.anyBelow(this.dirKey(path))) return this.folderEntry(path);
    throw new ServiceError('not_found', `"${path}" was not found.`);
  }

  async list(path: string): Promise<Entry[]> {
    const folder = await this.stat(path);
    if (folder.kind !== 'folder') throw new ServiceError('invalid_parent_folder', `"${path}" is not a folder.`);
    const prefix = this.dirKey(path);
    const out: Entry[] = [];
    await this.call(path, async () => {
      for await (const page of this.listLevel(prefix)) {
        // A key with an empty segment next ("<prefix>/x", "a//b") has no path that names it: a
        // sub-prefix "<prefix>/" would be the folder itself again. Such keys are not shown.
        for (const p of page.prefixes) if (p.length > prefix.length + 1 && p.startsWith(prefix)) out.push(this.folderEntry(this.pathOf(p)));
        // The folder's own marker is listed among its objects: leave it out.
        for (const f of page.files) if (f.path !== path && f.name !== '') out.push(f);
      }
    });
    return out;
  }

  async read(path: string, options: ReadOptions = {}): Promise<Readable> {
    try {
      const body = await this.download(this.key(path), options);
      return guardedRead(
        body,
        this.readIdleMs,
        () => new ServiceError('service_not_available', `The server sent nothing for ${this.readIdleMs / 1000} s while "${baseName(path)}" was read.`, { retryAfter: 5 }),
        (e) => this.mapError(e, path),
      );
    } catch (e) {
      const err = this.mapError(e, path);
      if (err.code === 'not_found') {
        const entry = await this.stat(path);
        if (entry.kind === 'folder') throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
      }
      throw err;
    }
  }

  async mkdir(path: string): Promise<Entry> {
    await assertFree((p) => this.stat(p), path);
    await this.call(path, () => this.putMarker(this.dirKey(path)));
    return this.folderEntry(path, new Date());
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    if (path === ROOT) throw new ServiceError('forbidden', 'The root cannot be removed.');
    const entry = await this.stat(path);
    if (entry.kind === 'file') {
      await this.call(path, () => this.deleteObjects([{ key: this.key(path) }]));
      return;
    }
    const prefix = this.dirKey(path);
    const keys = (await this.objectsBelow(prefix)).map((o) => o.key);
    if (!recursive && keys.some((k) => k !== prefix)) throw new ServiceError('folder_not_empty', `The folder "${baseName(path)}" is not empty.`);
    await this.call(path, () => this.deleteObjects(keys.map((key) => ({ key }))));
  }

  /** The object `key` as it is now (size and ETag); undefined when it is gone. */
  private async objectNow(key: string): Promise<StoredObject | undefined> {
    const entry = await this.headFile('/' + key.slice(this.prefix.length));
    return entry && { key, size: entry.size ?? 0, etag: entry.etag };
  }

  /**
   * Server-side copy of one object or of every key below a prefix; a move deletes the sources
   * after. A move copies each object only while it still has the ETag it was listed with, and
   * deletes each source only while it still has the ETag copied: an object saved anew meanwhile is
   * copied again in its new version, up to MOVE_RETRY_ROUNDS more times; one still changing then
   * stays at the source (conflict). A failed copy phase removes what it copied (best effort).
   */
  protected async moveOrCopy(from: string, to: string, move: boolean): Promise<Entry> {
    if (to === from || isInside(to, from)) throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    const entry = await this.stat(from);
    await assertFree((p) => this.stat(p), to);
    const folder = entry.kind === 'folder';
    const src = folder ? this.dirKey(from) : this.key(from);
    const dst = folder ? this.dirKey(to) : this.key(to);
    const target = (key: string) => dst + key.slice(src.length);
    const fail = (e: unknown) => (folder ? this.failed(from, move, e) : this.mapError(e, from));
    let objects: StoredObject[] = folder ? await this.objectsBelow(src) : [{ key: src, size: entry.size ?? 0, etag: entry.etag }];
    // A copy leaves its source as it is: each object is copied in the version there when it runs.
    if (!move) objects = objects.map(({ key, size }) => ({ key, size }));
    /** Destination keys written whose source is still there: what a failed copy phase removes. */
    const copied = new Set<string>();
    let movedAny = false;
    let changed: string[] = [];
    for (let round = 0; ; round++) {
      const stale = new Set<string>();
      try {
        await inParallel(objects, PARALLEL_OBJECTS, async (o) => {
          try {
            await this.copyObject(o.key, target(o.key), o.size, o.etag);
            copied.add(target(o.key));
          } catch (e) {
            if (!(e instanceof ChangedMeanwhile)) throw e;
            stale.add(o.key);
          }
        });
        // Keep the target visible as a folder even if the source was an implicit one.
        if (folder && round === 0 && !objects.some((o) => o.key === src)) await this.putMarker(dst);
      } catch (e) {
        await this.deleteObjects([...copied].map((key) => ({ key }))).catch(() => {});
        throw fail(e);
      }
      if (!move) return folder ? this.folderEntry(to, new Date()) : this.stat(to);
      const copiedNow = objects.filter((o) => !stale.has(o.key));
      let kept: string[];
      try {
        kept = await this.deleteObjects(copiedNow.map((o) => ({ key: o.key, etag: o.etag })));
      } catch (e) {
        throw fail(e);
      }
      for (const o of copiedNow) {
        if (kept.includes(o.key)) continue;
        copied.delete(target(o.key));
        movedAny = true;
      }
      changed = [...stale, ...kept];
      if (!changed.length || round === MOVE_RETRY_ROUNDS) break;
      // What changed meanwhile is copied again as it is now; what went has nothing left to move.
      let now: (StoredObject | undefined)[];
      try {
        now = await Promise.all(changed.map((key) => this.objectNow(key)));
      } catch (e) {
        throw fail(e);
      }
      objects = now.filter((o): o is StoredObject => o !== undefined);
      changed = [];
      if (!objects.length) break;
    }
    if (changed.length) {
      const first = changed[0]!;
      const others = changed.length > 1 ? ` and ${changed.length - 1} other file${changed.length > 2 ? 's' : ''}` : '';
      const where = copied.has(target(first)) ? 'the newer version stays at the source and the destination holds the earlier one' : 'it stays at the source';
      const what = folder ? `"${this.pathOf(first)}"${others} changed while the folder "${from}" was moved` : `"${from}" changed while it was moved`;
      throw new ServiceError('conflict', `${what}: ${where}.`);
    }
    if (!folder && !movedAny && !copied.size) throw new ServiceError('not_found', `"${from}" was not found.`);
    return folder ? this.folderEntry(to, new Date()) : this.stat(to);
  }

  /** A folder move or copy that failed, with the code of its cause. */
  private failed(from: string, move: boolean, e: unknown): ServiceError {
    const cause = this.mapError(e, from);
    return new ServiceError(cause.code, `The folder ${move ? 'move' : 'copy'} of "${from}" failed: ${cause.message}`, cause.details, { cause });
  }
}
