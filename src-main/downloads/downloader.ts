/**
 * Downloads to a local path (the desktop app's "Download", mail attachments), resumable: bytes
 * stream into a partial file beside the target (`<target>.tributary-download`) and a continued
 * attempt asks the backend for the rest with a ranged read (HTTP Range for WebDAV, S3 and
 * Azure; an offset read for local, SFTP and SMB). The remote file's size, ETag and modified
 * time are recorded when the download starts: if they change, the partial bytes are stale and
 * the download starts over. A big file from a connector that reads ranges into a file
 * (`readRangesToFile`) is read as several ranges at once, as rclone's multi-thread downloads do;
 * how far each range got is saved with the job, so it continues too. Jobs are SQLite rows, so a
 * paused or interrupted download continues after a restart. Transient failures (a server away
 * for a minute) are waited out with backoff; pause keeps the partial file, cancel removes it.
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { open, rename, rm, stat, truncate } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { nowIso, type Db } from '../cache/db';
import { ServiceError } from '../errors';
import { copyByFileSystem } from '../connectors/shared/file-copy';
import { DurableJobs, type JobState } from '../services/durable-jobs';
import { retryTransient, type RetryPolicy } from '../services/retry';
import type { StorageFeatures } from '../connectors/types';
import type { StorageService } from '../services/storage';
import type { TransfersService } from '../services/transfers';

export interface DownloadRequest {
  accountId: number;
  fileId: string;
  targetPath: string;
}

export interface DownloadJob {
  id: number;
  accountId: number;
  fileId: string;
  name: string;
  targetPath: string;
  size: number | null;
  state: JobState;
  error: string | null;
}

interface JobRow {
  id: number;
  account_id: number;
  file_id: string;
  name: string;
  target_path: string;
  size: number | null;
  etag: string | null;
  modified: string | null;
  state: JobState;
  error: string | null;
  /** JSON of `Range[]` while the download is read in ranges, else null. */
  ranges: string | null;
}

/** Where a connector serves the file: its path there and the connector's features. */
interface Source {
  path: string;
  features: StorageFeatures;
}

/** One range of a download read in ranges: its start, how far its written run reaches, its end (exclusive). */
type Range = [start: number, done: number, end: number];

/** What identifies one version of the remote file. */
interface RemoteVersion {
  size: number | null;
  etag: string | null;
  modified: string | null;
}

export const partialPath = (target: string) => `${target}.tributary-download`;
/** Bytes of the partial file so far (0 when there is none yet). */
const partialSize = (target: string) => stat(partialPath(target)).then((s) => s.size, () => 0);
const rangesOf = (job: JobRow): Range[] | null => (job.ranges ? (JSON.parse(job.ranges) as Range[]) : null);
/** Bytes a download has: what its ranges wrote, or the partial file's size. */
const keptOf = (job: JobRow) => {
  const ranges = rangesOf(job);
  return ranges ? ranges.reduce((n, [start, done]) => n + done - start, 0) : partialSize(job.target_path);
};
/** How often the ranges' progress is saved while they are read (each save follows an fdatasync). */
const RANGES_SAVE_MS = 2000;
const transferId = (jobId: number) => `download-${jobId}`;

export interface DownloaderOptions {
  /** How long a failing server is waited out, and the backoff (services/retry.ts). */
  retry?: RetryPolicy;
  /**
   * Files of at least `cutoff` bytes, from a connector with `readRangesToFile`, are read as
   * `ranges` ranges at once (default: rclone's multi-thread defaults, 4 from 256 MiB).
   */
  parallel?: { cutoff: number; ranges: number };
}

const PARALLEL = { cutoff: 256 * 1024 * 1024, ranges: 4 };
const execFileAsync = promisify(execFile);
const MiB = 1024 * 1024;

/** What the downloader uses of the app. */
export interface DownloaderDeps {
  db: Db;
  storage: StorageService;
  transfers: TransfersService;
}

export class Downloader {
  private readonly jobs: DurableJobs<JobRow, string>;
  /** Settles when the downloads found unfinished at start (`start()`) have ended. */
  resumed: Promise<PromiseSettledResult<string>[]> = Promise.resolve([]);

  constructor(
    private readonly deps: DownloaderDeps,
    private readonly options: DownloaderOptions = {},
  ) {
    this.jobs = new DurableJobs(deps, {
      table: 'download_jobs',
      noun: 'Download',
      transferId,
      transferInit: (job) => ({ direction: 'download', name: job.name, account: job.account_id, target: job.file_id, bytesTotal: job.size }),
      run: (id) => this.run(id),
      keptBytes: keptOf,
      // Cancel removes the partial file; pause keeps it.
      discard: async (job) => {
        await rm(partialPath(job.target_path), { force: true });
        this.setRanges(job, null);
      },
      // Bytes counted but not yet written when the stream stopped are not kept: show what is.
      onPaused: async (job, transferId) => this.deps.transfers.setDone(transferId, await keptOf(job)),
    });
  }

  /** Plans a download (a durable row) and runs it; resolves with the target path when done. */
  async download(req: DownloadRequest): Promise<string> {
    return this.resume(await this.plan(req));
  }

  async plan(req: DownloadRequest): Promise<number> {
    const v = await this.remoteVersion(req.accountId, req.fileId);
    if (v.kind !== 'file') throw new ServiceError('invalid_parameters', 'Only files can be downloaded.');
    const now = nowIso();
    const info = this.deps.db
      .prepare(
        `INSERT INTO download_jobs (account_id, file_id, name, target_path, size, etag, modified, state, created, updated)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
      )
      .run(req.accountId, req.fileId, v.name, req.targetPath, v.size, v.etag, v.modified, now, now);
    return Number(info.lastInsertRowid);
  }

  job(id: number): DownloadJob {
    const r = this.jobs.row(id);
    return { id: r.id, accountId: r.account_id, fileId: r.file_id, name: r.name, targetPath: r.target_path, size: r.size, state: r.state, error: r.error };
  }

  /** Call once at startup. */
  start(): void {
    this.resumed = this.resumeAll();
  }

  /** At startup: continues the downloads a previous process left running, lists the paused ones. */
  resumeAll(): Promise<PromiseSettledResult<string>[]> {
    return this.jobs.resumeAll();
  }

  /** Runs (or continues) a planned download to its end. */
  resume(id: number): Promise<string> {
    return this.jobs.resume(id);
  }

  private async run(id: number): Promise<string> {
    const job = this.jobs.row(id);
    if (job.state === 'done') return job.target_path;
    if (job.state !== 'running') throw new ServiceError('invalid_parameters', `Download ${id} is ${job.state}.`);
    const partial = partialPath(job.target_path);
    const { transferId, signal } = this.jobs.start(job);
    try {
      // What the job kept shows from the start, also when this attempt fails before a byte.
      this.deps.transfers.setDone(transferId, await keptOf(job));
      const lastSuccess = { at: Date.now() };
      // Progress while bytes flow counts as success: a long stream that breaks is retried.
      const alive = () =>
        new Transform({
          transform(chunk, _enc, done) {
            lastSuccess.at = Date.now();
            done(null, chunk);
          },
        });
      let expected: number | null = job.size;
      await retryTransient(
        'Download',
        async () => {
          const now = await this.remoteVersion(job.account_id, job.file_id);
          let have = await keptOf(job);
          if (changed(job, now) || (!job.ranges && now.size !== null && have > now.size)) {
            // Another version of the file: the partial bytes belong to the old one.
            have = 0;
            await truncate(partial, 0).catch(() => {});
            this.deps.db.prepare('UPDATE download_jobs SET size = ?, etag = ?, modified = ?, ranges = NULL, updated = ? WHERE id = ?').run(now.size, now.etag, now.modified, nowIso(), id);
            Object.assign(job, { size: now.size, etag: now.etag, modified: now.modified, ranges: null });
          }
          expected = now.size;
          this.deps.transfers.setDone(transferId, have);
          if (!job.ranges && now.size !== null && have === now.size && have > 0) return;
          const src = await this.source(job);
          const progress = (n: number) => {
            lastSuccess.at = Date.now();
            this.deps.transfers.progress(transferId, n);
          };
          if (have === 0 && (await this.copyLocal(src, partial, signal, progress))) return this.deps.transfers.setDone(transferId, (await stat(partial)).size);
          if (await this.readInRanges(job, src, partial, have, now.size, signal, progress)) return;
          // Straight from the connection into the file where the connector can (null: it cannot for this answer).
          const read = await src?.features.readToFile?.(src.path, partial, { start: have, signal, onBytes: progress });
          if (read !== undefined && read !== null) return;
          const { stream } = await this.deps.storage.download(job.account_id, job.file_id, have > 0 ? { start: have } : undefined);
          await pipeline(stream, alive(), this.deps.transfers.meter(transferId), createWriteStream(partial, { flags: have > 0 ? 'r+' : 'w', start: have }), { signal });
        },
        signal,
        lastSuccess,
        this.options.retry,
      );
      const got = (await stat(partial)).size;
      if (expected !== null && got !== expected) throw new ServiceError('upstream_error', `The download has ${got} bytes, not ${expected}.`);
      await rename(partial, job.target_path);
      this.jobs.done(id, transferId);
      return job.target_path;
    } catch (e) {
      throw await this.jobs.settle(id, transferId, signal, e);
    }
  }

  /**
   * The file's path and its connector's features, where a connector serves it (not a provider's
   * file such as a mail attachment, nor one in the trash): what can read it without a stream.
   */
  private async source(job: JobRow): Promise<Source | undefined> {
    const loc = await this.deps.storage.locate(job.account_id, job.file_id).catch(() => null);
    return loc && !loc.trash ? { path: loc.path, features: loc.connector.features } : undefined;
  }

  /**
   * A file of a local folder account is copied by the file system (copy_file_range or a reflink
   * on one disk; counted as it grows, stopped by a cancel) instead of streamed; false for every
   * other account.
   */
  private async copyLocal(src: Source | undefined, partial: string, signal: AbortSignal, onBytes: (n: number) => void): Promise<boolean> {
    if (!src?.features.localFile) return false;
    const file = await src.features.localFile(src.path);
    // The copy makes the partial file anew (an earlier attempt may have left an empty one).
    await rm(partial, { force: true });
    await copyByFileSystem(file, partial, (await stat(file)).size, { signal, onBytes });
    return true;
  }

  /**
   * Reads a big file as several ranges at once into the partial file, from a connector with
   * `readRangesToFile`, or continues the ranges a job has. Every range's written run is saved
   * with the job (after an fdatasync, so a saved run is on disk) every RANGES_SAVE_MS and when an
   * attempt ends with bytes left; the next attempt continues each range from there. False when
   * the file is not read that way (the ranges are dropped, the partial file emptied): the caller
   * reads it whole.
   */
  private async readInRanges(job: JobRow, src: Source | undefined, partial: string, have: number, size: number | null, signal: AbortSignal, onBytes: (n: number) => void): Promise<boolean> {
    const features = src?.features;
    let ranges = rangesOf(job);
    const { cutoff, ranges: count } = this.options.parallel ?? PARALLEL;
    if (ranges && (!features?.readRangesToFile || !(await stat(partial).catch(() => null)))) {
      // The partial file is gone (or the ranges cannot be read any more): start over.
      await truncate(partial, 0).catch(() => {});
      this.setRanges(job, null);
      return false;
    }
    if (!ranges) {
      if (have > 0 || !features?.readRangesToFile || size === null || size < cutoff || count < 2) return false;
      ranges = split(size, count);
      await (await open(partial, 'w')).close();
      // Saved before the file has its full size: a partial file that size is never taken for a done one.
      this.setRanges(job, ranges);
      await preallocate(partial, size).catch(async (e: unknown) => {
        await truncate(partial, 0);
        this.setRanges(job, null);
        throw e;
      });
    }
    const all = ranges;
    const file = await open(partial, 'r+');
    // One range failing stops the others: the attempt ends, and the next one continues them all.
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', onAbort);
    /**
     * The first save to fail (fdatasync on a drive that is gone, a full database) fails the
     * attempt and stops the ranges; nothing is saved after it, so the job keeps the last saved
     * ranges. Kept here, not as a rejected `saving`: that is awaited only at the end.
     */
    let unsaved = undefined as { error: unknown } | undefined;
    let saving = Promise.resolve();
    const save = () => (saving = saving.then(async () => {
      if (unsaved) return;
      try {
        await file.datasync();
        this.setRanges(job, all);
      } catch (error) {
        unsaved = { error };
        stop.abort();
      }
    }));
    const saver = setInterval(save, RANGES_SAVE_MS);
    let unsupported = false;
    /** The first range to fail: the others then fail from the stop it caused. */
    let cause = undefined as { error: unknown } | undefined;
    let complete = false;
    try {
      const reads = all.filter(([, done, end]) => done < end).map(async (r) => {
        try {
          const n = await features!.readToFile!(src!.path, partial, { start: r[1], end: r[2], signal: stop.signal, onBytes: (b) => ((r[1] += b), onBytes(b)) });
          if (n === null) unsupported = true;
        } catch (error) {
          cause ??= { error };
        }
        if (r[1] !== r[2]) stop.abort();
      });
      await Promise.all(reads);
      complete = !unsupported && all.every(([, done, end]) => done === end);
      signal.throwIfAborted();
      if (unsaved) throw unsaved.error;
      if (cause && !unsupported) throw cause.error;
    } finally {
      clearInterval(saver);
      signal.removeEventListener('abort', onAbort);
      // Only an attempt that leaves bytes to fetch saves where its ranges got: a complete file
      // needs no flush to disk here (a download read whole is not flushed either).
      await (complete ? saving : save()).finally(() => file.close());
    }
    if (unsupported) {
      // The server did not serve a range as asked: the file is read whole instead.
      await truncate(partial, 0);
      this.setRanges(job, null);
      return false;
    }
    const short = all.find(([, done, end]) => done !== end);
    if (short) throw new ServiceError('upstream_error', `A range of the download ended at byte ${short[1]}, not ${short[2]}.`);
    this.setRanges(job, null);
    return true;
  }

  private setRanges(job: JobRow, ranges: Range[] | null): void {
    job.ranges = ranges ? JSON.stringify(ranges) : null;
    this.deps.db.prepare('UPDATE download_jobs SET ranges = ?, updated = ? WHERE id = ?').run(job.ranges, nowIso(), job.id);
  }

  /** One stat of the remote file; files served by a provider (mail attachments) have no ETag. */
  private async remoteVersion(accountId: number, fileId: string): Promise<RemoteVersion & { name: string; kind: string }> {
    const loc = await this.deps.storage.locate(accountId, fileId).catch(() => null);
    if (loc && !loc.trash) {
      const e = await loc.connector.stat(loc.path);
      return { name: e.name, kind: e.kind, size: e.size, etag: e.etag ?? null, modified: e.modified?.toISOString() ?? null };
    }
    const r = await this.deps.storage.get(accountId, fileId);
    return { name: r.name, kind: r.kind, size: r.size, etag: null, modified: r.modified ?? null };
  }
}

function changed(job: RemoteVersion, now: RemoteVersion): boolean {
  return (job.etag !== null && now.etag !== job.etag) || (job.size !== null && now.size !== job.size) || (job.modified !== null && now.modified !== job.modified);
}

/** `count` ranges of [0, size), each but the last a whole number of MiB. */
function split(size: number, count: number): Range[] {
  const step = Math.max(MiB, Math.ceil(size / count / MiB) * MiB);
  const ranges: Range[] = [];
  for (let start = 0; start < size; start += step) ranges.push([start, start, Math.min(size, start + step)]);
  return ranges;
}

/**
 * Reserves a file's blocks up front (util-linux `fallocate`: Node has no call for it), as rclone
 * does for its multi-thread downloads: a download that cannot fit fails at once rather than
 * gigabytes in, and writes into reserved blocks cost the kernel less (1 GiB in 512 KiB writes:
 * 0.17 s of system CPU against 0.23-0.33 s into a new file, alternated). Where the tool or the
 * file system cannot, the file grows as it is written, as before.
 */
async function preallocate(file: string, size: number): Promise<void> {
  if (process.platform !== 'linux') return;
  try {
    await execFileAsync('fallocate', ['-l', String(size), file]);
  } catch (e) {
    const said = String((e as { stderr?: unknown }).stderr ?? '');
    if (/No space left|quota exceeded/i.test(said)) throw new ServiceError('insufficient_storage', `Not enough disk space for ${size} bytes at "${file}".`, {}, { cause: e });
  }
}
