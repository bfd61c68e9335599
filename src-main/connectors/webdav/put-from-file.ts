/**
 * A PUT whose body goes straight from a local file into its own socket: the file is read into a
 * few reused 1 MiB buffers, each written to the socket and read into again once the socket has
 * taken it. A stream of fresh chunks (a file stream into undici) makes V8 run a full collection
 * every few dozen MiB for the memory outside its heap: 1 GiB cost 1.4-2.0 s of CPU that way,
 * most of it the collector, against 0.3-0.8 s this way (docs/measurements.md).
 *
 * Only what a plain PUT needs is spoken: a Content-Length body over `Connection: close`, and the
 * answer's status line. The caller maps the status; this reports only the connection's failures.
 */
import { close, open, read } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { ServiceError } from '../../errors';
import { fsError } from '../shared/fs-errors';
import { FileGetError, readHead } from './get-to-file';

const BUFFER = 1 << 20;
/** Buffers per upload: one being read into from the file, the rest being written to the socket. */
const BUFFERS = 4;

export interface FilePut {
  host: string;
  port: number;
  /** The request path, already encoded. */
  path: string;
  headers: Record<string, string>;
  file: string;
  /** The bytes to send: the file's size when the caller looked. A file that ends sooner fails. */
  size: number;
  signal?: AbortSignal;
  timeoutMs: number;
  /** Bytes handed to the connection since the last call. */
  onBytes?(n: number): void;
}

/**
 * Sends the file and resolves with the answer's status once the server has answered. Rejects on
 * the local file's errors (as ServiceErrors naming the file), a connection that breaks or goes silent
 * (FileGetError with undici's codes), a cancel (AbortError), or a file that ends before `size`
 * (conflict): then the connection is dropped before the last byte, so the server keeps nothing.
 */
export function putFromFile(req: FilePut): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const free: Buffer[] = [];
    let made = 0;
    let fd: number | null = null;
    /** Bytes read from the file, and bytes the socket has taken. */
    let offset = 0;
    let sent = 0;
    let reading = false;
    let connected = false;
    let head: Buffer | null = Buffer.alloc(0);
    let settled = false;
    let result: { err: Error } | { status: number } | null = null;

    /** Ends once the file is closed, which waits for a read in flight (its descriptor is still in use). */
    const finish = (r: { err: Error } | { status: number }) => {
      if (result) return;
      result = r;
      socket?.destroy();
      req.signal?.removeEventListener('abort', onAbort);
      settle();
    };
    const settle = () => {
      if (settled || !result || reading) return;
      settled = true;
      const r = result;
      const done = () => ('err' in r ? reject(r.err) : resolve(r.status));
      if (fd === null) return done();
      const f = fd;
      fd = null;
      close(f, () => done());
    };
    const onAbort = () => finish({ err: Object.assign(new Error('The upload was cancelled.'), { name: 'AbortError' }) });

    const take = (): Buffer | undefined => {
      if (free.length) return free.pop();
      if (made === BUFFERS) return undefined;
      made++;
      return Buffer.allocUnsafe(Math.min(BUFFER, req.size));
    };

    /** Reads the next piece of the file while a buffer is free; each goes to the socket as it comes. */
    const pump = () => {
      if (result || reading || !connected || offset >= req.size) return;
      const buf = take();
      if (!buf) return;
      reading = true;
      read(fd!, buf, 0, Math.min(buf.length, req.size - offset), offset, (e, n) => {
        reading = false;
        if (result) return settle();
        if (e) return finish({ err: fsError(e, req.file) });
        if (n === 0) return finish({ err: new ServiceError('conflict', `"${req.file}" became shorter during the upload; start it again.`) });
        offset += n;
        socket!.write(buf.subarray(0, n), (err) => {
          free.push(buf);
          if (err || result) return; // the socket's 'error' or 'close' reports it
          sent += n;
          req.onBytes?.(n);
          pump();
        });
        pump();
      });
    };

    const onData = (chunk: Buffer) => {
      if (head === null) return;
      const got = readHead(head, chunk);
      if (got instanceof FileGetError) return finish({ err: got });
      if ('more' in got) return void (head = got.more);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(got.head)?.[1] ?? NaN);
      if (!Number.isInteger(status)) return finish({ err: new FileGetError('The server answered with no status line.', 'UND_ERR_INVALID_ARG') });
      // An interim answer: the real one follows.
      if (status === 100) return void ((head = Buffer.alloc(0)), onData(got.rest));
      head = null;
      if (status < 300) {
        // A success before every byte was handed over would be a server taking a short file for whole.
        if (offset < req.size) return finish({ err: new FileGetError(`The server answered ${status} after ${offset} of ${req.size} bytes.`, 'UND_ERR_SOCKET') });
        // The last writes' callbacks may come after the answer is read: their bytes are counted here.
        if (sent < req.size) req.onBytes?.(req.size - sent);
      }
      finish({ status });
    };

    let socket: Socket | undefined;
    open(req.file, 'r', (e, f) => {
      // Cancelled while the file opened: already settled, so the file is closed here.
      if (result) return void (e || close(f, () => {}));
      if (e) return finish({ err: fsError(e, req.file) });
      fd = f;
      const s = (socket = connect({ host: req.host, port: req.port }));
      s.setNoDelay(true);
      s.setTimeout(req.timeoutMs, () => finish({ err: new FileGetError(`No answer for ${req.timeoutMs} ms.`, 'UND_ERR_BODY_TIMEOUT') }));
      s.on('connect', () => {
        const lines = [`PUT ${req.path} HTTP/1.1`, `Host: ${req.host.includes(':') ? `[${req.host}]` : req.host}:${req.port}`, 'Connection: close', `Content-Length: ${req.size}`];
        for (const [k, v] of Object.entries(req.headers)) lines.push(`${k}: ${v}`);
        s.write(lines.join('\r\n') + '\r\n\r\n');
        connected = true;
        pump();
      });
      s.on('data', onData);
      s.on('error', (err) => finish({ err }));
      s.on('close', () => finish({ err: new FileGetError(`The connection closed after ${sent} of ${req.size} bytes.`, 'UND_ERR_SOCKET') }));
    });
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort);
  });
}
