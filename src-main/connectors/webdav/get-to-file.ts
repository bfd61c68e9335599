/**
 * A GET whose body goes straight from the socket into a local file. Node's ordinary socket
 * reads allocate a 64 KiB buffer per read and push each through a Readable: 170–600 ms of CPU
 * per 256 MiB on loopback, whatever HTTP client sits on top (undici's `dispatch` with no stream
 * at all costs the same). A socket reading into a few reused 1 MiB buffers (`onread`) costs
 * 50–60 ms, curl's league. The body is written at its offset with positional writes, several in
 * flight; reading pauses while every buffer waits for its write.
 *
 * Only what a plain file answer needs is parsed: a status line, headers, a Content-Length body
 * over `Connection: close`. Anything else (chunked, no length, a 200 to a ranged request) is
 * reported as `unsupported` before a byte is written, and the caller streams instead.
 */
import { close, ftruncate, open, write } from 'node:fs';
import { connect, type Socket } from 'node:net';

const BUFFER = 1 << 20;
/** Buffers per download: one being filled, the rest being written. */
const BUFFERS = 4;
const MAX_HEAD = 64 * 1024;

export interface FileGet {
  host: string;
  port: number;
  /** Request target, already encoded. */
  path: string;
  headers: Record<string, string>;
  /** Bytes from this offset on; written at the same offset of `file` (a new file when 0). */
  start: number;
  file: string;
  signal?: AbortSignal;
  /** Idle time (no byte read) after which the download fails. */
  timeoutMs: number;
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
      if (hole) ftruncate(f, req.start, closeFile);
      else closeFile();
    };
    const onAbort = () => finish(Object.assign(new Error('The download was cancelled.'), { name: 'AbortError' }));

    /** Writes `len` bytes of `buf` at the next offset; an owned buffer goes back to `free` after. */
    const writeBody = (buf: Buffer, len: number, owned: boolean) => {
      const at = req.start + received;
      received += len;
      writing++;
      write(fd!, buf, 0, len, at, (e, n) => {
        writing--;
        if (owned) free.push(buf);
        if (e || n !== len) {
          hole = true;
          failure ??= e ?? Object.assign(new Error(`Short write into ${req.file}.`), { code: 'EIO', syscall: 'write' });
        } else {
          written += n;
          req.onBytes?.(n);
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
      const [statusLine, ...lines] = text.split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
      if (!m) {
        finish(new FileGetError('The server sent no HTTP answer.', 'UND_ERR_SOCKET'));
        return false;
      }
      status = Number(m[1]);
      const headers = new Map<string, string>();
      for (const l of lines) {
        const i = l.indexOf(':');
        if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
      }
      if (status !== 200 && status !== 206) return (finish(null, { kind: 'status', status }), false);
      const length = headers.get('content-length');
      if (headers.has('transfer-encoding') || length === undefined || !/^\d+$/.test(length)) {
        return (finish(null, { kind: 'unsupported', reason: 'no Content-Length' }), false);
      }
      const range = /^bytes (\d+)-/.exec(headers.get('content-range') ?? '');
      if (req.start > 0 && (status !== 206 || Number(range?.[1]) !== req.start)) {
        return (finish(null, { kind: 'unsupported', reason: 'the range was not served' }), false);
      }
      expected = Number(length);
      if (rest.length > expected) {
        finish(new FileGetError('The server sent more than Content-Length.', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'));
        return false;
      }
      // Reading waits while the file opens: nothing is kept in memory meanwhile.
      const first = Buffer.from(rest);
      inHand = first.length;
      paused = true;
      opening = true;
      open(req.file, req.start > 0 ? 'r+' : 'w', (e, f) => {
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
        const all: Buffer = Buffer.concat([head, buf.subarray(0, n)]);
        free.push(buf);
        const end = all.indexOf('\r\n\r\n');
        if (end < 0) {
          if (all.length > MAX_HEAD) finish(new FileGetError('The answer head is too long.', 'UND_ERR_HEADERS_OVERFLOW'));
          head = all;
          return true;
        }
        head = null;
        return onHead(all.subarray(0, end).toString('latin1'), all.subarray(end + 4));
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

    const socket: Socket = connect({
      host: req.host,
      port: req.port,
      onread: { buffer: () => free.pop() ?? Buffer.allocUnsafe(BUFFER), callback: onRead },
    });
    socket.setNoDelay(true);
    socket.setTimeout(req.timeoutMs, () => finish(new FileGetError(`No answer for ${req.timeoutMs} ms.`, 'UND_ERR_BODY_TIMEOUT')));
    socket.on('connect', () => {
      const lines = [`GET ${req.path} HTTP/1.1`, `Host: ${req.host.includes(':') ? `[${req.host}]` : req.host}:${req.port}`, 'Connection: close'];
      for (const [k, v] of Object.entries(req.headers)) lines.push(`${k}: ${v}`);
      socket.write(lines.join('\r\n') + '\r\n\r\n');
    });
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
