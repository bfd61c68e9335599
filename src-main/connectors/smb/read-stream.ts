/**
 * A streamed SMB download: smbclient `get`s the file into a FIFO in a private temporary folder,
 * and this process reads the FIFO through a socket that reads into buffers it is given
 * (`onread`), with none of a child's stdout stream machinery. 256 MiB on loopback: 0.07–0.11 s
 * of this process's CPU against 0.15–0.28 s reading smbclient's stdout (docs/measurements.md).
 *
 * Piped into a sink that is done with a chunk once its write calls back (an HTTP response, a
 * socket, a file stream), reads fill a few reused 1 MiB buffers that are written as they fill;
 * every other consumer gets a copy of each read.
 *
 * On Linux a transfer past GROW_AFTER has its FIFO grown from 64 KiB to 1 MiB (growPipe): about
 * a tenth of the reads here (345–435 per 256 MiB against 4,096) and of smbclient's waits on a
 * full pipe.
 */
import { execFile, spawn } from 'node:child_process';
import { close, constants, open } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { ServiceError } from '../../errors';
import { DirectPipeReadable } from '../shared/sinks';
import { q, type Smbclient } from './smbclient';
import { spawnError, statusError, unavailable } from './status';

const BUFFER = 1 << 20;
/** Buffers of a download piped into a sink: one being filled, the rest being written. */
const BUFFERS = 4;
/** A buffer with less room than this is handed on: a read of a pipe at its default size returns no more. */
const READ = 64 * 1024;
/** The FIFO's size once grown (Linux's limit for unprivileged processes, /proc/sys/fs/pipe-max-size). */
const PIPE = 1 << 20;
/** A transfer grows its FIFO once this much has come through it (smaller files never pay the helper). */
const GROW_AFTER = 256 * 1024;
/** Reads are gathered into chunks this big for a consumer that keeps its chunks (each a new buffer). */
const CHUNK = 256 * 1024;
/** Bytes gathered are handed on after this long even if their buffer is not full (a slow transfer). */
const HOLD_MS = 20;

export interface FifoGet {
  smb: Smbclient;
  /** The smbclient program (for its spawn errors). */
  program: string;
  path: string;
  start: number;
  /** Bytes wanted from `start` (Infinity: to the end). */
  want: number;
  /** The file's size, when known (for the error of a transfer that stopped). */
  size?: number;
  signal?: AbortSignal;
}

/**
 * A private FIFO, opened for reading without blocking; null where FIFOs cannot be made (no
 * `mkfifo`), and the caller reads smbclient's stdout instead.
 */
async function makeFifo(): Promise<{ dir: string; fifo: string; fd: number } | null> {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-smb-'));
  const fifo = join(dir, 'get');
  try {
    await promisify(execFile)('mkfifo', ['-m', '600', fifo]);
    const fd = await promisify(open)(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    return { dir, fifo, fd };
  } catch {
    await rm(dir, { recursive: true, force: true });
    return null;
  }
}

/** F_SETPIPE_SZ in <linux/fcntl.h>. */
const F_SETPIPE_SZ = 1031;
/** Cleared when there is no perl to run: the FIFOs then stay at their default size. */
let canGrow = process.platform === 'linux';

/**
 * Grows the pipe behind `fifo` to `size` bytes. Node has no fcntl, so perl (in every Debian and
 * Ubuntu install) opens the FIFO as a second reader, which neither takes bytes nor ends the
 * stream when it closes, and sets the size of the pipe both ends share. Resolves whether it grew;
 * false without perl, or where the size is refused (over pipe-max-size, or the user's pipe
 * pages spent): the transfer then goes on at the default size.
 */
export function growPipe(fifo: string, size = PIPE): Promise<boolean> {
  if (!canGrow) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn('perl', ['-MFcntl', '-e', `sysopen(my $f, $ARGV[0], O_RDONLY | O_NONBLOCK) or exit 2; fcntl($f, ${F_SETPIPE_SZ}, 0 + $ARGV[1]) or exit 3`, fifo, String(size)], { stdio: 'ignore' });
    child.once('error', (e: NodeJS.ErrnoException) => {
      // No perl here: not asked again. Any other failure (no process slot) may pass.
      if (e.code === 'ENOENT') canGrow = false;
      resolve(false);
    });
    child.once('close', (code) => resolve(code === 0));
  });
}

/**
 * `get` into a FIFO, bytes [start, start + want) of the file. Resolves at the first byte, or at
 * a clean end of an empty file; rejects when smbclient fails before. The stream ends only once
 * smbclient has exited with every wanted byte read, so a transfer that stops early is an error,
 * never a short file that looks complete. Destroying it ends smbclient and removes the FIFO.
 * Null where no FIFO can be made.
 */
export async function fifoGet(req: FifoGet): Promise<Readable | null> {
  const made = await makeFifo();
  if (!made) return null;
  const { dir, fifo, fd } = made;
  const what = `Reading "${req.path}"`;
  let child: ReturnType<Smbclient['spawn']>;
  try {
    child = req.smb.spawn(['-E']);
  } catch (e) {
    close(fd, () => {});
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const { start, want } = req;
  let log = '';
  let seen = 0;
  let delivered = 0;
  let done = false;
  let eof = false;
  let exited = false;
  /** The buffer reads are gathered in, and how much of it is filled. */
  let cur: Buffer | undefined;
  let fill = 0;
  let hold: NodeJS.Timeout | undefined;
  /** Piped straight into a sink: the free buffers and the writes not called back. */
  let sink: NodeJS.WritableStream | null = null;
  const free: Buffer[] = [];
  let writing = 0;
  let waiting = false;
  /** A sink's buffers are reused once written; a consumer that keeps its chunks gets new ones. */
  const take = () => (sink ? (free.pop() ?? Buffer.allocUnsafe(BUFFER)) : Buffer.allocUnsafe(CHUNK));

  let settle: ((err?: Error) => void) | undefined;
  const ready = new Promise<Readable>((resolve, reject) => {
    settle = (err) => {
      settle = undefined;
      if (err) reject(err);
      else resolve(out);
    };
  });

  const cleanup = () => {
    clearTimeout(hold);
    socket.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    req.signal?.removeEventListener('abort', onAbort);
    void rm(dir, { recursive: true, force: true });
  };

  /**
   * Hands the gathered bytes on: pushed, or written into the sink. False while the consumer is
   * behind (every sink buffer is out).
   */
  const flush = (): boolean => {
    clearTimeout(hold);
    hold = undefined;
    const b = cur!;
    const len = fill;
    cur = undefined;
    fill = 0;
    if (!sink) return out.push(b.subarray(0, len));
    if (len === 0) return (free.push(b), true);
    writing++;
    sink!.write(b.subarray(0, len), (e?: Error | null) => {
      writing--;
      free.push(b);
      if (e || done || !waiting) return;
      waiting = false;
      socket.resume();
    });
    if (writing < BUFFERS - 1) return true;
    waiting = true;
    return false;
  };

  const finish = (err?: Error) => {
    if (done) return;
    done = true;
    if (err) {
      cleanup();
      if (settle) settle(err);
      else out.destroy(err);
      return;
    }
    if (cur && fill > 0) flush();
    cleanup();
    out.push(null);
    if (sink) out.resume(); // no reader in this mode: flowing lets 'end' out
    settle?.();
  };

  /** smbclient has exited and the FIFO is drained: complete, or the reason it is not. */
  const check = () => {
    if (done || !exited) return;
    const failed = statusError(log, what);
    if (failed) return finish(failed.code === 'invalid_parameters' && /IS_A_DIRECTORY/.test(log) ? new ServiceError('invalid_parameters', `"${req.path}" is a folder.`) : failed);
    if (!eof) return;
    if (delivered >= want) return finish();
    // A whole file: complete when smbclient says it got as many bytes as were read.
    const got = /getting file .* of size (\d+) as /.exec(log);
    if (want === Infinity && got && Number(got[1]) === delivered) return finish();
    const of = req.size ?? (got ? Number(got[1]) : undefined);
    finish(unavailable(what, `the transfer stopped after ${start + delivered}${of === undefined ? '' : ` of ${of}`} bytes`));
  };

  const onRead = (n: number, buf: Buffer): boolean => {
    if (done) return false;
    // smbclient has no ranged get: skip to `start` and stop the transfer after `start + want`.
    const from = Math.max(0, start - seen);
    if (seen < GROW_AFTER && seen + n >= GROW_AFTER) void growPipe(fifo);
    seen += n;
    if (from >= n) return true;
    const len = Math.min(n - from, want - delivered);
    delivered += len;
    cur ??= take();
    // The read went into the buffer's free part, unless that buffer was handed on since it was
    // given (a pipe began, a slow transfer's bytes went on) or it began before `start`: then its
    // bytes are moved there.
    if (from > 0 || buf.buffer !== cur.buffer || buf.byteOffset !== cur.byteOffset + fill) buf.copy(cur, fill, from, from + len);
    fill += len;
    settle?.();
    if (delivered >= want) {
      finish();
      return false;
    }
    if (cur.length - fill < READ) return flush();
    hold ??= setTimeout(() => {
      hold = undefined;
      if (!done && cur && fill > 0 && !flush()) socket.pause();
    }, HOLD_MS);
    return true;
  };

  const socket = new Socket({
    fd,
    readable: true,
    writable: false,
    onread: {
      buffer: () => {
        cur ??= take();
        return cur.subarray(fill);
      },
      callback: onRead,
    },
  } as ConstructorParameters<typeof Socket>[0]);

  /** `DirectPipeReadable.pipe` into a sink that releases chunks at its write callback. */
  const direct = (dest: NodeJS.WritableStream, end: boolean): boolean => {
    if (done || sink) return false;
    // What was read before the pipe goes first, as it is (those buffers are not reused).
    const before = out.read() as Buffer | null;
    const gathered = cur?.subarray(0, fill);
    cur = undefined;
    fill = 0;
    sink = dest;
    for (const b of [before, gathered]) {
      if (!b?.length) continue;
      writing++;
      dest.write(b, () => writing--);
    }
    if (end) out.once('end', () => dest.end());
    // A sink closed or failed before the last byte: the download stops (a pipe has nothing to
    // resume), without an error that a plain pipe() would leave unhandled.
    dest.once('close', () => {
      if (!done) out.destroy();
    });
    socket.resume();
    return true;
  };

  const out = new DirectPipeReadable(
    {
      highWaterMark: BUFFER,
      read: () => {
        if (!done && !sink) socket.resume();
      },
      destroy: (err, cb) => {
        done = true;
        cleanup();
        settle?.(err ?? new ServiceError('request_timeout', 'The download was cancelled.'));
        cb(err);
      },
    },
    direct,
  );
  const onAbort = () => out.destroy(new ServiceError('request_timeout', 'The download was cancelled.'));

  socket.on('end', () => {
    eof = true;
    check();
  });
  socket.on('error', (e) => finish(unavailable(what, e.message)));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (log += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
  child.once('close', () => {
    exited = true;
    // smbclient may have ended without opening the FIFO (or been killed before): a writer
    // opened and closed here makes the read end see its end once the bytes in it are read.
    open(fifo, constants.O_WRONLY | constants.O_NONBLOCK, (e, w) => {
      if (!e) close(w, () => {});
      check();
    });
  });
  child.once('error', (e) => finish(spawnError(req.program, e)));
  child.stdin!.on('error', () => {});
  child.stdin!.end(`get ${q(req.path)} ${q(fifo, false)}\n`);
  if (req.signal?.aborted) onAbort();
  else req.signal?.addEventListener('abort', onAbort, { once: true });
  return ready;
}
