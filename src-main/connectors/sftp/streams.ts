/**
 * Pipelined reads and writes on one SFTP handle: ssh2's own streams wait a round trip per
 * block, these keep many requests in flight.
 */
import { Readable, Writable } from 'node:stream';
import { DirectPipeReadable } from '../shared/sinks';
import type { ServiceError } from '../../errors';
import { SFTP } from './errors';
import type { RawSftp } from './session';

const WRITE_CHUNK = 64 * 1024;
/**
 * Reads ask for as much as the server answers in one reply (OpenSSH announces 255 KiB through
 * limits@openssh.com, which ssh2 keeps as `_maxReadLen`), at most 256 KiB, 16 at a time: 4 MiB
 * in flight, twice the SSH channel window, so the window never runs dry. Per request, ssh2
 * spends as much JavaScript as on the data itself: 4x fewer requests than with 64 KiB reads.
 */
const MAX_READ_CHUNK = 256 * 1024;
const READS_IN_FLIGHT = 16;

/**
 * Piped straight into a sink that is done with a chunk once its write calls back (the REST
 * answer, a file: `DirectPipeReadable`), reads go into this many reused buffers, READS_IN_FLIGHT
 * being read and the rest being written. A fresh buffer per read costs an allocation and the
 * collector's passes over it: 3.3–3.6 s of CPU per GiB against 2.7–3.1 s (docs/measurements.md).
 */
const DIRECT_BUFFERS = READS_IN_FLIGHT + 8;

/**
 * Reads [start, end) with up to 16 requests in flight, delivered in order: pushed as chunks of
 * their own, or written into a sink from reused buffers (DIRECT_BUFFERS).
 */
export function pipelinedRead(sftp: RawSftp, handle: Buffer, start: number, end: number, mapErr: (e: unknown) => ServiceError): Readable {
  const announced = (sftp as { _maxReadLen?: number })._maxReadLen;
  const READ_CHUNK = Math.min(MAX_READ_CHUNK, announced && announced > 0 ? announced : 32 * 1024);
  interface Req {
    offset: number;
    length: number;
    buf: Buffer;
    done: Promise<Buffer>;
  }
  const queue: Req[] = [];
  let next = start;
  let closed = false;
  /** Piped straight into a sink: its free buffers, how many were made, and a wait for one. */
  let sink: NodeJS.WritableStream | null = null;
  const free: Buffer[] = [];
  let made = 0;
  let released: (() => void) | undefined;
  /** A buffer for a read: a new one unless piped into a sink; none while every sink buffer is out. */
  const take = (length: number): Buffer | undefined => {
    if (!sink) return Buffer.allocUnsafe(length);
    if (free.length) return free.pop();
    if (made >= DIRECT_BUFFERS) return undefined;
    made++;
    return Buffer.allocUnsafe(READ_CHUNK);
  };
  const release = (buf: Buffer) => {
    // Only full-size buffers are reused (a read made before the pipe may be shorter).
    if (buf.length === READ_CHUNK && free.length < DIRECT_BUFFERS) free.push(buf);
    const wake = released;
    released = undefined;
    wake?.();
  };
  const request = (offset: number, length: number, buf: Buffer): Req => {
    const done = new Promise<Buffer>((resolve, reject) => {
      sftp.read(handle, buf, 0, length, offset, (err: any, n: number) => {
        if (err && err.code !== SFTP.EOF) {
          reject(err);
          fail(err);
        } else resolve(buf.subarray(0, err ? 0 : n));
      });
    });
    // Only the head of the queue is awaited: a later request failing meanwhile (the reader
    // paused, or its answer came with the head's) would be an unhandled rejection otherwise.
    done.catch(() => {});
    return { offset, length, buf, done };
  };
  /**
   * A failed read fails the download at once, also while the reader is paused. After the end
   * (reads dropped past a file that got shorter), nothing is left to fail.
   */
  const fail = (err: unknown) => {
    if (stream.destroyed || ended) return;
    closeHandle();
    stream.destroy(mapErr(err));
  };
  const fill = () => {
    while (queue.length < READS_IN_FLIGHT && next < end) {
      const length = Math.min(READ_CHUNK, end - next);
      const buf = take(length);
      if (!buf) return;
      queue.push(request(next, length, buf));
      next += length;
    }
  };
  const closeHandle = () => {
    if (closed) return;
    closed = true;
    try {
      sftp.close(handle, () => {});
    } catch {
      // connection already gone
    }
  };
  let reading = false;
  let ended = false;
  const run = async () => {
    if (reading) return;
    reading = true;
    try {
      for (;;) {
        fill();
        const head = queue[0];
        if (!head) {
          if (next < end) {
            // Every sink buffer is being written: read on when one is back.
            await new Promise<void>((resolve) => (released = resolve));
            if (stream.destroyed) return;
            continue;
          }
          closeHandle();
          ended = true;
          stream.push(null);
          if (sink) stream.resume(); // no reader in this mode: flowing lets 'end' out
          return;
        }
        const data = await head.done;
        if (stream.destroyed) return;
        queue.shift();
        if (data.length === 0) {
          // The file got shorter than it was: end where it ends now.
          queue.length = 0;
          next = end;
          continue;
        }
        if (data.length < head.length) {
          const rest = head.length - data.length;
          queue.unshift(request(head.offset + data.length, rest, Buffer.allocUnsafe(rest)));
        }
        if (sink) sink.write(data, () => release(head.buf));
        else if (!stream.push(data)) return;
      }
    } catch (e) {
      closeHandle();
      stream.destroy(mapErr(e));
    } finally {
      reading = false;
    }
  };
  /** `DirectPipeReadable.pipe` into a sink that releases chunks at its write callback. */
  const direct = (dest: NodeJS.WritableStream, endSink: boolean): boolean => {
    // Every byte already read: an ordinary pipe hands on what is left and the end.
    if (stream.destroyed || ended || sink) return false;
    sink = dest;
    // What was read before the pipe goes first, in a buffer of its own.
    const before = stream.read() as Buffer | null;
    if (before?.length) dest.write(before);
    if (endSink) stream.once('end', () => dest.end());
    // A sink closed or failed before the last byte: the download stops (a pipe has nothing to
    // resume), without an error that a plain pipe() would leave unhandled.
    dest.once('close', () => {
      if (!stream.readableEnded) stream.destroy();
    });
    void run();
    return true;
  };
  const stream = new DirectPipeReadable(
    {
      highWaterMark: 1 << 20,
      read() {
        if (!sink) void run();
      },
      destroy(err, cb) {
        closeHandle();
        released?.();
        cb(err);
      },
    },
    direct,
  );
  return stream;
}

const WRITES_IN_FLIGHT = 32;

/**
 * Writes sequentially with up to 32 requests in flight (ssh2's write stream waits a round trip
 * per chunk); finishes only when every write is acknowledged and the handle is closed.
 */
export function pipelinedWrite(sftp: RawSftp, handle: Buffer): Writable {
  let offset = 0;
  let inFlight = 0;
  let failed: unknown;
  let waiter: (() => void) | undefined;
  let closed = false;
  const settle = () => {
    const w = waiter;
    waiter = undefined;
    w?.();
  };
  const send = (chunk: Buffer) => {
    const position = offset;
    offset += chunk.length;
    inFlight++;
    sftp.write(handle, chunk, 0, chunk.length, position, (err: unknown) => {
      inFlight--;
      if (err) failed ??= err;
      settle();
    });
  };
  const whenBelow = (limit: number, cb: (err?: Error | null) => void) => {
    const check = () => {
      if (failed) return cb(failed as Error);
      if (inFlight < limit) return cb();
      waiter = check;
    };
    check();
  };
  const close = (cb: (err?: unknown) => void) => {
    if (closed) return cb();
    closed = true;
    try {
      sftp.close(handle, (err: unknown) => cb(err));
    } catch (e) {
      cb(e);
    }
  };
  return new Writable({
    highWaterMark: 1 << 20,
    write(chunk: Buffer, _enc, cb) {
      // Split big chunks so that each request fits the server's packet size.
      for (let i = 0; i < chunk.length; i += WRITE_CHUNK) send(chunk.subarray(i, i + WRITE_CHUNK));
      whenBelow(WRITES_IN_FLIGHT, cb);
    },
    final(cb) {
      whenBelow(1, (err) => (err ? cb(err) : close((e) => cb(e as Error | null | undefined))));
    },
    destroy(err, cb) {
      close(() => cb(err));
    },
  });
}

/**
 * READDIR batches asked at once on one directory handle. OpenSSH answers at most 100 names a
 * reply, and ssh2's readdir(path) waits a round trip per batch (200 for 20,000 entries). Each
 * READDIR on a handle takes the next batch whatever the order replies come in, and a listing's
 * order does not matter (the service sorts it), so several can be asked at once.
 */
const READDIRS_IN_FLIGHT = 8;

/** Every name in the folder at `abs` ('.' and '..' left out), with READDIRs pipelined. */
export async function pipelinedReaddir(sftp: RawSftp, abs: string): Promise<{ filename: string; attrs: any }[]> {
  const handle = await new Promise<Buffer>((resolve, reject) => sftp.opendir(abs, (err: unknown, h: Buffer) => (err ? reject(err) : resolve(h))));
  const entries: { filename: string; attrs: any }[] = [];
  let failed: unknown;
  let eof = false;
  let inFlight = 0;
  await new Promise<void>((resolve) => {
    const ask = () => {
      while (!eof && failed === undefined && inFlight < READDIRS_IN_FLIGHT) {
        inFlight++;
        sftp.readdir(handle, (err: any, list?: { filename: string; attrs: any }[]) => {
          inFlight--;
          if (err) {
            if (err.code === SFTP.EOF) eof = true;
            else failed ??= err;
          } else {
            for (const e of list!) entries.push(e);
          }
          ask();
          if (inFlight === 0) resolve();
        });
      }
    };
    ask();
  });
  await new Promise<void>((resolve) => sftp.close(handle, () => resolve()));
  if (failed !== undefined) throw failed;
  return entries;
}
