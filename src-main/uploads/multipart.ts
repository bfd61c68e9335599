/**
 * Multipart sessions (spec 1, "Multipart upload" and "Multipart session"), one method per
 * endpoint:
 *
 *   POST   /accounts/{a}/multipart                 → init(a, {parentId, name, size?, overwrite})  201 session
 *   GET    /accounts/{a}/multipart/{id}            → info(a, id)                                   200 session
 *   PUT    /accounts/{a}/multipart/{id}?part_number → putPart(a, id, partNumber, body, length)     200
 *   POST   /accounts/{a}/multipart/{id}/complete   → complete(a, id)                               201 file
 *   DELETE /accounts/{a}/multipart/{id}            → abort(a, id)                                  204
 *   POST   /accounts/{a}/files/upload_url          → uploadUrl(a, {...})                           201 {method, url}
 *
 * Backends with a native ChunkWriter (S3 UploadPart, Azure stage block, offset writes) get the
 * parts directly; the others get a server-side assembly: parts are spooled to
 * `<dataDir>/multipart/<id>/` and streamed in order into one ordinary upload on complete, so the
 * whole file is never in memory. Sessions and confirmed parts are SQLite rows: a restart loses
 * nothing, and stale sessions are aborted by `abortStale`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline as piped, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { nowIso, type Db } from '../cache/db';
import { baseName, checkName, joinPath, ROOT } from '../connectors/shared/paths';
import type { ChunkWriter, Entry, FilePart, PartReceipt, StorageConnector } from '../connectors/types';
import type { Resource } from '../contract';
import { MULTIPART_MIN_SIZE } from '../contract/limits';
import { openFilePart } from '../connectors/shared/file-part';
import { ServiceError } from '../errors';
import type { AccountsService } from '../services/accounts';
import type { StorageService } from '../services/storage';

const MiB = 1024 * 1024;
export { MULTIPART_MIN_SIZE } from '../contract/limits';
export const MAX_PARTS = 10_000;
/** Part size of the spooled assembly when the backend has no preference. */
export const DEFAULT_PART_SIZE = 8 * MiB;

/**
 * The backend no longer knows the session's upload (S3 NoSuchUpload, a local temporary file that
 * is gone): the confirmed parts are lost and the upload must start over.
 */
export class UploadLostError extends ServiceError {
  constructor(id: number, cause: unknown) {
    super('not_found', `The server no longer has the parts of multipart session ${id}; start the upload again.`, {}, { cause });
    this.name = 'UploadLostError';
  }
}

/** Spec 1, "Multipart session". */
export interface MultipartSession {
  id: number;
  account: number;
  part_size: number;
  parallel_uploads: boolean;
}

export interface InitInput {
  parentId: string;
  name: string;
  /** Total bytes; required where the backend needs it up front (native multipart). */
  size?: number;
  /** true replaces a same-named file; false picks "name (n).ext". */
  overwrite?: boolean;
}

export interface ConfirmedPart {
  partNumber: number;
  size: number;
  etag: string | null;
}

interface SessionRow {
  id: number;
  account_id: number;
  parent_path: string;
  name: string;
  path: string;
  overwrite: number;
  size: number | null;
  part_size: number;
  parallel: number;
  mode: 'native' | 'spool';
  writer_state: string | null;
  created: string;
  updated: string;
}

/** Whole-MiB part size ≥ 8 MiB that fits `size` in 10,000 parts. */
export function defaultPartSize(size: number | undefined): number {
  if (size === undefined) return DEFAULT_PART_SIZE;
  return Math.max(DEFAULT_PART_SIZE, Math.ceil(size / MAX_PARTS / MiB) * MiB);
}

/** What the multipart service uses of the app: sessions are rows, parts are spooled under `dataDir`. */
export interface MultipartDeps {
  db: Db;
  dataDir: string;
  accounts: AccountsService;
  storage: StorageService;
}

export class MultipartService {
  private readonly db: Db;
  /** Live chunk writers, rebuilt from `writer_state` after a restart. */
  private readonly writers = new Map<number, Promise<ChunkWriter>>();

  constructor(private readonly deps: MultipartDeps) {
    this.db = deps.db;
  }

  private spoolDir(id: number): string {
    return join(this.deps.dataDir, 'multipart', String(id));
  }

  private row(accountId: number, id: number): SessionRow {
    const row = Number.isSafeInteger(id)
      ? (this.db.prepare('SELECT * FROM multipart_sessions WHERE id = ? AND account_id = ?').get(id, accountId) as SessionRow | undefined)
      : undefined;
    if (!row) throw new ServiceError('not_found', `Multipart session ${id} was not found.`);
    return row;
  }

  /**
   * Sessions on this account send their parts to the backend as they come (a native chunk
   * writer); otherwise parts are spooled here and go to the backend as one upload on complete.
   */
  async partsGoUpstream(accountId: number): Promise<boolean> {
    return !!(await this.deps.accounts.storage(accountId)).features.openChunkWriter;
  }

  /** The session's parts are spooled here and go to the backend only on complete. */
  staged(accountId: number, id: number): boolean {
    return this.row(accountId, id).mode === 'spool';
  }

  private toSession(row: SessionRow): MultipartSession {
    return { id: row.id, account: row.account_id, part_size: row.part_size, parallel_uploads: row.parallel === 1 };
  }

  private touch(id: number): void {
    this.db.prepare('UPDATE multipart_sessions SET updated = ? WHERE id = ?').run(nowIso(), id);
  }

  private writer(row: SessionRow, connector: StorageConnector): Promise<ChunkWriter> {
    let w = this.writers.get(row.id);
    if (!w) {
      if (!connector.features.resumeChunkWriter) throw new ServiceError('internal_error', 'The backend lost its multipart support.');
      w = connector.features.resumeChunkWriter(row.path, JSON.parse(row.writer_state ?? '{}'));
      w.catch(() => this.writers.delete(row.id));
      this.writers.set(row.id, w);
    }
    return w;
  }

  /** The session's chunk writer; a backend that lost the upload (resume refused) is UploadLostError. */
  private async nativeWriter(accountId: number, row: SessionRow): Promise<ChunkWriter> {
    const connector = await this.deps.accounts.storage(accountId);
    return lostAsUploadLost(row.id, this.writer(row, connector));
  }

  // ---- spec endpoints -------------------------------------------------------------------------

  /** POST /accounts/{account}/multipart (201). */
  async init(accountId: number, input: InitInput): Promise<MultipartSession> {
    const name = checkName(input.name);
    const size = input.size;
    if (size !== undefined && (!Number.isSafeInteger(size) || size < 0)) throw new ServiceError('invalid_parameters', '`size` must be a whole number of bytes.');
    if (size !== undefined && size <= MULTIPART_MIN_SIZE) {
      throw new ServiceError('invalid_parameters', `Multipart uploads are for files larger than 5 MB (${MULTIPART_MIN_SIZE} bytes); use the standard upload.`);
    }
    const parent = await this.deps.storage.locate(accountId, input.parentId);
    if (parent.trash) throw new ServiceError('invalid_parent_folder', 'Nothing can be uploaded to the trash.');
    const c = parent.connector;
    const folder = parent.path === ROOT ? undefined : await c.stat(parent.path);
    if (folder && folder.kind !== 'folder') throw new ServiceError('invalid_parent_folder', 'The parent is not a folder.');
    // A native chunk writer plans its parts from the size; a session that announces none
    // (document 1 requires `size` only of three services, none of them here) is assembled from
    // the spooled parts instead, and its size is what the parts add up to.
    const native = !!c.features.openChunkWriter && size !== undefined;

    const partSize = native ? (c.features.partSizeFor?.(size!) ?? defaultPartSize(size)) : defaultPartSize(size);
    if (size !== undefined && Math.ceil(size / partSize) > MAX_PARTS) throw new ServiceError('invalid_parameters', `A multipart upload has at most ${MAX_PARTS} parts.`);

    // Names of sessions still open in this folder are taken too (they survive a restart; the
    // in-memory reservations do not).
    const open = input.overwrite
      ? []
      : (this.db.prepare('SELECT path FROM multipart_sessions WHERE account_id = ? AND parent_path = ?').all(accountId, parent.path) as { path: string }[]).map((r) => baseName(r.path));
    const claim = await this.deps.storage.claimName(accountId, c, parent.path, name, input.overwrite ? 'overwrite' : 'rename', open);
    try {
      const target = joinPath(parent.path, claim.name);
      let state: Record<string, unknown> | null = null;
      let parallel = true;
      let writer: ChunkWriter | undefined;
      if (native) {
        writer = await c.features.openChunkWriter!(target, { size: size!, partSize });
        state = writer.state;
        parallel = writer.parallel;
      }
      const now = nowIso();
      const info = this.db
        .prepare(
          `INSERT INTO multipart_sessions (account_id, parent_path, name, path, overwrite, size, part_size, parallel, mode, writer_state, created, updated)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(accountId, parent.path, name, target, input.overwrite ? 1 : 0, size ?? null, writer?.partSize ?? partSize, parallel ? 1 : 0, native ? 'native' : 'spool', state && JSON.stringify(state), now, now);
      const id = Number(info.lastInsertRowid);
      if (writer) this.writers.set(id, Promise.resolve(writer));
      // The name stays reserved until the session completes or is aborted, so parallel sessions
      // of one name get distinct names. After a restart the open sessions' rows stand in for
      // the reservations (`open` above).
      this.deps.storage.names.keep(claimOwner(id), claim);
      return this.toSession(this.row(accountId, id));
    } catch (e) {
      claim.release(false);
      throw e;
    }
  }

  /** GET /accounts/{account}/multipart/{id}. */
  info(accountId: number, id: number): MultipartSession {
    return this.toSession(this.row(accountId, id));
  }

  /** The parts confirmed so far, in part order (the uploader resumes from these). */
  parts(accountId: number, id: number): ConfirmedPart[] {
    this.row(accountId, id);
    return (this.db.prepare('SELECT part_number, size, etag FROM multipart_parts WHERE session_id = ? ORDER BY part_number').all(id) as { part_number: number; size: number; etag: string | null }[]).map(
      (p) => ({ partNumber: p.part_number, size: p.size, etag: p.etag }),
    );
  }

  /**
   * PUT /accounts/{account}/multipart/{id}?part_number=N. Parts come in any order (in parallel
   * when `parallel_uploads`); every part but the last is exactly `part_size`. Sending a part
   * number again replaces that part. `length` is the request's Content-Length when known: a
   * wrong size is refused before any byte is read (the caller then discards the body). `signal`
   * (e.g. the client went away) stops the part's transfer upstream.
   */
  async putPart(accountId: number, id: number, partNumber: number, body: Readable, length?: number, signal?: AbortSignal): Promise<ConfirmedPart> {
    const row = this.row(accountId, id);
    const expected = this.expectedSize(row, partNumber);
    if (length !== undefined) this.checkPartSize(row, partNumber, expected, length);
    const limit = expected ?? row.part_size;

    let receipt: PartReceipt;
    if (row.mode === 'native') {
      const buffer = await readAtMost(body, limit, partNumber);
      this.checkPartSize(row, partNumber, expected, buffer.length);
      const writer = await this.nativeWriter(accountId, row);
      receipt = await lostAsUploadLost(id, writer.writePart(partNumber, buffer, signal));
    } else {
      const dir = this.spoolDir(id);
      await mkdir(dir, { recursive: true });
      const temp = join(dir, `${partNumber}.${randomBytes(4).toString('hex')}.tmp`);
      const hash = createHash('md5');
      let size = 0;
      try {
        await pipeline(
          body,
          new Transform({
            transform(chunk: Buffer, _enc, done) {
              size += chunk.length;
              if (size > limit) return done(new ServiceError('invalid_parameters', `Part ${partNumber} is larger than ${limit} bytes.`));
              hash.update(chunk);
              done(null, chunk);
            },
          }),
          createWriteStream(temp),
          { signal },
        );
        this.checkPartSize(row, partNumber, expected, size);
        await rename(temp, join(dir, `${partNumber}.part`));
      } catch (e) {
        await unlink(temp).catch(() => {});
        throw e;
      }
      receipt = { partNumber, size, etag: hash.digest('hex') };
    }
    return this.confirm(accountId, id, receipt);
  }

  /**
   * The backend's writer takes parts straight from a file on this computer's disk
   * (ChunkWriter.writeFilePart): putFilePart then holds no part in memory.
   */
  async sendsFromFile(accountId: number, id: number): Promise<boolean> {
    const row = this.row(accountId, id);
    if (row.mode !== 'native') return false;
    return !!(await this.nativeWriter(accountId, row)).writeFilePart;
  }

  /**
   * A part read from a local file (the uploader's source): sent by range where the backend's
   * writer can (see sendsFromFile), otherwise read like a part of PUT …?part_number.
   */
  async putFilePart(accountId: number, id: number, partNumber: number, part: FilePart, signal?: AbortSignal): Promise<ConfirmedPart> {
    const row = this.row(accountId, id);
    const writer = row.mode === 'native' ? await this.nativeWriter(accountId, row) : undefined;
    if (!writer?.writeFilePart) {
      return this.putPart(accountId, id, partNumber, openFilePart(part), part.length, signal);
    }
    this.checkPartSize(row, partNumber, this.expectedSize(row, partNumber), part.length);
    return this.confirm(accountId, id, await lostAsUploadLost(id, writer.writeFilePart(partNumber, part, signal)));
  }

  /** Records a part the backend (or the spool) confirmed. */
  private confirm(accountId: number, id: number, receipt: PartReceipt): ConfirmedPart {
    // The session may have been aborted while the part was in flight.
    this.row(accountId, id);
    this.db
      .prepare('INSERT OR REPLACE INTO multipart_parts (session_id, part_number, size, etag, created) VALUES (?, ?, ?, ?, ?)')
      .run(id, receipt.partNumber, receipt.size, receipt.etag ?? null, nowIso());
    this.touch(id);
    return { partNumber: receipt.partNumber, size: receipt.size, etag: receipt.etag ?? null };
  }

  /**
   * POST /accounts/{account}/multipart/{id}/complete (201): the new file. `meter` sees the
   * bytes of a spooled session as they go to the backend (the web UI's progress).
   */
  async complete(accountId: number, id: number, options: { meter?: Transform } = {}): Promise<Resource> {
    const row = this.row(accountId, id);
    const parts = this.parts(accountId, id);
    if (parts.length === 0) throw new ServiceError('invalid_parameters', 'No part was uploaded.');
    parts.forEach((p, i) => {
      if (p.partNumber !== i + 1) throw new ServiceError('invalid_parameters', `Part ${i + 1} is missing.`);
      if (i < parts.length - 1 && p.size !== row.part_size) {
        throw new ServiceError('invalid_parameters', `Part ${p.partNumber} has ${p.size} bytes; every part but the last must have ${row.part_size}.`);
      }
    });
    const total = parts.reduce((sum, p) => sum + p.size, 0);
    if (row.size !== null && total !== row.size) {
      throw new ServiceError('invalid_parameters', `The parts hold ${total} bytes, not the ${row.size} announced.`);
    }
    const connector = await this.deps.accounts.storage(accountId);
    let resource: Resource;
    if (row.mode === 'native') {
      const writer = await this.writer(row, connector);
      let entry: Entry;
      // The session's reservation; after a restart a fresh one, for the no-replace publish's
      // next name.
      const names = this.deps.storage.names;
      const claim = { current: names.keptBy(claimOwner(id)) ?? (await this.deps.storage.claimName(accountId, connector, row.parent_path, baseName(row.path), row.overwrite ? 'overwrite' : 'rename')) };
      names.keep(claimOwner(id), claim.current);
      const noReplace = row.overwrite
        ? undefined
        : {
            next: async () => {
              claim.current = await claim.current.next();
              names.keep(claimOwner(id), claim.current);
              return joinPath(row.parent_path, claim.current.name);
            },
          };
      try {
        entry = await writer.complete(
          parts.map((p) => ({ partNumber: p.partNumber, size: p.size, etag: p.etag ?? undefined })),
          { noReplace },
        );
      } catch (e) {
        // A complete whose answer was lost (network) leaves the upload finished upstream and a
        // retry finds no session there: accept the object when it has exactly our bytes.
        const done = e instanceof ServiceError && e.code === 'not_found' ? await connector.stat(row.path).catch(() => undefined) : undefined;
        if (!done || done.kind !== 'file' || done.size !== total) throw e;
        entry = done;
      }
      this.deps.storage.touched(accountId, row.parent_path, entry);
      resource = this.deps.storage.toResource(accountId, entry);
    } else {
      const dir = this.spoolDir(id);
      const spooled = Readable.from(
        (async function* () {
          for (const p of parts) yield* createReadStream(join(dir, `${p.partNumber}.part`), { highWaterMark: 1 << 20 });
        })(),
      );
      // Failures travel both ways (an upload that stops early closes the spooled parts).
      const body = options.meter ? piped(spooled, options.meter, () => {}) : spooled;
      // The upload reserves (and publishes) the session's name itself.
      this.deps.storage.names.drop(claimOwner(id), false);
      resource = await this.deps.storage.upload(accountId, this.deps.storage.idOf(accountId, row.parent_path), baseName(row.path), body, {
        conflict: row.overwrite ? 'overwrite' : 'rename',
        size: total,
      });
    }
    await this.forget(row, true);
    return resource;
  }

  /** DELETE /accounts/{account}/multipart/{id} (204): upstream parts removed, no file. */
  async abort(accountId: number, id: number): Promise<void> {
    const row = this.row(accountId, id);
    if (row.mode === 'native') {
      const connector = await this.deps.accounts.storage(accountId);
      try {
        await (await this.writer(row, connector)).abort();
      } catch (e) {
        // A server without an abort call (s3rver) keeps its parts whatever we do, and a server
        // that lost the upload (not_found) has nothing left to abort: either way the session
        // ends here rather than living forever (and holding its name).
        if (!(e instanceof ServiceError && (e.code === 'not_implemented' || e.code === 'not_found'))) throw e;
      }
    }
    await this.forget(row);
  }

  /** Aborts sessions untouched for `maxAgeMs`; returns how many went. Failures stay for next time. */
  async abortStale(maxAgeMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - maxAgeMs).toISOString();
    const rows = this.db.prepare('SELECT id, account_id FROM multipart_sessions WHERE updated < ?').all(cutoff) as { id: number; account_id: number }[];
    let aborted = 0;
    for (const r of rows) {
      try {
        await this.abort(r.account_id, r.id);
        aborted++;
      } catch (e) {
        // An account that no longer works cannot abort upstream; its row stays and is retried.
        if (e instanceof ServiceError && e.code === 'not_found') aborted++;
      }
    }
    return aborted;
  }

  /**
   * POST /accounts/{account}/files/upload_url (spec 1, Create an upload URL): a presigned PUT
   * for object stores. `overwrite` false picks "name (n).ext" when the name is taken.
   */
  async uploadUrl(
    accountId: number,
    input: { parentId: string; name: string; overwrite?: boolean; expiresIn?: number; useHttp?: boolean },
  ): Promise<{ method: string; url: string }> {
    const name = checkName(input.name);
    const expiresIn = input.expiresIn ?? 300;
    if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > 10_000) {
      throw new ServiceError('invalid_parameters', '`expires_in` must be a whole number of seconds from 1 to 10000.');
    }
    const parent = await this.deps.storage.locate(accountId, input.parentId);
    const c = parent.connector;
    if (!c.features.uploadUrl) throw new ServiceError('not_implemented', 'This service cannot create upload URLs.');
    if (parent.trash) throw new ServiceError('invalid_parent_folder', 'Nothing can be uploaded to the trash.');
    if (parent.path !== ROOT && (await c.stat(parent.path)).kind !== 'folder') throw new ServiceError('invalid_parent_folder', 'The parent is not a folder.');
    // The third party publishes later, outside Tributary: the name is chosen, not held.
    const claim = await this.deps.storage.claimName(accountId, c, parent.path, name, input.overwrite ? 'overwrite' : 'rename');
    claim.release(false);
    return c.features.uploadUrl(joinPath(parent.path, claim.name), { expiresIn, useHttp: !!input.useHttp });
  }

  // ---- helpers -------------------------------------------------------------------------------

  /** The exact size part `partNumber` must have, or undefined (size not announced: ≤ part_size). */
  private expectedSize(row: SessionRow, partNumber: number): number | undefined {
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS) {
      throw new ServiceError('invalid_parameters', `\`part_number\` must be a whole number from 1 to ${MAX_PARTS}.`);
    }
    if (row.size === null) return undefined;
    const count = Math.max(1, Math.ceil(row.size / row.part_size));
    if (partNumber > count) {
      throw new ServiceError('invalid_parameters', `A file of ${row.size} bytes has ${count} parts of ${row.part_size} bytes; part ${partNumber} does not exist.`);
    }
    return partNumber < count ? row.part_size : row.size - (count - 1) * row.part_size;
  }

  private checkPartSize(row: SessionRow, partNumber: number, expected: number | undefined, actual: number): void {
    if (expected !== undefined && actual !== expected) {
      throw new ServiceError('invalid_parameters', `Part ${partNumber} must have exactly ${expected} bytes (part_size ${row.part_size}), not ${actual}.`);
    }
    if (expected === undefined && (actual > row.part_size || actual === 0)) {
      throw new ServiceError('invalid_parameters', `Part ${partNumber} must have 1 to ${row.part_size} bytes, not ${actual}.`);
    }
  }

  private async forget(row: SessionRow, published = false): Promise<void> {
    this.db.prepare('DELETE FROM multipart_sessions WHERE id = ?').run(row.id);
    this.writers.delete(row.id);
    this.deps.storage.names.drop(claimOwner(row.id), published);
    if (row.mode === 'spool') await rm(this.spoolDir(row.id), { recursive: true, force: true });
  }
}

/** The owner of a session's name reservation. */
const claimOwner = (sessionId: number) => `multipart:${sessionId}`;

/** A writer's not_found: the backend no longer knows the upload. */
async function lostAsUploadLost<T>(id: number, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ServiceError && e.code === 'not_found') throw new UploadLostError(id, e);
    throw e;
  }
}

/** Reads a part into memory (parts are bounded by part_size), refusing more than `limit` bytes. */
async function readAtMost(body: Readable, limit: number, partNumber: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += b.length;
    if (size > limit) {
      body.destroy();
      throw new ServiceError('invalid_parameters', `Part ${partNumber} is larger than ${limit} bytes.`);
    }
    chunks.push(b);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
}
