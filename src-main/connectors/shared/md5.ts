/**
 * MD5 of part buffers off the main thread. MD5 runs at ~250 MB/s per core here, so hashing
 * every 8 MiB part on the event loop (Content-MD5, Azure's transactional MD5) stalls the other
 * parts' sockets; a small worker pool overlaps it with the network. Buffers backed by a
 * SharedArrayBuffer (the uploader's) are hashed in place; others are copied once.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../../errors';
import type { FilePart } from '../types';

const SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { closeSync, openSync, readSync } = require('node:fs');
let chunk;
parentPort.on('message', ({ id, buf, off, len, path, start, toEnd, stop }) => {
  const h = createHash('md5');
  const stopped = stop && new Int32Array(stop);
  if (path === undefined) h.update(new Uint8Array(buf, off, len));
  else {
    try {
      chunk ??= Buffer.allocUnsafe(1 << 20);
      const fd = openSync(path, 'r');
      try {
        for (let done = 0; done < len; ) {
          // A whole file is read in sequence (from its own position), a part at its offset.
          const n = readSync(fd, chunk, 0, Math.min(chunk.length, len - done), toEnd ? null : start + done);
          if (n === 0 && toEnd) break;
          if (n === 0) return parentPort.postMessage({ id, error: 'short' });
          if (stopped && Atomics.load(stopped, 0) !== 0) return parentPort.postMessage({ id, error: 'stopped' });
          h.update(chunk.subarray(0, n));
          done += n;
        }
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      return parentPort.postMessage({ id, error: String(e && e.message), code: e && e.code });
    }
  }
  const md5 = h.digest();
  parentPort.postMessage({ id, md5 }, [md5.buffer]);
});`;

/** Below this, posting to a worker costs more than hashing here. */
const INLINE_BELOW = 256 * 1024;

interface Pending {
  resolve(md5: Buffer): void;
  reject(e: unknown): void;
}

let workers: { worker: Worker; busy: number }[] | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;

function pool() {
  if (!workers) {
    const size = Math.max(1, Math.min(4, availableParallelism() - 1));
    workers = Array.from({ length: size }, () => {
      const worker = new Worker(SOURCE, { eval: true });
      const entry = { worker, busy: 0 };
      worker.on('message', ({ id, md5, error, code }: { id: number; md5?: Uint8Array; error?: string; code?: string }) => {
        if (--entry.busy === 0) worker.unref();
        const p = pending.get(id);
        pending.delete(id);
        if (md5) p?.resolve(Buffer.from(md5.buffer, md5.byteOffset, md5.byteLength));
        else p?.reject(code ? Object.assign(new Error(error), { code }) : error);
      });
      worker.on('error', (e) => {
        for (const p of pending.values()) p.reject(e);
        pending.clear();
        workers = undefined;
      });
      // After the listeners (adding one re-references the worker): an idle pool never keeps the
      // process alive; a busy worker does, until its answer is in.
      worker.unref();
      return entry;
    });
  }
  return workers;
}

export async function md5Of(data: Buffer): Promise<Buffer> {
  if (data.length < INLINE_BELOW) {
    const { createHash } = await import('node:crypto');
    return createHash('md5').update(data).digest();
  }
  const shared = data.buffer instanceof SharedArrayBuffer;
  const buf = shared ? data.buffer : new Uint8Array(data).buffer;
  return post({ buf, off: shared ? data.byteOffset : 0, len: data.length }, shared ? [] : [buf as ArrayBuffer]);
}

/**
 * MD5 of a range of a file, read and hashed by the worker (1 MiB at a time): a part sent
 * straight from disk is hashed without being held in memory or hashed on the event loop.
 */
export async function md5OfFilePart(part: FilePart): Promise<Buffer> {
  try {
    return await post({ path: part.path, start: part.start, len: part.length }, []);
  } catch (e) {
    if (e === 'short') throw new ServiceError('conflict', `"${part.path}" became shorter during the upload.`);
    throw new ServiceError('internal_error', `"${part.path}" could not be read: ${String(e)}`);
  }
}

/**
 * MD5 of a whole file as it is when read (to its end, whatever size it had when it was looked
 * at), read and hashed by the worker. File system errors keep their `code` (ENOENT…). `signal`
 * stops the reading between two 1 MiB reads (the hash is not needed after all); the promise
 * then rejects with the signal's reason.
 */
export async function md5OfWholeFile(path: string, signal?: AbortSignal): Promise<Buffer> {
  signal?.throwIfAborted();
  // A flag the worker reads between reads: its loop never returns to take a message.
  const stop = signal ? new SharedArrayBuffer(4) : undefined;
  const raise = () => Atomics.store(new Int32Array(stop!), 0, 1);
  signal?.addEventListener('abort', raise, { once: true });
  try {
    return await post({ path, start: 0, len: Number.MAX_SAFE_INTEGER, toEnd: true, stop }, []);
  } catch (e) {
    if (e === 'stopped') throw signal!.reason;
    throw e;
  } finally {
    signal?.removeEventListener('abort', raise);
  }
}

function post(message: Record<string, unknown>, transfer: ArrayBuffer[]): Promise<Buffer> {
  const entry = pool().reduce((a, b) => (b.busy < a.busy ? b : a));
  const id = nextId++;
  return new Promise<Buffer>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    if (entry.busy++ === 0) entry.worker.ref();
    entry.worker.postMessage({ id, ...message }, transfer);
  });
}
