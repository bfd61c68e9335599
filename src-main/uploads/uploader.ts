/**
 * The client-side uploader: puts a local file into a folder of any account. Files above 5 MB go
 * through a multipart session (MultipartService) in parts read straight from disk, N at a time,
 * where the backend takes parts (S3, Azure, SFTP, local); smaller ones, and files for backends
 * without parts, are one standard upload. Every failed request is retried with exponential
 * backoff for as long as the server keeps failing within the retry window (a server that is away
 * for a minute is waited for). The plan (file, size, mtime, target, session) is a SQLite row and
 * the confirmed parts are the session's rows, so a new process resumes an interrupted upload
 * from the parts already confirmed (`resumeAll`). The result is checked: size always, and the
 * backend's checksum where it gives one (MD5, or S3's multipart ETag).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline, Readable, Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { retryTransient, type LastSuccess, type RetryPolicy } from '../services/retry';
import type { AccountsService } from '../services/accounts';
import type { StorageService } from '../services/storage';
import { DurableJobs, type JobState } from '../services/durable-jobs';
import type { TransfersService } from '../services/transfers';
import { nowIso, type Db } from '../cache/db';
import type { SettingsStore } from '../cache/queries/settings';
import type { Resource } from '../contract';
import { ServiceError } from '../errors';
import { withStreamingHeadroom } from '../memory';
import { md5OfWholeFile } from '../connectors/shared/md5';
import { MULTIPART_MIN_SIZE, UploadLostError, type MultipartService, type MultipartSession } from './multipart';

export interface UploadRequest {
  accountId: number;
  parentId: string;
  localPath: string;
  /** Name in the target folder; the local file's name by default. */
  name?: string;
  overwrite?: boolean;
}

export interface UploaderOptions {
  /**
   * Parts in flight per upload, by service id; `default` for the rest. Defaults come from the
   * setting `uploads.concurrency` (same shape), then the built-in table.
   */
  concurrency?: Record<string, number>;
  /**
   * Bytes of part buffers one upload may hold at once (default 32 MiB): the parts in flight are
   * fewer than `concurrency` when their size times the count would exceed it (at least one), so
   * the uploader's memory does not grow with the part size a big file needs.
   */
  memoryBudget?: number;
  /** Bytes per second over all uploads of this uploader (setting `uploads.bandwidthLimit`); unlimited when absent. */
  bandwidthLimit?: number;
  /** How long a failing request is retried, and its backoff (services/retry.ts). */
  retry?: RetryPolicy;
  /** Called after each confirmed part (tests use it to kill the process mid-way). */
  onPart?: (jobId: number, partNumber: number) => void;
}

export interface UploadJob {
  id: number;
  accountId: number;
  parentId: string;
  name: string;
  localPath: string;
  size: number;
  state: JobState;
  sessionId: number | null;
  resultId: string | null;
  /** What the finished upload was checked with: size only, whole-file MD5, or S3's multipart ETag. */
  verified: Verification | null;
  error: string | null;
}

export type Verification = 'size' | 'md5' | 'multipart-etag';

interface JobRow {
  id: number;
  account_id: number;
  parent_id: string;
  name: string;
  local_path: string;
  size: number;
  mtime_ms: number;
  overwrite: number;
  session_id: number | null;
  state: JobState;
  result_id: string | null;
  verified: Verification | null;
  error: string | null;
}

/** What the uploader uses of the app. */
export interface UploaderDeps {
  db: Db;
  settings: SettingsStore;
  accounts: AccountsService;
  storage: StorageService;
  transfers: TransfersService;
}

const DEFAULT_CONCURRENCY: Record<string, number> = { default: 4, s3: 8, azure: 8, memory: 4 };
const DEFAULT_MEMORY_BUDGET = 32 * 1024 * 1024;

export class Uploader {
  private readonly bucket?: TokenBucket;
  private readonly jobs: DurableJobs<JobRow, Resource>;
  /**
   * Per account, whether its last multipart upload was checked by a whole-file MD5 (the server
   * gave the assembled object one): only then, or before the first, is the file hashed while the
   * upload completes.
   */
  private readonly assembledMd5 = new Map<number, boolean>();

  constructor(
    private readonly deps: UploaderDeps,
    private readonly multipart: MultipartService,
    private readonly options: UploaderOptions = {},
  ) {
    this.jobs = new DurableJobs(deps, {
      table: 'upload_jobs',
      noun: 'Upload',
      transferId,
      transferInit: (job) => ({ direction: 'upload', name: job.name, account: job.account_id, target: job.parent_id, bytesTotal: job.size }),
      run: (id) => this.run(id),
      keptBytes: (job) => this.confirmedBytes(job),
      // Pause keeps the session and its confirmed parts for resume; cancel aborts the session.
      discard: async (job) => {
        if (job.session_id !== null) await this.multipart.abort(job.account_id, job.session_id).catch(() => {});
      },
    });
    const limit = options.bandwidthLimit ?? deps.settings.get<number | null>('uploads.bandwidthLimit', null);
    if (limit && limit > 0) this.bucket = new TokenBucket(limit);
  }

  /** Plans an upload (a durable row) and runs it. */
  async upload(req: UploadRequest): Promise<Resource> {
    const id = await this.plan(req);
    return this.resume(id);
  }

  /** Writes the plan row; the upload can then be run, here or by a later process. */
  async plan(req: UploadRequest): Promise<number> {
    const s = await stat(req.localPath);
    if (!s.isFile()) throw new ServiceError('invalid_parameters', `"${req.localPath}" is not a file.`);
    this.deps.accounts.row(req.accountId);
    const now = nowIso();
    const info = this.deps.db
      .prepare(
        `INSERT INTO upload_jobs (account_id, parent_id, name, local_path, size, mtime_ms, overwrite, state, created, updated)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
      )
      .run(req.accountId, req.parentId, req.name ?? basename(req.localPath), req.localPath, s.size, Math.trunc(s.mtimeMs), req.overwrite ? 1 : 0, now, now);
    return Number(info.lastInsertRowid);
  }

  job(id: number): UploadJob {
    const r = this.jobs.row(id);
    return { id: r.id, accountId: r.account_id, parentId: r.parent_id, name: r.name, localPath: r.local_path, size: r.size, state: r.state, sessionId: r.session_id, resultId: r.result_id, verified: r.verified, error: r.error };
  }

  /** Jobs a previous process left unfinished. */
  unfinished(): UploadJob[] {
    return this.jobs.rows('running').map((r) => this.job(r.id));
  }

  /**
   * At startup: resumes every job a previous process left running, and lists the paused ones
   * in Transfers (paused, as the user left them). Settles each resumed job, never throws.
   */
  resumeAll(): Promise<PromiseSettledResult<Resource>[]> {
    return this.jobs.resumeAll();
  }

  /** Bytes of the parts the job's multipart session has confirmed (0 without one, or without the session). */
  private confirmedBytes(job: JobRow): number {
    if (job.session_id === null) return 0;
    try {
      return this.confirmedParts(job, this.multipart.info(job.account_id, job.session_id)).bytes;
    } catch {
      return 0;
    }
  }

  /** The session's parts that have their full size (a short part is sent again), and their bytes. */
  private confirmedParts(job: JobRow, session: MultipartSession): { numbers: Set<number>; bytes: number } {
    const expected = (n: number) => Math.min(session.part_size, job.size - (n - 1) * session.part_size);
    const full = this.multipart.parts(job.account_id, session.id).filter((p) => p.size === expected(p.partNumber));
    return { numbers: new Set(full.map((p) => p.partNumber)), bytes: full.reduce((sum, p) => sum + p.size, 0) };
  }

  /** Runs (or continues) a planned job to its end. */
  resume(id: number): Promise<Resource> {
    return this.jobs.resume(id);
  }

  private async run(id: number): Promise<Resource> {
    const job = this.jobs.row(id);
    if (job.state === 'done' && job.result_id) return this.deps.storage.get(job.account_id, job.result_id);
    if (job.state !== 'running') throw new ServiceError('invalid_parameters', `Upload ${id} is ${job.state}.`);
    const { transferId, signal } = this.jobs.start(job);
    try {
      if (!(await unchanged(job))) {
        await this.dropSession(job);
        throw new ServiceError('conflict', `"${job.local_path}" changed since the upload started; start it again.`);
      }
      const { resource, verified } =
        (await this.runCopy(job, transferId, signal)) ??
        // A plain upload gets the heap's room from StorageService's write; the parts need it here.
        ((await this.inParts(job)) ? await withStreamingHeadroom(() => this.runMultipart(job, transferId, signal)) : await this.runPlain(job, transferId, signal));
      this.jobs.done(id, transferId, { result_id: resource.id, verified }, resource.name);
      return resource;
    } catch (e) {
      throw await this.jobs.settle(id, transferId, signal, e);
    }
  }

  /**
   * Above 5 MB, in a multipart session where the backend takes the parts as they come. Where a
   * session would only spool the parts here to upload them whole on complete, the file (already
   * on disk) is streamed once instead: spooling it first cost a second copy on disk and the time
   * of writing it (35-42 MB/s to Apache WebDAV against 61-83 for one PUT of the file). A job
   * that already has a session continues it.
   */
  private async inParts(job: JobRow): Promise<boolean> {
    return job.size > MULTIPART_MIN_SIZE && (job.session_id !== null || (await this.multipart.partsGoUpstream(job.account_id)));
  }

  private concurrencyFor(accountId: number): number {
    const service = this.deps.accounts.row(accountId).service;
    const table = { ...DEFAULT_CONCURRENCY, ...this.deps.settings.get<Record<string, number>>('uploads.concurrency', {}), ...this.options.concurrency };
    return Math.max(1, table[service] ?? table.default);
  }

  private retry<T>(what: string, fn: () => Promise<T>, signal: AbortSignal, lastSuccess: LastSuccess): Promise<T> {
    return retryTransient(what, fn, signal, lastSuccess, this.options.retry);
  }

  /**
   * Where the account reads the file by its own means (StorageService.uploadFile): one file
   * system copy into a folder on this computer, smbclient's `put` to an SMB share, a PUT from
   * reused buffers to a WebDAV server, with the bytes counted as the backend reports them. Undefined elsewhere, for a job that already has a
   * multipart session (it continues that), and under a bandwidth limit (which paces the
   * streamed upload).
   */
  private async runCopy(job: JobRow, transferId: string, signal: AbortSignal): Promise<{ resource: Resource; verified: Verification } | undefined> {
    if (job.session_id !== null || this.bucket) return undefined;
    const resource = await this.retry(
      'Upload',
      () => {
        // Each attempt counts from the start: a failed one leaves nothing on the server.
        this.deps.transfers.setDone(transferId, 0);
        return this.deps.storage.uploadFile(job.account_id, job.parent_id, job.name, job.local_path, {
          conflict: job.overwrite ? 'overwrite' : 'rename',
          signal,
          onBytes: (n) => this.deps.transfers.progress(transferId, n),
        });
      },
      signal,
      { at: Date.now() },
    );
    if (!resource) return undefined;
    // The backend read the file itself and has published it: a change during that read can
    // only be told afterwards.
    if (!(await unchanged(job))) throw changedDuring(job, 'the copy there may mix the old and the new content; upload it again');
    this.deps.transfers.setDone(transferId, resource.size ?? job.size);
    return { resource, verified: await this.verify(job, resource) };
  }

  private async runPlain(job: JobRow, transferId: string, signal: AbortSignal): Promise<{ resource: Resource; verified: Verification }> {
    const lastSuccess = { at: Date.now() };
    const resource = await this.retry(
      'Upload',
      () =>
        this.deps.transfers.sendMetered(transferId, readUnchanged(job), (body) =>
          this.deps.storage.upload(job.account_id, job.parent_id, job.name, this.throttled(body), { conflict: job.overwrite ? 'overwrite' : 'rename', size: job.size, signal }),
        ),
      signal,
      lastSuccess,
    );
    return { resource, verified: await this.verify(job, resource) };
  }

  private async runMultipart(job: JobRow, transferId: string, signal: AbortSignal): Promise<{ resource: Resource; verified: Verification }> {
    try {
      return await this.runSession(job, transferId, signal);
    } catch (e) {
      // The server lost the upload (restarted in-memory server, a lifecycle rule that aborts
      // old uploads, ...): its parts are gone, so start over once with a new session.
      const sessionId = this.jobs.row(job.id).session_id;
      if (!(e instanceof ServiceError && lostUpload(e)) || sessionId === null || signal.aborted) throw e;
      await this.multipart.abort(job.account_id, sessionId).catch(() => {});
      this.jobs.setJob(job.id, { session_id: null });
      this.deps.transfers.setDone(transferId, 0);
      return this.runSession({ ...job, session_id: null }, transferId, signal);
    }
  }

  private async runSession(job: JobRow, transferId: string, signal: AbortSignal): Promise<{ resource: Resource; verified: Verification }> {
    const lastSuccess = { at: Date.now() };
    let session: MultipartSession | undefined;
    if (job.session_id !== null) {
      try {
        session = this.multipart.info(job.account_id, job.session_id);
      } catch (e) {
        // The session went away (aborted as stale): start over with a new one.
        if (!(e instanceof ServiceError && e.code === 'not_found')) throw e;
      }
    }
    if (!session) {
      session = await this.retry('Starting the upload', () => this.multipart.init(job.account_id, { parentId: job.parent_id, name: job.name, size: job.size, overwrite: job.overwrite === 1 }), signal, lastSuccess);
      this.jobs.setJob(job.id, { session_id: session.id });
    }
    const sessionId = session.id;
    const partSize = session.part_size;
    const count = Math.ceil(job.size / partSize);
    const confirmed = this.confirmedParts(job, session);
    this.deps.transfers.setDone(transferId, confirmed.bytes);
    const unsent = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !confirmed.numbers.has(n));

    // Straight from the file where the backend takes parts by range (nothing buffered: as many
    // parts in flight as the service's concurrency); a paced upload needs the bytes in hand.
    if (!this.bucket && (await this.multipart.sendsFromFile(job.account_id, sessionId))) {
      await this.eachPart(unsent, session.parallel_uploads ? this.concurrencyFor(job.account_id) : 1, async (partNumber) => {
        const start = (partNumber - 1) * partSize;
        const part = { path: job.local_path, start, length: Math.min(partSize, job.size - start) };
        await this.retry(`Part ${partNumber}`, () => this.multipart.putFilePart(job.account_id, sessionId, partNumber, part, signal), signal, lastSuccess);
        await this.partsStillOf(job);
        return part.length;
      }, job.id, transferId);
    } else {
      const fh = await open(job.local_path, 'r');
      try {
        const budget = this.options.memoryBudget ?? DEFAULT_MEMORY_BUDGET;
        const workers = session.parallel_uploads ? Math.max(1, Math.min(this.concurrencyFor(job.account_id), Math.floor(budget / partSize))) : 1;
        // One buffer per worker, reused for each of its parts: memory stays at
        // workers × part_size (within the memory budget) whatever the file's size.
        // Shared memory, so that connectors can hash it in a worker thread without a copy.
        const buffers = Array.from({ length: Math.min(workers, unsent.length) }, () => Buffer.from(new SharedArrayBuffer(partSize)));
        await this.eachPart(unsent, workers, async (partNumber, worker) => {
          const offset = (partNumber - 1) * partSize;
          const length = Math.min(partSize, job.size - offset);
          const buffer = buffers[worker]!.subarray(0, length);
          const { bytesRead } = await fh.read(buffer, 0, length, offset);
          if (bytesRead !== length) throw new ServiceError('conflict', `"${job.local_path}" became shorter during the upload.`);
          await this.partsStillOf(job);
          await this.retry(`Part ${partNumber}`, () => this.multipart.putPart(job.account_id, sessionId, partNumber, this.throttled(Readable.from([buffer])), length, signal), signal, lastSuccess);
          return length;
        }, job.id, transferId);
      } finally {
        await fh.close();
      }
    }
    // S3-style backends return each part's MD5 as its ETag: kept to check the final ETag.
    const parts = this.multipart.parts(job.account_id, sessionId);
    // Some servers (s3rver) give the assembled object a whole-file MD5 instead of a multipart
    // ETag; that check needs the file's MD5. It is hashed while the server assembles the parts
    // (for 1 GiB, seconds of server work the client only waits through) instead of after, and
    // dropped as soon as the answer shows it is not needed.
    await this.partsStillOf(job);
    const wholeMd5 = new AbortController();
    const local = this.assembledMd5.get(job.account_id) !== false ? md5Hex(job.local_path, wholeMd5.signal) : undefined;
    local?.catch(() => {});
    try {
      const resource = await this.retry('Completing the upload', () => this.multipart.complete(job.account_id, sessionId), signal, lastSuccess);
      const verified = await this.verify(job, resource, parts.map((p) => p.etag), local);
      this.assembledMd5.set(job.account_id, verified === 'md5');
      return { resource, verified };
    } finally {
      wholeMd5.abort();
    }
  }

  /**
   * Parts read at different times from a file that changed meanwhile would make an object of
   * two versions: checked after each part and before the parts are assembled. On a change the
   * session is dropped and nothing is published.
   */
  private async partsStillOf(job: JobRow): Promise<void> {
    if (await unchanged(job)) return;
    await this.dropSession(job);
    throw changedDuring(job, 'nothing was published; start it again');
  }

  /** Aborts the job's session, whose parts are of a version of the file that is gone (what the server kept is freed). */
  private async dropSession(job: JobRow): Promise<void> {
    const sessionId = this.jobs.row(job.id).session_id;
    if (sessionId === null) return;
    await this.multipart.abort(job.account_id, sessionId).catch(() => {});
    this.jobs.setJob(job.id, { session_id: null });
  }

  /**
   * Sends the parts `unsent` with `workers` of them in flight (`send` gets the worker's index and
   * returns the part's bytes); the first failure stops the others from starting new parts.
   */
  private async eachPart(unsent: number[], workers: number, send: (partNumber: number, worker: number) => Promise<number>, jobId: number, transferId: string): Promise<void> {
    let failed = false;
    const results = await Promise.allSettled(
      Array.from({ length: Math.min(workers, unsent.length) }, async (_, worker) => {
        for (let n = unsent.shift(); n !== undefined && !failed; n = unsent.shift()) {
          let bytes: number;
          try {
            bytes = await send(n, worker);
          } catch (e) {
            failed = true;
            throw e;
          }
          this.deps.transfers.progress(transferId, bytes);
          this.options.onPart?.(jobId, n);
        }
      }),
    );
    const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (rejected) throw rejected.reason;
  }

  /**
   * Size always; then S3's multipart ETag (MD5 of the parts' MD5s, each part already checked by
   * the server against the Content-MD5 we sent), or a whole-file MD5 where the backend reports
   * one. The whole-file MD5 costs a second read of the file, so it is computed only then, or
   * taken from `localMd5` (started while the upload completed).
   */
  private async verify(job: JobRow, resource: Resource, partEtags?: (string | null)[], localMd5?: Promise<string>): Promise<Verification> {
    if (resource.size !== job.size) {
      throw new ServiceError('upstream_error', `The uploaded file has ${resource.size} bytes, not ${job.size}.`);
    }
    const loc = await this.deps.storage.locate(job.account_id, resource.id);
    const entry = await loc.connector.stat(loc.path);
    const multipartEtag = /^[0-9a-f]{32}-(\d+)$/.exec(entry.etag ?? '');
    if (multipartEtag) {
      if (!partEtags || !partEtags.every((e) => e && /^[0-9a-f]{32}$/.test(e))) return 'size';
      const h = createHash('md5');
      for (const e of partEtags) h.update(Buffer.from(e!, 'hex'));
      const expected = `${h.digest('hex')}-${partEtags.length}`;
      if (expected !== entry.etag) throw new ServiceError('upstream_error', `Checksum mismatch after upload: ETag ${entry.etag}, expected ${expected}.`);
      return 'multipart-etag';
    }
    const remote = entry.hashes?.md5;
    if (!remote) return 'size';
    const local = await (localMd5 ?? md5Hex(job.local_path));
    if (local !== remote) throw new ServiceError('upstream_error', `Checksum mismatch after upload: MD5 ${remote}, expected ${local}.`);
    return 'md5';
  }

  /** The body, paced by the shared bandwidth limit when there is one. */
  private throttled(body: Readable): Readable {
    const bucket = this.bucket;
    if (!bucket) return body;
    return Readable.from(
      (async function* () {
        for await (const chunk of body) {
          const b = chunk as Buffer;
          for (let i = 0; i < b.length; i += 64 * 1024) {
            const slice = b.subarray(i, i + 64 * 1024);
            await bucket.take(slice.length);
            yield slice;
          }
        }
      })(),
    );
  }
}

/** A job's transfer keeps its id across attempts and restarts. */
const transferId = (jobId: number) => `upload-${jobId}`;

/** The whole file's MD5 in hex, hashed off the event loop. */
const md5Hex = async (path: string, signal?: AbortSignal) => (await md5OfWholeFile(path, signal)).toString('hex');

/** An UploadLostError, possibly wrapped by the retry loop's message. */
function lostUpload(e: unknown): boolean {
  for (let x: unknown = e; x; x = (x as { cause?: unknown }).cause) if (x instanceof UploadLostError) return true;
  return false;
}

/** A token bucket over bytes: `take(n)` resolves once n bytes may be sent. */
class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly rate: number) {
    this.tokens = rate / 10;
  }

  take(n: number): Promise<void> {
    const p = this.queue.then(async () => {
      for (;;) {
        const now = Date.now();
        this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
        this.last = now;
        if (this.tokens >= n || this.tokens >= this.rate) {
          this.tokens -= n;
          return;
        }
        await sleep(Math.ceil(((n - this.tokens) / this.rate) * 1000));
      }
    });
    this.queue = p;
    return p;
  }
}

/** Whether the file is as it was when the job was planned (its size and modification time). */
async function unchanged(job: JobRow): Promise<boolean> {
  const s = await stat(job.local_path).catch(() => undefined);
  return s !== undefined && s.size === job.size && Math.trunc(s.mtimeMs) === job.mtime_ms;
}

const changedDuring = (job: JobRow, what: string) => new ServiceError('conflict', `"${job.local_path}" changed while it was uploaded: ${what}.`);

/**
 * The job's file as a stream that fails at its end if the file changed while it was read, so
 * that the write fails before the backend publishes a mix of two versions (as rclone's local
 * reads do).
 */
function readUnchanged(job: JobRow): Readable {
  const checked = new Transform({
    transform(chunk, _enc, done) {
      done(null, chunk);
    },
    flush(done) {
      unchanged(job).then((same) => done(same ? null : changedDuring(job, 'nothing was published; start it again')), done);
    },
  });
  pipeline(createReadStream(job.local_path, { highWaterMark: 1 << 20 }), checked, () => {});
  return checked;
}
