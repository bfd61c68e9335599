/**
 * A GET whose body goes straight from the socket into a local file. Node's ordinary socket
 * reads allocate a 64 KiB buffer per read and push each through a Readable: 170–600 ms of CPU
 * per 256 MiB on loopback, whatever HTTP client sits on top (undici's `dispatch` with no stream
 * at all costs the same). A socket reading into a few reused 1 MiB buffers (`onread`) costs
 * 50–60 ms, curl's league. The body is written at its offset with positional writes, several in
 * flight (each in 512 KiB writes, see WRITE); reading pauses while every buffer waits for its write.
 *
 * Only what a plain file answer needs is parsed: a status line, headers, a Content-Length body
 * over `Connection: close`. Anything else (chunked, no length, a 200 to a ranged request) is
 * reported as `unsupported` before a byte is written, and the caller streams instead.
 */
import { close, ftruncate, open, write } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { DirectPipeReadable } from '../shared/sinks';

const BUFFER = 1 << 20;
/** Buffers per download: one being filled, the rest being written. */
const BUFFERS = 4;
/**
 * The largest single write: on Linux 6.18 (ext4, in a VM) 1 GiB written in 1 MiB writes cost
 * 1.2-2.0 s of system CPU, in 512 KiB writes 0.2 s (dd, same disk, alternated). Why 1 MiB costs
 * that much more there is not settled (the page cache's large folios are one guess).
 */
const WRITE = 512 * 1024;
const MAX_HEAD = 64 * 1024;

export interface FileGet {
  host: string;
  port: number;
  /** Request target, already encoded. */
  path: string;
  headers: Record<string, string>;
  /** Bytes from this offset on; written at the same offset of `file` (a new file when 0). */
  start: number;
  /**
   * With `end` (exclusive), only the range [start, end) is asked for (a `Range` header of the
   * caller's) and written into the existing `file` at those offsets: nothing else of it is
   * touched, so several ranges of one file can be read at once.
   */
  end?: number;
  file: string;
  signal?: AbortSignal;
  /** Idle time (no byte read) after which the download fails. */
  timeoutMs: number;
  /**
   * Growth of the written run from `start`: once called back, every byte up to start + the sum
   * so far is in the file (writes in flight may return out of order; a later one is counted once
   * every one before it returned).
   */
  onBytes?(n: number): void;
}

export type FileGetResult =
  | { kind: 'done'; status: number; bytes: number }
  /** A status other than 200/206: nothing was written; the body was not read. */
  | { kind: 'status'; status: number }
  /** An answer this path does not handle; nothing was written. */
  | { kind: 'unsupported'; reason: string };

/** A failure of the connection itself; `code` as undici's and the OS's, for the caller's mapping. */
export class FileGetError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/**
 * Writes `len` bytes of `buf` at `at` in writes of at most WRITE bytes, one after the other;
 * calls back with the bytes written, stopping at the first error or short write.
 */
function writePieces(fd: number, buf: Buffer, len: number, at: number, cb: (e: NodeJS.ErrnoException | null, n: number) => void): void {
  let done = 0;
  const next = () => {
    const n = Math.min(WRITE, len - done);
    write(fd, buf, done, n, at + done, (e, w) => {
      if (e) return cb(e, done);
      done += w;
      if (w !== n || done === len) return cb(null, done);
      next();
    });
  };
  next();
}

/** The answer head read so far plus `chunk`: still incomplete (`more`), too long, or whole with the body bytes after it. */
export function readHead(sofar: Buffer, chunk: Buffer): { more: Buffer } | { head: string; rest: Buffer } | FileGetError {
  const all = Buffer.concat([sofar, chunk]);
  const end = all.indexOf('\r\n\r\n');
  if (end >= 0) return { head: all.subarray(0, end).toString('latin1'), rest: all.subarray(end + 4) };
  if (all.length > MAX_HEAD) return new FileGetError('The answer head is too long.', 'UND_ERR_HEADERS_OVERFLOW');
  return { more: all };
}

export function getToFile(req: FileGet): Promise<FileGetResult> {
  return new Promise<FileGetResult>((resolve, reject) => {
    const free: Buffer[] = Array.from({ length: BUFFERS }, () => Buffer.allocUnsafe(BUFFER));
    let head: Buffer | null = Buffer.alloc(0);
    let status = 0;
    let expected = 0; // body bytes announced
    let received = 0; // body bytes read
    let written = 0;
    let writing = 0;
    let paused = false;
    let fd: number | null = null;
    let opening = false;
    let settled = false;
    let failure: Error | null = null;
    /** A write failed: its bytes are missing, so none of this attempt's bytes are kept. */
    let hole = false;
    /** File offsets of the writes not returned yet, and how far the written run from `start` reaches. */
    const inFlight = new Set<number>();
    let contiguous = req.start;
    /** Body bytes read with the head, not yet handed to a write (the file is opening). */
    let inHand = 0;

    const finish = (err: Error | null, result?: FileGetResult) => {
      if (settled) return;
      if (err) failure ??= err;
      socket.destroy();
      req.signal?.removeEventListener('abort', onAbort);
      // Settle once every write has returned and the file is closed.
      if (writing > 0 || opening) return;
      settled = true;
      const done = () => (failure ? reject(failure) : resolve(result ?? { kind: 'done', status, bytes: written }));
      if (fd === null) return done();
      const f = fd;
      fd = null;
      const closeFile = () =>
        close(f, (e) => {
          if (e) failure ??= e;
          done();
        });
      // A range of a shared file leaves the rest to its caller, who counted only the written run.
      if (hole && req.end === undefined) ftruncate(f, req.start, closeFile);
      else closeFile();
    };
    const onAbort = () => finish(Object.assign(new Error('The download was cancelled.'), { name: 'AbortError' }));

    /** Writes `len` bytes of `buf` at the next offset; an owned buffer goes back to `free` after. */
    const writeBody = (buf: Buffer, len: number, owned: boolean) => {
      const at = req.start + received;
      received += len;
      writing++;
      inFlight.add(at);
      writePieces(fd!, buf, len, at, (e, n) => {
        writing--;
        if (owned) free.push(buf);
        if (e || n !== len) {
          hole = true;
          failure ??= e ?? Object.assign(new Error(`Short write into ${req.file}.`), { code: 'EIO', syscall: 'write' });
        } else {
          written += n;
          inFlight.delete(at);
          if (!hole) {
            const reach = inFlight.size ? Math.min(...inFlight) : req.start + received;
            if (reach > contiguous) req.onBytes?.(reach - contiguous);
            contiguous = Math.max(contiguous, reach);
          }
        }
        if (failure) return finish(failure);
        if (settled) return;
        if (written === expected) return finish(null);
        if (paused && free.length > 1) {
          paused = false;
          socket.resume();
        }
      });
    };

    /** The head is complete: check it, then open the file and write what came with it. */
    const onHead = (text: string, rest: Buffer): boolean => {
      const h = checkHead(text, req.start, req.end);
      if (h instanceof Error) return (finish(h), false);
      if (h.kind !== 'body') return (finish(null, h), false);
      status = h.status;
      expected = h.length;
      if (rest.length > expected) {
        finish(new FileGetError('The server sent more than Content-Length.', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'));
        return false;
      }
      // Reading waits while the file opens: nothing is kept in memory meanwhile.
      const first = Buffer.from(rest);
      inHand = first.length;
      paused = true;
      opening = true;
      open(req.file, req.start > 0 || req.end !== undefined ? 'r+' : 'w', (e, f) => {
        opening = false;
        inHand = 0;
        if (e) return finish(e);
        fd = f;
        if (settled || failure) return finish(failure);
        if (first.length) writeBody(first, first.length, false);
        if (expected === 0) return finish(null);
        if (received === expected) return; // the last write finishes
        paused = false;
        socket.resume();
      });
      return false;
    };

    const onRead = (n: number, buf: Buffer): boolean => {
      if (settled || failure) return false;
      if (head !== null) {
        const got = readHead(head, buf.subarray(0, n));
        free.push(buf);
        if (got instanceof FileGetError) return (finish(got), true);
        if ('more' in got) return ((head = got.more), true);
        head = null;
        return onHead(got.head, got.rest);
      }
      if (received + n > expected) {
        finish(new FileGetError('The server sent more than Content-Length.', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'));
        return false;
      }
      writeBody(buf, n, true);
      // Keep one buffer for the read that follows; pause while the others are being written.
      if (free.length <= 1) paused = true;
      return !paused;
    };

    const socket = openGet(req, () => free.pop() ?? Buffer.allocUnsafe(BUFFER), onRead);
    socket.setTimeout(req.timeoutMs, () => finish(new FileGetError(`No answer for ${req.timeoutMs} ms.`, 'UND_ERR_BODY_TIMEOUT')));
    socket.on('error', (e) => finish(e));
    socket.on('close', () => {
      if (settled) return;
      if (head !== null || status === 0) return finish(new FileGetError('The server closed the connection before answering.', 'UND_ERR_SOCKET'));
      if (received + inHand < expected) finish(new FileGetError(`The connection closed after ${received} of ${expected} bytes.`, 'UND_ERR_SOCKET'));
    });
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort);
  });
}

export interface StreamGet {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  /** First byte asked for by a Range header in `headers` (0 without one). */
  start: number;
  signal?: AbortSignal;
  timeoutMs: number;
}

export type StreamGetResult = { kind: 'stream'; body: Readable } | { kind: 'status'; status: number } | { kind: 'unsupported'; reason: string };


/**
 * The same GET as `getToFile`, its body as a stream: the socket reads into 1 MiB buffers that
 * are handed on as they are (a short read is copied out and its buffer read into again), so the
 * stream gets a few large chunks instead of one per 64 KiB read. Reading pauses while the
 * stream's consumer is behind. A connection that ends early destroys the stream with an error.
 * Nothing is read past the answer's head until the stream is read or piped.
 */
export function getStream(req: StreamGet): Promise<StreamGetResult> {
  return new Promise<StreamGetResult>((resolve, reject) => {
    let head: Buffer | null = Buffer.alloc(0);
    let expected = 0;
    let received = 0;
    let spare: Buffer | undefined;
    let body: DirectPipeReadable | undefined;
    let ended = false;
    /** Body bytes that came with the head, held until the stream is read or piped. */
    let first: Buffer | null = null;
    /**
     * Piped straight into a sink (`DirectPipeReadable`: the REST answer, a file), the socket writes
     * into it from a few reused 1 MiB buffers, as `getToFile` does (a fresh 1 MiB buffer per read
     * costs page faults and collector passes: 256 MiB 120–300 ms of CPU against 55–90 ms reused).
     * Its free buffers and the writes not called back:
     */
    let sink: NodeJS.WritableStream | null = null;
    const free: Buffer[] = [];
    let writing = 0;
    let waiting = false;

    const fail = (e: Error) => {
      if (ended) return;
      ended = true;
      socket.destroy();
      req.signal?.removeEventListener('abort', onAbort);
      if (body) body.destroy(e);
      else reject(e);
    };
    const onAbort = () => fail(Object.assign(new Error('The download was cancelled.'), { name: 'AbortError' }));

    /** Every byte is handed on: the stream ends (the sink's writes still run). */
    const complete = () => {
      ended = true;
      req.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      body!.push(null);
      if (sink) body!.resume(); // no reader in this mode: flowing lets 'end' out
    };

    const resume = () => {
      socket.setTimeout(req.timeoutMs);
      socket.resume();
    };
    /** Paused for the consumer: no idle timeout while it is behind, only the server's silence counts. */
    const pause = () => {
      socket.setTimeout(0);
      return false;
    };

    const deliver = (chunk: Buffer): boolean => {
      received += chunk.length;
      if (received > expected) return (fail(new FileGetError('The server sent more than Content-Length.', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH')), false);
      const more = chunk.length === 0 || body!.push(chunk);
      if (received === expected) return (complete(), false);
      return more || pause();
    };

    /** Writes `len` bytes of `buf` into the sink; an owned buffer is read into again once written. */
    const writeSink = (buf: Buffer, len: number, owned: boolean): boolean => {
      // A sink destroyed before the last byte stops the download at once: its 'close' may come
      // only after its file is closed, and the socket would meanwhile read on into nothing.
      if ((sink as { destroyed?: boolean }).destroyed) return (body!.destroy(), false);
      received += len;
      if (received > expected) return (fail(new FileGetError('The server sent more than Content-Length.', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH')), false);
      writing++;
      sink!.write(buf.subarray(0, len), (e?: Error | null) => {
        writing--;
        if (owned) free.push(buf);
        if (e && !ended) return void body!.destroy();
        if (e || ended || !waiting) return;
        waiting = false;
        resume();
      });
      if (received === expected) return (complete(), false);
      // One buffer stays for the read that follows; reading waits while the others are written.
      if (writing < BUFFERS - 1) return true;
      waiting = true;
      return pause();
    };

    /** `DirectPipeReadable.pipe` into a sink that releases chunks at its write callback. */
    const direct = (dest: NodeJS.WritableStream, end: boolean): boolean => {
      if (ended || sink || first === null) return false;
      sink = dest;
      if (end) body!.once('end', () => dest.end());
      // A sink closed or failed before the last byte: the download stops (a pipe has nothing
      // to resume), without an error that a plain pipe() would leave unhandled.
      dest.once('close', () => {
        if (!ended) body!.destroy();
      });
      const f = first;
      first = null;
      if (writeSink(f, f.length, false)) resume();
      return true;
    };

    const onRead = (n: number, buf: Buffer): boolean => {
      if (ended) return false;
      if (head !== null) {
        const got = readHead(head, buf.subarray(0, n));
        spare = buf;
        if (got instanceof FileGetError) return (fail(got), true);
        if ('more' in got) return ((head = got.more), true);
        head = null;
        const h = checkHead(got.head, req.start);
        if (h instanceof Error) return (fail(h), false);
        if (h.kind !== 'body') {
          ended = true;
          socket.destroy();
          req.signal?.removeEventListener('abort', onAbort);
          resolve(h);
          return false;
        }
        expected = h.length;
        first = Buffer.from(got.rest);
        body = new DirectPipeReadable(
          {
            highWaterMark: 2 * BUFFER,
            read: () => {
              if (ended || sink) return;
              if (first !== null) {
                const f = first;
                first = null;
                if (!deliver(f)) return;
              }
              resume();
            },
            destroy: (err, cb) => {
              ended = true;
              socket.destroy();
              req.signal?.removeEventListener('abort', onAbort);
              cb(err);
            },
          },
          direct,
        );
        resolve({ kind: 'stream', body });
        return pause();
      }
      if (sink) return writeSink(buf, n, true);
      if (n >= BUFFER / 4) {
        spare = undefined; // the chunk keeps this buffer
        return deliver(buf.subarray(0, n));
      }
      spare = buf;
      return deliver(Buffer.from(buf.subarray(0, n)));
    };

    const socket = openGet(req, () => {
      if (sink) return free.pop() ?? Buffer.allocUnsafe(BUFFER);
      const b = spare ?? Buffer.allocUnsafe(BUFFER);
      spare = undefined;
      return b;
    }, onRead);
    socket.setTimeout(req.timeoutMs, () => fail(new FileGetError(`No answer for ${req.timeoutMs} ms.`, 'UND_ERR_BODY_TIMEOUT')));
    socket.on('error', (e) => fail(e));
    socket.on('close', () => {
      if (ended) return;
      if (head !== null) return fail(new FileGetError('The server closed the connection before answering.', 'UND_ERR_SOCKET'));
      fail(new FileGetError(`The connection closed after ${received} of ${expected} bytes.`, 'UND_ERR_SOCKET'));
    });
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort);
  });
}

/** Connects and sends the GET (`Connection: close`: one answer per connection). */
function openGet(req: { host: string; port: number; path: string; headers: Record<string, string> }, buffer: () => Buffer, callback: (n: number, buf: Buffer) => boolean): Socket {
  const socket = connect({ host: req.host, port: req.port, onread: { buffer, callback } });
  socket.setNoDelay(true);
  socket.on('connect', () => {
    const lines = [`GET ${req.path} HTTP/1.1`, `Host: ${req.host.includes(':') ? `[${req.host}]` : req.host}:${req.port}`, 'Connection: close'];
    for (const [k, v] of Object.entries(req.headers)) lines.push(`${k}: ${v}`);
    socket.write(lines.join('\r\n') + '\r\n\r\n');
  });
  return socket;
}

/**
 * What an answer's head says: a body of `length` bytes to read, a status to report, or an
 * answer this path does not read (chunked, no length, a range not served as asked: with `end`,
 * exactly [start, end)).
 */
function checkHead(text: string, start: number, end?: number): { kind: 'body'; status: number; length: number } | { kind: 'status'; status: number } | { kind: 'unsupported'; reason: string } | Error {
  const [statusLine, ...lines] = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!m) return new FileGetError('The server sent no HTTP answer.', 'UND_ERR_SOCKET');
  const status = Number(m[1]);
  const headers = new Map<string, string>();
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  if (status !== 200 && status !== 206) return { kind: 'status', status };
  const length = headers.get('content-length');
  if (headers.has('transfer-encoding') || length === undefined || !/^\d+$/.test(length)) return { kind: 'unsupported', reason: 'no Content-Length' };
  const range = /^bytes (\d+)-(\d+)/.exec(headers.get('content-range') ?? '');
  if (status === 206 ? Number(range?.[1]) !== start : start > 0) return { kind: 'unsupported', reason: 'the range was not served' };
  if (end !== undefined && (status !== 206 || Number(range?.[2]) !== end - 1 || Number(length) !== end - start)) return { kind: 'unsupported', reason: 'the range was not served' };
  return { kind: 'body', status, length: Number(length) };
}
