/**
 * `smb`: a Windows / NAS / Samba share over SMB2 and SMB3, driven through Samba's own
 * `smbclient` (long-lived sessions for listings and changes, a process per transfer: smbclient.ts).
 * Chosen over the npm SMB libraries
 * after measuring both (docs/sftp-smb.md): smbclient negotiates SMB 3.1.1 with signing and
 * encryption, handles the server's interim (STATUS_PENDING) replies that make the libraries
 * fail on default Samba settings, needs no `--openssl-legacy-provider`, and was faster.
 *
 * Uploads go to a hidden temporary name and are renamed over the final name (`rename -f`, an
 * atomic replace on the server) once every byte is in.
 */
import type { ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, realpath, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '../../errors';
import { checkStillMatches } from '../shared/if-match';
import { assertFree, baseName, joinPath, parentOf, ROOT, tempName } from '../shared/paths';
import { regularFile } from '../shared/fs-errors';
import type { Entry, NoReplace, ReadOptions, ReadToFileOptions, StorageConnector, StorageFeatures, WriteFileOptions, WriteOptions } from '../types';
import type { SmbOptions } from './options';
import { BLOCKS_LINE, lsAnswers, LsLines, parseLs, q, renameLine, Smbclient, type SmbclientTuning } from './smbclient';
import { fifoGet } from './read-stream';
import { spawnError, statusError, unavailable } from './status';


/** Names SMB cannot hold: Windows' reserved characters, and trailing dots or spaces. */
const INVALID_NAME = /["*:<>?|\\]|[. ]$/;
/** Bodies up to this size are spooled locally and sent in one smbclient process. */
const SPOOL_BYTES = 4 << 20;

/** What a stat and a listing of one path, asked in the same tick, get (smbclient's answers). */
interface Answers {
  stat?: Promise<Entry>;
  list?: Promise<Entry[]>;
}
/** The questions about one path gathered in the current tick, and their answers once asked. */
interface Due {
  stat?: boolean;
  list?: boolean;
  /** The first listing's `each` (another listing asked in the same tick gets the entries returned). */
  each?: (entry: Entry) => void;
  answers: Promise<Answers>;
}

export class SmbConnector implements StorageConnector {
  readonly features: StorageFeatures;
  private readonly smb: Smbclient;
  private readonly pending = new Map<string, Due>();

  constructor(
    private readonly o: SmbOptions,
    tuning: SmbclientTuning = {},
  ) {
    this.smb = new Smbclient(o, tuning);
    this.features = {
      // Samba and Windows match names case-insensitively for SMB clients.
      caseSensitive: false,
      hashes: [],
      modTimePrecisionMs: 1000,
      atomicWrites: true,
      noReplace: true,
      move: (from, to) => this.move(from, to),
      copy: (from, to) => this.copy(from, to),
      copyFilesOnly: true,
      quota: () => this.quota(),
      readToFile: (path, file, opts) => this.readToFile(path, file, opts),
      writeFile: (path, file, opts) => this.writeFile(path, file, opts),
    };
  }

  // ---- core -------------------------------------------------------------------------------

  async stat(path: string): Promise<Entry> {
    if (path === ROOT) {
      // Any command proves the share is reachable with these credentials.
      await this.smb.must(['pwd'], 'The share', { read: true });
      return { path: ROOT, name: '', kind: 'folder', size: null, modified: null, created: null };
    }
    const due = this.due(path);
    due.stat = true;
    return (await due.answers).stat!;
  }

  /** Entries are made and handed to `each` as smbclient's answer arrives, on a session. */
  async list(path: string, each?: (entry: Entry) => void): Promise<Entry[]> {
    const due = this.due(path);
    due.list = true;
    due.each ??= each;
    return (await due.answers).list!;
  }

  /**
   * Stats and listings start at the end of the tick they are asked in, so that a stat and a
   * listing of the same path asked together (the storage service asks a folder's own entry
   * alongside its children) share one smbclient run: one process start and one authentication
   * instead of two, on the same cores that parse the listing.
   */
  private due(path: string): Due {
    let due = this.pending.get(path);
    if (!due) {
      const fresh: Due = {
        answers: Promise.resolve().then(() => {
          this.pending.delete(path);
          return this.answer(path, fresh);
        }),
      };
      this.pending.set(path, fresh);
      due = fresh;
    }
    return due;
  }

  private async answer(path: string, due: Due): Promise<Answers> {
    if (!due.list) return { stat: this.statNow(path) };
    if (!due.stat) return { list: this.listNow(path, due.each) };
    let reader: LsLines | undefined;
    const r = await this.smb.commands([`ls ${q(path)}`, `ls ${q(`${path}/*`)}`], { read: true, line: () => (reader = new LsLines(path, 1, due.each)).line });
    const [own, children] = lsAnswers(r.output);
    if (children === undefined) {
      // smbclient stopped before answering both (no session, a server gone): one failure for both.
      const err = await this.smb.settle(statusError(r.output, `"${path}"`) ?? new ServiceError('upstream_error', `"${path}": smbclient exited with ${r.code}: ${r.output.trim().slice(-300)}`), `"${path}"`);
      return { stat: Promise.reject(err), list: Promise.reject(err) };
    }
    const stat = this.statFrom(own!, path);
    // Both promises are handed to callers; this one only decides the listing's failure.
    const self = stat.catch(() => undefined);
    return { stat, list: this.listFrom(children, path, () => self, reader) };
  }

  private async statNow(path: string): Promise<Entry> {
    const r = await this.smb.commands([`ls ${q(path)}`], { read: true });
    if (r.code !== 0 && r.code !== null && !statusError(r.output, `"${path}"`)) throw new ServiceError('upstream_error', `"${path}": smbclient exited with ${r.code}: ${r.output.trim().slice(-300)}`);
    return this.statFrom(r.output, path);
  }

  /** The entry of `path` in the output of its `ls`. */
  private async statFrom(output: string, path: string): Promise<Entry> {
    const err = statusError(output, `"${path}"`);
    if (err) throw await this.smb.settle(err, `"${path}"`);
    const entry = parseLs(output, parentOf(path)).find((e) => e.name.toLocaleLowerCase() === baseName(path).toLocaleLowerCase());
    if (!entry) throw new ServiceError('not_found', `"${path}" was not found.`);
    return { ...entry, path };
  }

  private async listNow(path: string, each?: (entry: Entry) => void): Promise<Entry[]> {
    let reader: LsLines | undefined;
    const r = await this.smb.commands([`ls ${q(path === ROOT ? '/*' : `${path}/*`)}`], { read: true, line: () => (reader = new LsLines(path, 0, each)).line });
    return this.listFrom(r.output, path, () => this.stat(path).catch(() => undefined), reader);
  }

  /**
   * The children in the output of `ls path/*`, after those `reader` took out of it as they
   * arrived; `self` tells a failure's cause (a file, gone).
   */
  private async listFrom(output: string, path: string, self: () => Promise<Entry | undefined>, reader?: LsLines): Promise<Entry[]> {
    const err = statusError(output, `"${path}"`);
    if (err) {
      if (err.code === 'service_not_available' || err.code === 'upstream_auth_failed' || path === ROOT) throw err;
      const entry = await self();
      if (entry?.kind === 'file') throw new ServiceError('invalid_parent_folder', `"${path}" is not a folder.`);
      // An empty folder lists "." and ".." and no error; an error here means it is gone.
      throw entry ? err : new ServiceError('not_found', `"${path}" was not found.`);
    }
    if (reader?.failed) throw reader.failed.error;
    const rest = parseLs(output, path);
    if (!reader) return rest;
    return rest.length ? reader.entries.concat(rest) : reader.entries;
  }

  async read(path: string, opts: ReadOptions = {}): Promise<Readable> {
    // A whole file needs no `ls` first (one smbclient process less): smbclient reports the
    // size it got once done, and what it cannot open fails before the first byte.
    if (opts.start === undefined && opts.end === undefined) return this.stream(path, 0, Infinity, opts.signal);
    const entry = await this.stat(path);
    if (entry.kind !== 'file') throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
    const size = entry.size ?? 0;
    const start = opts.start ?? 0;
    const end = Math.min(opts.end ?? size - 1, size - 1);
    const want = Math.max(0, end - start + 1);
    if (want === 0) return Readable.from([]);
    return this.stream(path, start, want, opts.signal, size);
  }

  /** Through a FIFO (read-stream.ts); through smbclient's stdout where no FIFO can be made. */
  private async stream(path: string, start: number, want: number, signal?: AbortSignal, size?: number): Promise<Readable> {
    const viaFifo = await fifoGet({ smb: this.smb, program: this.o.smbclient, path, start, want, size, signal });
    return viaFifo ?? this.pump(path, start, want, signal, size);
  }

  /**
   * `get` to stdout, bytes [start, start + want) of it (want Infinity: to the end). Resolves at
   * the first byte, or at a clean end of an empty file; rejects when smbclient fails before.
   */
  private pump(path: string, start: number, want: number, signal?: AbortSignal, size?: number): Promise<Readable> {
    const out = new PassThrough({ highWaterMark: 1 << 20 });
    // smbclient has no ranged get: skip to `start` and stop the transfer after `start + want`.
    // Not counted in the process limit: the caller's reading pace decides when it ends.
    const child = this.smb.spawn(['-E']);
    let log = '';
    let seen = 0;
    let delivered = 0;
    let done = false;
    let settle: ((err?: Error) => void) | undefined;
    const ready = new Promise<Readable>((resolve, reject) => {
      settle = (err) => {
        settle = undefined;
        if (err) reject(err);
        else resolve(out);
      };
    });
    // The stream ends only once smbclient has exited cleanly with every wanted byte, so a
    // server that drops mid-transfer is an error, never a short file that looks complete.
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      if (!err) {
        out.end();
        settle?.();
      } else if (settle) settle(err);
      else out.destroy(err);
    };
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
    const stdout = child.stdout!;
    stdout.on('data', (chunk: Buffer) => {
      const from = Math.max(0, start - seen);
      seen += chunk.length;
      if (done || from >= chunk.length || delivered >= want) return;
      const piece = chunk.subarray(from, from + (want - delivered));
      delivered += piece.length;
      if (!out.write(piece)) stdout.pause();
      settle?.();
      if (delivered >= want) {
        child.kill('SIGTERM');
        finish();
      }
    });
    out.on('drain', () => stdout.resume());
    child.once('close', () => {
      if (delivered >= want) return finish();
      const failed = statusError(log, `Reading "${path}"`);
      if (failed) return finish(failed.code === 'invalid_parameters' && /IS_A_DIRECTORY/.test(log) ? new ServiceError('invalid_parameters', `"${path}" is a folder.`) : failed);
      // A whole file: complete when smbclient says it got as many bytes as it delivered.
      const got = /getting file .* of size (\d+) as -/.exec(log);
      if (want === Infinity && got && Number(got[1]) === delivered) return finish();
      const of = size ?? (got ? Number(got[1]) : undefined);
      finish(unavailable(`Reading "${path}"`, `the transfer stopped after ${start + delivered}${of === undefined ? '' : ` of ${of}`} bytes`));
    });
    child.once('error', (e) => finish(spawnError(this.o.smbclient, e)));
    child.stdin!.on('error', () => {});
    child.stdin!.end(`get ${q(path)} -\n`);
    out.once('close', () => {
      if (child.exitCode === null) child.kill('SIGTERM');
    });
    if (signal) signal.addEventListener('abort', () => out.destroy(new ServiceError('request_timeout', 'The download was cancelled.')), { once: true });
    return ready;
  }

  /**
   * `get` straight into a local file (`reget` goes on from `start`, the file's size): smbclient
   * writes the file itself, so no byte crosses the pipe into this process that holds a streamed
   * download below smbclient's own speed. Progress is the file's growth, looked at every 250 ms.
   */
  private async readToFile(path: string, file: string, opts: ReadToFileOptions = {}): Promise<number | null> {
    const start = opts.start ?? 0;
    // A local name smbclient cannot be given on a command line, or a start that is not the
    // file's size (where `reget` would go on from): the caller streams instead.
    if (/["\r\n]/.test(file) || (start > 0 && (await stat(file).catch(() => null))?.size !== start)) return null;
    opts.signal?.throwIfAborted();
    // smbclient cuts the file to its new size only at the end: before that, its old bytes would
    // be counted as progress.
    if (start === 0) await truncate(file, 0).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
    let reported = start;
    const grown = (size: number) => {
      if (size > reported) opts.onBytes?.(size - reported);
      reported = Math.max(reported, size);
    };
    const poll = opts.onBytes ? setInterval(() => void stat(file).then((s) => grown(s.size), () => {}), 250) : undefined;
    let log = '';
    try {
      await this.smb.slot(async () => {
        const run = await this.runOwn(this.smb.spawn([]), [`${start > 0 ? 'reget' : 'get'} ${q(path)} ${q(file, false)}`], opts.signal, 'The download was cancelled.');
        log = run.log;
        const err = statusError(log, `Reading "${path}"`);
        if (err) throw await this.smb.settle(err, `Reading "${path}"`);
        if (run.stopped) throw unavailable(`Reading "${path}"`, run.stopped);
      });
    } catch (e) {
      if (e instanceof ServiceError && e.code === 'invalid_parameters' && /IS_A_DIRECTORY/.test(log)) throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
      throw e;
    } finally {
      clearInterval(poll);
    }
    // smbclient reports the remote size once done: fewer bytes on disk is a transfer cut short.
    const size = (await stat(file)).size;
    const of = /getting file .* of size (\d+) as /.exec(log);
    if (!of || Number(of[1]) !== size) throw unavailable(`Reading "${path}"`, `the transfer stopped after ${size}${of ? ` of ${of[1]}` : ''} bytes`);
    grown(size);
    return size - start;
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    checkSmbName(baseName(path));
    // Small bodies are spooled to a private local file first: then put, rename and ls run in
    // one smbclient process (a third of the cost), and a failing body never reaches the server.
    const it = body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array | string>;
    const head: Buffer[] = [];
    let headBytes = 0;
    let ended = false;
    while (headBytes <= SPOOL_BYTES) {
      const r = await it.next();
      if (r.done) {
        ended = true;
        break;
      }
      const chunk = bytesOf(r.value);
      head.push(chunk);
      headBytes += chunk.length;
    }
    opts.signal?.throwIfAborted();
    if (ended) return this.writeSpooled(path, Buffer.concat(head), opts.noReplace, opts.tempName, opts.ifMatch);
    const rest = Readable.from(
      (async function* () {
        yield* head;
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          yield bytesOf(r.value);
        }
      })(),
    );
    return this.writeStreamed(path, rest, opts);
  }

  private async writeSpooled(path: string, data: Buffer, noReplace?: NoReplace, name = tempName(), ifMatch?: string): Promise<Entry> {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-smb-'));
    const local = join(dir, 'body');
    const temp = joinPath(parentOf(path), name);
    try {
      await writeFile(local, data, { mode: 0o600 });
      // A conditional replace looks at the file there between the put and the rename (publish).
      const publishHere = ifMatch === undefined ? [renameLine(temp, path, !noReplace), `ls ${q(path)}`] : [];
      const r = await this.smb.commands([`put ${q(local, false)} ${q(temp)}`, ...publishHere]);
      const err = statusError(r.output, `Writing "${path}"`);
      if (err?.code === 'naming_conflict' && noReplace) {
        // The bytes are in; the name was taken: publish under the next one.
        const next = await noReplace.next?.(path);
        if (next !== undefined) {
          try {
            return await this.publish(temp, next, noReplace);
          } catch (e) {
            await this.smb.commands([`del ${q(temp)}`]).catch(() => {});
            throw e;
          }
        }
      }
      if (err) {
        await this.smb.commands([`del ${q(temp)}`]).catch(() => {});
        throw await this.smb.settle(err, `Writing "${path}"`);
      }
      if (ifMatch !== undefined) {
        try {
          return await this.publish(temp, path, undefined, ifMatch);
        } catch (e) {
          await this.smb.commands([`del ${q(temp)}`]).catch(() => {});
          throw e;
        }
      }
      return await this.entryIn(r.output, path);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Gives the uploaded `temp` its name: `rename -f` replaces; with `noReplace` a plain rename,
   * which the server refuses with OBJECT_NAME_COLLISION when the name is taken (then
   * `noReplace.next`). With `ifMatch` the file there is looked at first: SMB has no conditional
   * rename.
   */
  private async publish(temp: string, path: string, noReplace?: NoReplace, ifMatch?: string): Promise<Entry> {
    await checkStillMatches((p) => this.stat(p), path, ifMatch);
    for (let target: string | undefined = path; target !== undefined; target = await noReplace?.next?.(target)) {
      try {
        return await this.entryIn(await this.smb.must([renameLine(temp, target, !noReplace), `ls ${q(target)}`], `Writing "${target}"`), target);
      } catch (e) {
        if (!(noReplace && e instanceof ServiceError && e.code === 'naming_conflict')) throw e;
      }
    }
    throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
  }

  private async writeStreamed(path: string, body: Readable, opts: WriteOptions): Promise<Entry> {
    // `put` must run with -c (stdin carries the bytes), where ";" splits commands and nothing
    // after a `put -` runs: the rename (and the ls for the entry) follow in a second process.
    // A folder whose path has ";" gets the temporary file at the share root (same share, so
    // the rename is still atomic).
    const temp = joinPath(parentOf(path).includes(';') ? ROOT : parentOf(path), opts.tempName ?? tempName());
    const script = `put - ${q(temp)}`;
    let log = '';
    try {
      await this.smb.slot(
        () =>
          new Promise<void>((resolve, reject) => {
            const child = this.smb.spawn(['-c', script]);
            let bodyError: unknown;
            // When smbclient dies first, the EPIPE that follows is not the body's fault.
            let stdinBroken = false;
            const stop = (e: unknown) => {
              bodyError ??= e;
              // Killed before its stdin is closed, smbclient never sees an end of file, so it
              // can never finish the put (or run the rename) with a partial body.
              child.kill('SIGKILL');
            };
            child.stdout!.setEncoding('utf8').on('data', (d: string) => (log += d));
            child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
            child.once('error', (e) => reject(spawnError(this.o.smbclient, e)));
            body.once('error', (e) => (stdinBroken ? child.kill('SIGKILL') : stop(e)));
            opts.signal?.addEventListener('abort', () => stop(new ServiceError('request_timeout', 'The upload was cancelled.')), { once: true });
            child.once('close', (code, signal) => {
              // The caller's body failing comes first, then smbclient's own report (auth,
              // dropped server); a silent death of smbclient means the server went away.
              if (bodyError) return reject(bodyError);
              const err = statusError(log, `Writing "${path}"`);
              if (err) return void this.smb.settle(err, `Writing "${path}"`).then(reject);
              if (code !== 0 || signal) return reject(unavailable(`Writing "${path}"`, `smbclient stopped (${signal ?? `exit ${code}`}) ${log.trim().slice(-200)}`.trim()));
              resolve();
            });
            child.stdin!.on('error', () => {
              stdinBroken = true;
              body.unpipe(child.stdin!);
              body.destroy();
            });
            // pipe(), not pipeline(): on a body error it leaves stdin open (see stop()).
            body.pipe(child.stdin!);
          }),
      );
      return await this.publish(temp, path, opts.noReplace, opts.ifMatch);
    } catch (e) {
      await this.removeTemp(temp);
      throw e instanceof ServiceError ? e : new ServiceError('upstream_error', `Writing "${path}": ${(e as Error).message}`, {}, { cause: e });
    }
  }

  /**
   * Removes an upload's temporary file. Right after its smbclient was killed, the server may
   * still hold the file open for the dropped connection (a sharing violation): asked again, for
   * up to 2 s.
   */
  private async removeTemp(temp: string): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const r = await this.smb.commands([`del ${q(temp)}`]).catch(() => undefined);
      if (!r || statusError(r.output, '')?.code !== 'conflict') return;
      await sleep(100);
    }
  }

  /**
   * `write` from a file on this computer: smbclient's own `put` reads the file, so no byte
   * crosses the pipe into smbclient that holds a streamed upload below smbclient's own speed.
   * The bytes go to the hidden temporary name; once its size on the server is the file's, the
   * same publish as `write` gives it its name. Up to 4 MiB on a session (no process start);
   * larger files in a process of their own, whose progress is the bytes it got to the server and
   * which a cancel kills.
   */
  private async writeFile(path: string, file: string, opts: WriteFileOptions = {}): Promise<Entry> {
    checkSmbName(baseName(path));
    const source = await regularFile(file);
    // A local name smbclient cannot be given in a command: streamed, counted once at the end.
    if (/["\r\n]/.test(file)) {
      const entry = await this.write(path, createReadStream(file), { ...opts, size: source.size });
      opts.onBytes?.(source.size);
      return entry;
    }
    opts.signal?.throwIfAborted();
    const temp = joinPath(parentOf(path), opts.tempName ?? tempName());
    const lines = [`put ${q(file, false)} ${q(temp)}`, `ls ${q(temp)}`];
    let counted = 0;
    const onBytes = (n: number) => {
      counted += n;
      opts.onBytes?.(n);
    };
    try {
      const output = source.size <= SPOOL_BYTES ? (await this.smb.commands(lines)).output : await this.putFromFile(file, source.size, lines, { signal: opts.signal, onBytes: opts.onBytes && onBytes }, `Writing "${path}"`);
      const err = statusError(output, `Writing "${path}"`);
      if (err) throw await this.smb.settle(err, `Writing "${path}"`);
      // The temporary file must hold every byte before it gets the name.
      const sent = parseLs(output, parentOf(temp), true).find((e) => e.name === baseName(temp))?.size;
      if (sent !== source.size) {
        const now = await stat(file).catch(() => undefined);
        if (now?.size !== source.size || now.mtimeMs !== source.mtimeMs) throw new ServiceError('conflict', `"${file}" changed during the upload; start it again.`);
        throw unavailable(`Writing "${path}"`, `the transfer stopped after ${sent ?? 0} of ${source.size} bytes`);
      }
      if (counted < source.size) opts.onBytes?.(source.size - counted);
      return await this.publish(temp, path, opts.noReplace, opts.ifMatch);
    } catch (e) {
      await this.removeTemp(temp);
      throw e instanceof ServiceError ? e : new ServiceError('upstream_error', `Writing "${path}": ${(e as Error).message}`, {}, { cause: e });
    }
  }

  /**
   * Runs `lines` (a `put` of `file`, then more) in an smbclient of its own and returns what it
   * printed. Progress: the bytes it got to the server (sentReader), every 250 ms; Linux only,
   * elsewhere counted at the end. A cancel kills smbclient.
   */
  private putFromFile(file: string, size: number, lines: string[], opts: Pick<WriteFileOptions, 'signal' | 'onBytes'>, what: string): Promise<string> {
    return this.smb.slot(async () => {
      const real = await realpath(file);
      let reported = 0;
      let ended = false;
      // Headers counted as bytes could pass the size: the last byte is counted by the caller,
      // and a look that ends after smbclient is not counted at all.
      const report = (sent: number) => {
        if (ended) return;
        const pos = Math.min(sent, size - 1);
        if (pos > reported) opts.onBytes?.(pos - reported);
        reported = Math.max(reported, pos);
      };
      const child = this.smb.spawn([]);
      const reader = opts.onBytes && child.pid ? sentReader(child.pid, real) : undefined;
      const poll = reader ? setInterval(() => void reader().then((pos) => pos !== undefined && report(pos)), 250) : undefined;
      try {
        const run = await this.runOwn(child, lines, opts.signal, 'The upload was cancelled.');
        // A status report is the caller's to read; a silent death means the server went away.
        if (run.stopped && !statusError(run.log, what)) throw unavailable(what, run.stopped);
        return run.log;
      } finally {
        ended = true;
        clearInterval(poll);
      }
    });
  }

  /**
   * Runs `lines` in `child`, an smbclient of its own (spawned by the caller, which may watch its
   * pid), and answers what it printed and, when it did not exit with 0, how it stopped. A cancel
   * kills it and rejects with `request_timeout` (`cancelled`).
   */
  private runOwn(child: ChildProcess, lines: string[], signal: AbortSignal | undefined, cancelled: string): Promise<{ log: string; stopped: string | null }> {
    return new Promise((resolve, reject) => {
      let log = '';
      const cancel = () => child.kill('SIGKILL');
      signal?.addEventListener('abort', cancel, { once: true });
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (log += d));
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
      child.once('error', (e) => reject(spawnError(this.o.smbclient, e)));
      child.once('close', (code, sig) => {
        signal?.removeEventListener('abort', cancel);
        if (signal?.aborted) return reject(new ServiceError('request_timeout', cancelled));
        resolve({ log, stopped: code !== 0 || sig ? `smbclient stopped (${sig ?? `exit ${code}`}) ${log.trim().slice(-200)}`.trim() : null });
      });
      child.stdin!.on('error', () => {});
      child.stdin!.end(lines.join('\n') + '\n');
    });
  }

  /** The entry for `path` in the output of an `ls` that ended a command batch. */
  private async entryIn(output: string, path: string): Promise<Entry> {
    const entry = parseLs(output, parentOf(path)).find((e) => e.name.toLocaleLowerCase() === baseName(path).toLocaleLowerCase());
    return entry ? { ...entry, path } : this.stat(path);
  }

  async mkdir(path: string): Promise<Entry> {
    checkSmbName(baseName(path));
    return this.entryIn(await this.smb.must([`mkdir ${q(path)}`, `ls ${q(path)}`], `Creating "${path}"`), path);
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    const entry = await this.stat(path);
    if (entry.kind === 'file') {
      await this.smb.must([`del ${q(path)}`], `Deleting "${path}"`);
      return;
    }
    if (!recursive) await this.smb.must([`rmdir ${q(path)}`], `Deleting "${path}"`);
    else await this.smb.must([`deltree ${q(path)}`], `Deleting "${path}"`);
  }

  async close(): Promise<void> {
    this.smb.close();
  }

  /** The process ids of the live smbclient sessions (tests stop and kill them). */
  sessionPids(): number[] {
    return this.smb.sessionPids();
  }


  // ---- features ---------------------------------------------------------------------------

  private async move(from: string, to: string): Promise<Entry> {
    checkSmbName(baseName(to));
    // Without -f the server refuses an existing target (naming_conflict), except for a
    // case-only rename of the entry itself, which the service allows.
    return this.entryIn(await this.smb.must([`rename ${q(from)} ${q(to)}`, `ls ${q(to)}`], `Moving "${from}"`), to);
  }

  /**
   * Server-side copy of one file (SMB2 COPYCHUNK via `scopy`): the bytes never cross the
   * network. Files only (`copyFilesOnly`): the storage service copies folder trees itself.
   */
  private async copy(from: string, to: string): Promise<Entry> {
    checkSmbName(baseName(to));
    if ((await this.stat(from)).kind === 'folder') throw new ServiceError('invalid_parameters', `"${from}" is a folder; the server copies files only.`);
    await assertFree((p) => this.stat(p), to);
    const temp = joinPath(parentOf(to), tempName());
    try {
      return this.entryIn(await this.smb.must([`scopy ${q(from)} ${q(temp)}`, `rename ${q(temp)} ${q(to)} -f`, `ls ${q(to)}`], `Copying "${from}"`), to);
    } catch (e) {
      await this.smb.commands([`del ${q(temp)}`]).catch(() => {});
      throw e;
    }
  }

  private async quota() {
    const out = await this.smb.must(['du'], 'The share', { read: true });
    const m = BLOCKS_LINE.exec(out);
    if (!m) return { used: null, total: null };
    const block = Number(m[2]);
    return { total: Number(m[1]) * block, used: (Number(m[1]) - Number(m[3])) * block };
  }
}

/**
 * A body's chunk as a Buffer without copying it (Buffer.from(buffer) copies: for a 1 GiB upload
 * that was 1 GiB of copies and garbage in this process).
 */
function bytesOf(chunk: Uint8Array | string): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  return typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/**
 * How many bytes of the file `real` (a resolved path) process `pid` (smbclient's `put`) has got
 * to the server: what it wrote (`wchar`, /proc/<pid>/io) since before it opened the file, less
 * what still waits unacknowledged in its TCP sockets' send queues (/proc/<pid>/net/tcp{,6}).
 * Its read position in the file is no measure: smbclient reads up to two 8 MiB chunks ahead.
 * Counts SMB headers too (~100 bytes per 8 MiB), never bytes the server has not received.
 * Undefined while the file is not open (before the `put`, after it), or without /proc.
 */
function sentReader(pid: number, real: string): () => Promise<number | undefined> {
  // What the login wrote: the last count before the file was open.
  let base = 0;
  return async () => {
    try {
      const proc = `/proc/${pid}`;
      const links = await Promise.all((await readdir(`${proc}/fd`)).map((n) => readlink(`${proc}/fd/${n}`).catch(() => '')));
      const wchar = Number(/^wchar: (\d+)$/m.exec(await readFile(`${proc}/io`, 'utf8'))?.[1]);
      if (!links.includes(real)) {
        base = wchar;
        return undefined;
      }
      const sockets = new Set(links.filter((l) => l.startsWith('socket:[')).map((l) => l.slice(8, -1)));
      let queued = 0;
      for (const table of ['tcp', 'tcp6']) {
        const text = await readFile(`${proc}/net/${table}`, 'utf8').catch(() => '');
        for (const line of text.split('\n').slice(1)) {
          // sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode
          const cols = line.trim().split(/\s+/);
          if (cols[9] && sockets.has(cols[9])) queued += parseInt(cols[4]!.split(':')[0]!, 16);
        }
      }
      return Math.max(0, wchar - base - queued);
    } catch {
      return undefined;
    }
  };
}

function checkSmbName(name: string): void {
  if (INVALID_NAME.test(name)) {
    throw new ServiceError('invalid_parameters', `"${name}" is not a valid SMB name: names cannot contain " * : < > ? | \\ or end with a dot or a space.`);
  }
}
