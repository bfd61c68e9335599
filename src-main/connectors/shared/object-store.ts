/**
 * What object stores (S3, Azure Blob) have in common above their SDKs: a flat key space where
 * the account root is a key prefix, folders are prefixes (an empty one kept as a zero-byte
 * marker `<prefix>/`, a prefix with objects below it a folder even without one), and folder
 * moves and copies are server-side copies of every key below the prefix. A connector supplies
 * the few object operations; this class turns them into the StorageConnector core.
 */
import type { Readable } from 'node:stream';
import { lookup as mimeLookup } from 'mime-types';
import { ServiceError } from '../../errors';
import type { Entry, ReadOptions, ReadToFileOptions, StorageConnector, StorageFeatures, WriteOptions } from '../types';
import { knownDate } from './dates';
import { DEFAULT_PART, partSizeFor } from './parts';
import { assertFree, baseName, isInside, ROOT } from './paths';
import { streamIntoFile } from './sinks';

/** An object below a prefix, as a flat listing gives it. */
export interface StoredObject {
  key: string;
  size: number;
}

/** Objects copied or deleted at once by a folder move, copy or removal. */
const PARALLEL_OBJECTS = 8;

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/** The Content-Type an object is stored with: the caller's, else guessed from the name. */
export const contentTypeOf = (path: string, mimeType?: string): string => mimeType || mimeLookup(baseName(path)) || 'application/octet-stream';

/** The buffer size of a streamed upload: one multipart part of a file of `size` bytes. */
export const uploadPartSize = (size: number | undefined): number => (size !== undefined ? partSizeFor(size) : DEFAULT_PART);

export abstract class ObjectStoreConnector implements StorageConnector {
  abstract readonly features: StorageFeatures;

  /** `prefix`: the key prefix of the account root, '' or ending in '/'. */
  protected constructor(protected readonly prefix: string) {}

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
  /** Every object at or below `prefix`, the marker included. */
  protected abstract objectsBelow(prefix: string): Promise<StoredObject[]>;
  /** The bytes of `key`, exactly the range asked for. */
  protected abstract download(key: string, options: ReadOptions): Promise<Readable>;
  protected abstract putMarker(key: string): Promise<void>;
  protected abstract deleteObjects(keys: string[]): Promise<void>;
  /** Server-side copy of one object of `size` bytes to a key that does not exist yet. */
  protected abstract copyObject(from: string, to: string, size: number): Promise<void>;
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
        for (const p of page.prefixes) if (p !== prefix) out.push(this.folderEntry(this.pathOf(p)));
        // The folder's own marker is listed among its objects: leave it out.
        for (const f of page.files) if (f.path !== path) out.push(f);
      }
    });
    return out;
  }

  async read(path: string, options: ReadOptions = {}): Promise<Readable> {
    try {
      return await this.download(this.key(path), options);
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
    if (entry.kind === 'file') return this.call(path, () => this.deleteObjects([this.key(path)]));
    const prefix = this.dirKey(path);
    const keys = (await this.objectsBelow(prefix)).map((o) => o.key);
    if (!recursive && keys.some((k) => k !== prefix)) throw new ServiceError('folder_not_empty', `The folder "${baseName(path)}" is not empty.`);
    await this.deleteObjects(keys);
  }

  /** Server-side copy of one object or of every key below a prefix; a move deletes the sources after. */
  protected async moveOrCopy(from: string, to: string, move: boolean): Promise<Entry> {
    if (to === from || isInside(to, from)) throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    const entry = await this.stat(from);
    await assertFree((p) => this.stat(p), to);
    if (entry.kind === 'file') {
      await this.copyObject(this.key(from), this.key(to), entry.size ?? 0);
      if (move) await this.call(from, () => this.deleteObjects([this.key(from)]));
      return this.stat(to);
    }
    const src = this.dirKey(from);
    const dst = this.dirKey(to);
    const objects = await this.objectsBelow(src);
    await inParallel(objects, PARALLEL_OBJECTS, (o) => this.copyObject(o.key, dst + o.key.slice(src.length), o.size));
    const keys = objects.map((o) => o.key);
    // Keep the target visible as a folder even if the source was an implicit one.
    if (!keys.includes(src)) await this.call(to, () => this.putMarker(dst));
    if (move) await this.deleteObjects(keys);
    return this.folderEntry(to, new Date());
  }
}
