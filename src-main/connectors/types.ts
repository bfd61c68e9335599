/**
 * The connector contract, rclone's way: a small mandatory core every backend implements
 * (stat, list, read, write, mkdir, remove) and a read-only `features` object whose optional
 * functions exist only where the backend can really do them. Callers narrow with
 * `if (c.features.move)`; the storage service falls back (copy+remove, plain write) when a
 * feature is absent.
 *
 * Every storage backend here is path-addressed: an entry's upstream id is its absolute POSIX
 * path inside the account ('/' is the account root). Connectors throw `ServiceError` with the
 * documented codes (not_found, naming_conflict, folder_not_empty, upstream_auth_failed,
 * service_not_available, ...), never raw library errors.
 */
import type { Readable } from 'node:stream';
import type { z } from 'zod';

export type HashType = 'md5' | 'sha1' | 'sha256';

export interface Entry {
  /** Upstream id: absolute path inside the account, '/' for the root, no trailing slash. */
  path: string;
  name: string;
  kind: 'file' | 'folder';
  /** Bytes; null when unknown (and for folders). */
  size: number | null;
  modified: Date | null;
  created: Date | null;
  mimeType?: string;
  /** Opaque change tag (WebDAV/S3 ETag, mtime+size elsewhere); used for cache and change detection. */
  etag?: string;
  hashes?: Partial<Record<HashType, string>>;
  /** Raw upstream data, served as `raw` (v0), `raw.object` (v1+). */
  raw?: Record<string, unknown>;
}

export interface ReadOptions {
  /** Byte range, inclusive start and inclusive end (HTTP Range semantics). */
  start?: number;
  end?: number;
  signal?: AbortSignal;
  /** The file's size, when the caller has just looked it up: a connector may choose how to read by it. */
  size?: number;
}

export interface WriteOptions {
  /** Exact byte count when known; backends that need it up front (S3 PUT) require it. */
  size?: number;
  mimeType?: string;
  modified?: Date;
  signal?: AbortSignal;
  /** Publish without replacing; see NoReplace. Absent: the write replaces what has the name. */
  noReplace?: NoReplace;
  /**
   * Replace only this version: the `etag` the file at the name had when it was looked at. Checked
   * by the server in the same step as the publish where it can (WebDAV's `If` header on the MOVE
   * into place, S3 and Azure `If-Match`), else right before the rename into place (local folder,
   * SFTP, SMB: a window of one round trip). When the file there has another ETag, or is gone, the
   * write throws `ChangedMeanwhile` (conflict) and leaves nothing behind. Servers that ignore the
   * condition (s3rver) replace plainly.
   */
  ifMatch?: string;
  /**
   * The name (a `tempName()`) of the temporary file beside the target, where the backend writes
   * one: a caller that journals it can remove what a kill left behind. Absent: a fresh one.
   */
  tempName?: string;
}

/** `writeFile`'s options: a write's, and the bytes sent as they go. */
export interface WriteFileOptions extends WriteOptions {
  /**
   * Called with each count of bytes sent since the last call, where the backend can tell while
   * the file goes (SMB); a backend that cannot may call it once at the end, or never.
   */
  onBytes?(n: number): void;
}

/**
 * A no-replace publish: the bytes become visible under the name only if nothing holds the name at
 * that instant, checked by the backend itself in the same step (local `link`, WebDAV `MOVE` with
 * `Overwrite: F`, SFTP's plain rename, SMB rename without replace, S3 `PutObject` with
 * `If-None-Match: *`, Azure `If-None-Match: *`), so a writer outside Tributary is never
 * overwritten. When the name is taken, a backend that still holds the bytes (a temporary file)
 * asks `next` for another path and publishes there; one whose publish consumed the bytes (S3,
 * Azure) cannot. Either way, when no other path is given the write throws naming_conflict and
 * leaves nothing behind. The written entry's `path` says where the file went.
 *
 * Backends that cannot check in the same step (`features.noReplace` false: S3 multipart uploads,
 * servers that ignore the condition) publish plainly; Tributary's own name reservations still
 * keep its concurrent writers apart.
 */
export interface NoReplace {
  /** The path to try after `taken` was found taken; undefined gives up with naming_conflict. */
  next?(taken: string): Promise<string | undefined>;
}

/** One sharing permission (spec 1, legacy permission endpoints: `{id, email, name, role}`). */
export interface Permission {
  id: string;
  email: string | null;
  name: string;
  role: string;
}

/** Principal (a permission id, or an e-mail where the backend has them) → role; '' removes it. */
export type PermissionChanges = Record<string, string>;

export interface PermissionsFeature {
  list(path: string): Promise<Permission[]>;
  /** Applies `changes`; with `replace`, principals not named lose their access (PUT). */
  update(path: string, changes: PermissionChanges, options: { replace: boolean }): Promise<Permission[]>;
}

export interface Quota {
  used: number | null;
  total: number | null;
}

export interface StorageConnector {
  readonly features: StorageFeatures;
  /** Metadata of one entry; not_found when absent. */
  stat(path: string): Promise<Entry>;
  /**
   * Direct children of a folder; not_found when absent, invalid_parent_folder when a file.
   * A connector that reads its answer piece by piece may hand each entry to `each` as it is made,
   * in the order of the array it returns (the caller's work on a long listing then overlaps the
   * rest of the answer); the array returned is always the whole listing.
   */
  list(path: string, each?: (entry: Entry) => void): Promise<Entry[]>;
  read(path: string, options?: ReadOptions): Promise<Readable>;
  /**
   * Creates or overwrites the file at `path` with the streamed body. The parent folder exists
   * (the service checks). Name-conflict policy is the service's job (services/names.ts); the
   * connector only refuses to replace when asked (`noReplace`). An aborted `signal` stops the
   * write and leaves no partial file.
   */
  write(path: string, body: Readable, options?: WriteOptions): Promise<Entry>;
  /** Creates one folder whose parent exists; naming_conflict when the name is taken. */
  mkdir(path: string): Promise<Entry>;
  /** Permanent removal; a non-empty folder needs `recursive`, else folder_not_empty. */
  remove(path: string, options: { recursive: boolean }): Promise<void>;
  /** Releases sockets, pools and watchers. */
  close(): Promise<void>;
}

export interface TrashFeature {
  /** Moves the entry to the backend's own trash (restorable by the user outside Tributary); resolves with its path in the trash. */
  put(path: string): Promise<string>;
  /** Puts an entry of the trash (a path `put` returned) back where it was deleted from; naming_conflict when that name is taken again. */
  restore?(trashPath: string): Promise<Entry>;
  /** Entries currently in the trash, served as the special folder `trash`. */
  list(): Promise<Entry[]>;
}

/** A change seen by a backend's own push mechanism (file system events, IMAP IDLE, ...). */
export interface RawChange {
  type: 'add' | 'update' | 'delete' | 'rename' | 'move';
  path: string;
  previousPath?: string;
  kind: 'file' | 'folder';
  entry?: Entry;
}

export interface Watcher {
  close(): Promise<void>;
}

/** A part confirmed by the backend; JSON-serializable so that it survives a restart. */
export interface PartReceipt {
  partNumber: number;
  size: number;
  etag?: string;
}

/** Bytes `start` to `start + length - 1` of the file at `path` on this computer's disk. */
export interface FilePart {
  path: string;
  start: number;
  length: number;
}

/**
 * Native multipart upload (S3 UploadPart, Azure stage block, offset writes). `state` is
 * JSON-serializable and persisted, so `resumeChunkWriter` can continue after a crash.
 */
export interface ChunkWriter {
  readonly partSize: number;
  readonly parallel: boolean;
  readonly state: Record<string, unknown>;
  writePart(partNumber: number, body: Buffer, signal?: AbortSignal): Promise<PartReceipt>;
  /**
   * Sends a part straight from a file on this computer's disk, read by range, so the part is
   * never held in memory (the uploader's source is a file). Absent: parts come as buffers.
   */
  writeFilePart?(partNumber: number, part: FilePart, signal?: AbortSignal): Promise<PartReceipt>;
  /** Publishes the file; with `noReplace`, as WriteOptions.noReplace (then it may go to another path). */
  complete(parts: PartReceipt[], options?: { noReplace?: NoReplace }): Promise<Entry>;
  abort(): Promise<void>;
}

/** Options of `StorageFeatures.readToFile`. */
export interface ReadToFileOptions {
  /** First byte (default 0), written at the same offset of the local file. */
  start?: number;
  /**
   * End of the range (exclusive), for connectors with `readRangesToFile`: only [start, end) is
   * written, into the existing local file, and nothing else of it is touched.
   */
  end?: number;
  signal?: AbortSignal;
  /** Growth of the written run from `start` (every byte before start + the sum is in the file). */
  onBytes?(n: number): void;
}

export interface StorageFeatures {
  caseSensitive: boolean;
  hashes: HashType[];
  /** Precision of stored modification times in ms; null when the backend keeps none. */
  modTimePrecisionMs: number | null;
  /** A failed or interrupted write never leaves a partial file visible under the final name. */
  atomicWrites: boolean;
  /** `write` honours WriteOptions.noReplace: the backend itself refuses to replace at publish. */
  noReplace: boolean;
  /** Server-side rename/move; `to` does not exist yet. */
  move?(from: string, to: string): Promise<Entry>;
  /** Server-side copy of a file or a whole folder tree (see copyFilesOnly); `to` does not exist yet. */
  copy?(from: string, to: string): Promise<Entry>;
  /**
   * `copy` takes single files only (SFTP copy-data, SMB COPYCHUNK): the storage service copies a
   * folder tree itself, creating its folders and copying each file through `copy`.
   */
  copyFilesOnly?: boolean;
  /**
   * The file on this computer's disk that holds the file at `path` (the local folder), so that a
   * copy out of it into a connector with `writeFile` is done by the file system.
   */
  localFile?(path: string): Promise<string>;
  /**
   * `write` from a file on this computer (`file`, an absolute path) instead of a stream: same
   * publish (atomic, `noReplace`), but the backend reads the file by its own means: the file
   * system's copy (copy_file_range or a reflink on one disk, an in-kernel copy across disks),
   * smbclient's `put`, or reads into a few reused buffers written to a socket (WebDAV).
   */
  writeFile?(path: string, file: string, options?: WriteFileOptions): Promise<Entry>;
  /**
   * `read` into a file on this computer instead of a stream: the bytes from `start` (default 0)
   * on are written into `file` at the same offset (a new file when `start` is 0), straight from
   * the connection. Resolves with the bytes written, or null when this answer cannot be read that
   * way (nothing was written; the caller streams instead). A broken connection rejects.
   */
  readToFile?(path: string, file: string, options?: ReadToFileOptions): Promise<number | null>;
  /**
   * `readToFile` takes `end`: several ranges of one file can be read at once into one local file
   * (the downloader splits big files into parallel ranges, as rclone's multi-thread downloads do).
   */
  readRangesToFile?: boolean;
  trash?: TrashFeature;
  quota?(): Promise<Quota>;
  /** Sharing permissions of an entry, where the backend has them (POSIX modes, S3 ACLs). */
  permissions?: PermissionsFeature;
  openChunkWriter?(path: string, plan: { size: number; partSize: number }): Promise<ChunkWriter>;
  resumeChunkWriter?(path: string, state: Record<string, unknown>): Promise<ChunkWriter>;
  /** Preferred multipart part size for a file of `size` bytes (≤ 10,000 parts). */
  partSizeFor?(size: number): number;
  /** Push notifications of changes below the root; absent where only polling works. */
  watch?(onChanges: (changes: RawChange[]) => void, onError: (e: Error) => void): Promise<Watcher>;
  /** A presigned URL a third party can PUT the file to (object stores). */
  uploadUrl?(path: string, options: { expiresIn: number; useHttp: boolean }): Promise<{ method: string; url: string }>;
}

/**
 * The body of an account import (spec 1, "Import an account"), which each connector maps to its
 * own options: `account`, `token`, `token_secret` and per-service extra parameters.
 */
export type ImportBody = Record<string, unknown> & {
  account?: unknown;
  token?: unknown;
  token_secret?: unknown;
};

/** The credential attributes of an import (spec 1, Import an account), as read back. */
export interface ImportCredentials {
  token?: string;
  token_secret?: string;
}

/** Per-kind connector instances; other kinds (mail) extend this by declaration merging. */
export interface ConnectorKinds {
  storage: StorageConnector;
}

export interface ConnectorContext {
  /** Tributary's data directory; a connector may keep private state below `dataDir/connectors`. */
  dataDir: string;
  accountId: number;
}

export interface ConnectorDefinition<K extends keyof ConnectorKinds = keyof ConnectorKinds, O = any> {
  /** Service identifier (`service` in the API): lowercase, stable. */
  id: string;
  /** Displayable service name (`service_name`). */
  name: string;
  kind: K;
  /** Service group of spec 1 (file_store, object_store) or our own (local, email). */
  group: 'file_store' | 'object_store' | 'local' | 'email' | 'reference';
  /**
   * Options, as a zod object. Its fields' `.meta({ title, description, secret, placeholder })`
   * drive the "connect account" form; `secret` fields are never sent back to the renderer;
   * `internal` fields (for tests and scripts) are left out of the form.
   */
  options: z.ZodType<O>;
  /** Maps an import body (spec 1) to options; the result is then validated by `options`. */
  fromImport(body: ImportBody): unknown;
  /**
   * The address an instance contacts, for connectors whose secret options can carry one (an
   * Azure connection string's `BlobEndpoint=`). A credential change that changes it moves the
   * account, like a changed host; connectors whose address lives only in non-secret options
   * need not define it.
   */
  endpoint?(options: O): string;
  /**
   * The import credentials these options hold (spec 1, Account: `token`, `token_secret`), the
   * inverse of `fromImport` for `retrieve_tokens`. By default the secret options in order.
   */
  credentialsOf?(options: O): ImportCredentials;
  /** The `account` display string for a new account (usually user@host). */
  describe(options: O): string;
  /**
   * A new instance. May resolve later: a connector whose SDK is heavy loads it (a dynamic import)
   * only when an account of its kind is first used, so that idle Tributary does not carry it.
   */
  create(options: O, context: ConnectorContext): ConnectorKinds[K] | Promise<ConnectorKinds[K]>;
  /**
   * Proves a new instance can reach its server with its credentials ("test connection", and
   * every import). Storage connectors default to listing the root.
   */
  verify?(instance: ConnectorKinds[K]): Promise<void>;
  /**
   * The server's identity where the user must confirm it before it is trusted (an SSH host key
   * never seen before), or null when there is nothing to confirm (known already, pinned in the
   * options, or nothing of the kind). The connect form shows it before connecting; confirming
   * sets `option` to `value`, which pins it.
   */
  unconfirmedIdentity?(options: O, context: ConnectorContext): Promise<ServerIdentity | null>;
}

export interface ServerIdentity {
  /** What is shown, e.g. `SHA256:…`. */
  fingerprint: string;
  /** Where and what, in words: "the host key (ED25519) of files.example.org:22". */
  what: string;
  option: string;
  value: string;
}
