/**
 * WebDAV downloads into a file straight from the socket (connector feature `readToFile`, used by
 * the downloader), against a real Apache mod_dav_fs: whole and ranged reads byte-identical
 * (spec 1, Files: "Download a file", byte ranges), and a server that dies mid-transfer is an
 * error, never a short file taken for the whole one (spec 1, Errors: service_not_available).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, rmSync, statSync, writeFileSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { WebDavConnector } from '../../src-main/connectors/webdav';
import { options as webdavSchema } from '../../src-main/connectors/webdav/options';
import { partialPath } from '../../src-main/downloads/downloader';
import type { StorageFeatures } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { scratchDir, until } from '../servers/util';
import { startRest, type RestServer } from '../rest/harness';
import { readRangesContract } from './read-to-file-contract';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('WebDAV readToFile against Apache (spec 1, Files: Download a file)', () => {
  let apache: ApacheServer;
  let dav: WebDavConnector;
  let work: string;
  /** Several of the connector's 1 MiB buffers, and an odd length. */
  const data = randomBytes(12 * MiB + 5);

  beforeAll(async () => {
    apache = await startApache();
    dav = new WebDavConnector(webdavSchema.parse(webdavOptions(apache)));
    work = scratchDir('dav-to-file');
    apache.place('data.bin', data);
    apache.place('empty.bin', Buffer.alloc(0));
  });

  afterAll(async () => {
    await dav?.close();
    await apache?.stop();
  });

  it('writes the whole file byte-identical and counts every byte', async () => {
    const target = join(work, 'whole.bin');
    writeFileSync(target, 'old content, longer than nothing'); // start 0 makes a new file
    let counted = 0;
    const n = await dav.features.readToFile!('/data.bin', target, { onBytes: (b) => (counted += b) });
    expect(n).toBe(data.length);
    expect(counted).toBe(data.length);
    expect(sha(readFileSync(target))).toBe(sha(data));
  });

  it('continues a partial file from an offset (HTTP Range), byte-identical, prefix untouched', async () => {
    for (const start of [1, 3 * MiB + 7, data.length - 1]) {
      const target = join(work, `ranged-${start}.bin`);
      const prefix = Buffer.from(data.subarray(0, start));
      prefix[0] ^= 0xff; // a marker: a download that fetched from 0 would overwrite it
      writeFileSync(target, prefix);
      const n = await dav.features.readToFile!('/data.bin', target, { start });
      expect(n).toBe(data.length - start);
      const got = readFileSync(target);
      expect(got.length).toBe(data.length);
      expect(got[0]).toBe(data[0]! ^ 0xff);
      expect(sha(got.subarray(1))).toBe(sha(data.subarray(1)));
    }
  });

  readRangesContract(() => ({ c: dav, work, data }));

  it('a server that answers a range with the whole file: null, nothing written (the caller reads it whole)', async () => {
    const plain = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': data.length });
      res.end(data);
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const noRanges = new WebDavConnector(webdavSchema.parse({ ...webdavOptions(apache), port: (plain.address() as AddressInfo).port }));
    try {
      const target = join(work, 'no-ranges.bin');
      writeFileSync(target, 'kept');
      expect(await noRanges.features.readToFile!('/data.bin', target, { start: 0, end: MiB })).toBeNull();
      expect(readFileSync(target, 'utf8')).toBe('kept');
    } finally {
      await noRanges.close();
      plain.close();
    }
  });

  it('an empty file gives an empty file; a missing one or a folder the same error as a streamed read (spec 1, Errors)', async () => {
    const target = join(work, 'empty.bin');
    expect(await dav.features.readToFile!('/empty.bin', target)).toBe(0);
    expect(statSync(target).size).toBe(0);
    await expect(dav.features.readToFile!('/missing.bin', join(work, 'missing.bin'))).rejects.toMatchObject({ code: 'not_found' });
    expect(existsSync(join(work, 'missing.bin'))).toBe(false);
    // A folder: the same answer as a streamed read (Apache without mod_dir answers 404).
    await dav.mkdir('/folder');
    const streamed = await dav.read('/folder').then(() => 'read', (e: ServiceError) => e.code);
    expect(streamed).not.toBe('read');
    await expect(dav.features.readToFile!('/folder', join(work, 'folder.bin'))).rejects.toMatchObject({ code: streamed });
  });

  it('a cancelled read stops and rejects', async () => {
    const ac = new AbortController();
    const target = join(work, 'cancelled.bin');
    const run = dav.features.readToFile!('/data.bin', target, { signal: ac.signal, onBytes: () => ac.abort() });
    await expect(run).rejects.toBeInstanceOf(ServiceError);
    expect(statSync(target).size).toBeLessThan(data.length);
  });

  it('a server killed mid-transfer is service_not_available, with fewer bytes on disk than the file has', async () => {
    const big = randomBytes(48 * MiB);
    apache.place('big.bin', big);
    const target = join(work, 'killed.bin');
    let killing: Promise<void> | undefined;
    const run = dav.features.readToFile!('/big.bin', target, { onBytes: () => void (killing ??= apache.kill()) });
    await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
    await killing;
    expect(statSync(target).size).toBeLessThan(big.length);
    await apache.restart();
  });
});

describe('WebDAV streamed reads of big files off their own socket (spec 1, Files: Download a file)', () => {
  let apache: ApacheServer;
  let dav: WebDavConnector;
  let work: string;
  const data = randomBytes(20 * MiB + 3);

  async function drain(stream: NodeJS.ReadableStream): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  beforeAll(async () => {
    apache = await startApache();
    dav = new WebDavConnector(webdavSchema.parse(webdavOptions(apache)));
    work = scratchDir('dav-streamed');
    apache.place('data.bin', data);
  });

  afterAll(async () => {
    await dav?.close();
    await apache?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Reads a stream by its 'data' events (an async iterator would join chunks), falling behind every `pauseEvery` chunks. */
  function chunksOf(stream: NodeJS.ReadableStream, pauseEvery = 0): Promise<Buffer[]> {
    const chunks: Buffer[] = [];
    return new Promise<Buffer[]>((resolve, reject) => {
      stream.on('data', (c: Buffer) => {
        chunks.push(c);
        if (pauseEvery && chunks.length % pauseEvery === 0) {
          stream.pause();
          setTimeout(() => stream.resume(), 20);
        }
      });
      stream.on('end', () => resolve(chunks));
      stream.on('error', reject);
    });
  }

  it('a read told the size comes in large chunks, byte-identical', async () => {
    const chunks = await chunksOf(await dav.read('/data.bin', { size: data.length }));
    expect(sha(Buffer.concat(chunks))).toBe(sha(data));
    // Node's own socket reads (undici's) hand on 64 KiB at a time.
    expect(Math.max(...chunks.map((c) => c.length))).toBeGreaterThan(64 * 1024);
  });

  it('a consumer that falls behind pauses the reading and still gets every byte', async () => {
    const chunks = await chunksOf(await dav.read('/data.bin', { size: data.length }), 3);
    expect(sha(Buffer.concat(chunks))).toBe(sha(data));
  });

  it('ranged reads (start, start-end, the last byte) are byte-identical, read or piped into a file', async () => {
    for (const [start, end] of [[5, undefined], [MiB + 1, 9 * MiB], [data.length - 1, undefined]] as const) {
      const want = sha(data.subarray(start, end === undefined ? undefined : end + 1));
      expect(sha(await drain(await dav.read('/data.bin', { start, end, size: data.length })))).toBe(want);
      const target = join(work, 'ranged.bin');
      await pipeline(await dav.read('/data.bin', { start, end, size: data.length }), createWriteStream(target));
      expect(sha(readFileSync(target))).toBe(want);
    }
  });

  /** A file stream that records the memory behind every chunk written into it. */
  function recordingFile(target: string, onWrite?: (out: WriteStream, writes: number) => void): { out: WriteStream; buffers: Set<ArrayBufferLike> } {
    const out = createWriteStream(target);
    const buffers = new Set<ArrayBufferLike>();
    const write = out.write.bind(out) as (...a: unknown[]) => boolean;
    out.write = ((chunk: Buffer, ...rest: unknown[]) => {
      buffers.add(chunk.buffer);
      const more = write(chunk, ...rest);
      onWrite?.(out, buffers.size);
      return more;
    }) as WriteStream['write'];
    return { out, buffers };
  }

  it('piped into a file, the body is written from a few reused buffers, byte-identical', async () => {
    const target = join(work, 'piped.bin');
    const { out, buffers } = recordingFile(target);
    await pipeline(await dav.read('/data.bin', { size: data.length }), out);
    expect(sha(readFileSync(target))).toBe(sha(data));
    // 20 MiB: the four 1 MiB buffers the socket reads into, plus the bytes that came with the head
    // (a stream's consumer may keep its chunks, so a plain read takes a fresh buffer per read).
    expect(buffers.size).toBeLessThanOrEqual(5);
  });

  it('a sink that closes before the end stops the piped download: the stream closes, nothing is thrown', async () => {
    const stream = (await dav.read('/data.bin', { size: data.length })) as Readable;
    const { out } = recordingFile(join(work, 'closed.bin'), (o, writes) => {
      if (writes === 2) o.destroy();
    });
    // A file's 'close' comes once its descriptor is closed, here 300 ms after destroy(): the
    // download must stop at the destroy, not read on into a sink that is gone meanwhile.
    const destroy = out._destroy.bind(out);
    out._destroy = (err, cb) => void setTimeout(() => destroy(err, cb), 300);
    const errors: Error[] = [];
    stream.on('error', (e) => errors.push(e));
    stream.pipe(out);
    await once(stream, 'close');
    expect(stream.readableEnded).toBe(false);
    expect(errors).toEqual([]);
  });

  it('a server killed mid-stream fails a pipeline into a file, never a short file taken for whole', async () => {
    const big = randomBytes(64 * MiB);
    apache.place('big-piped.bin', big);
    const target = join(work, 'killed.bin');
    const { out } = recordingFile(target, () => void apache.kill());
    await expect(pipeline(await dav.read('/big-piped.bin', { size: big.length }), out)).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(statSync(target).size).toBeLessThan(big.length);
    await apache.restart();
  });

  it('REST download of a big file (spec 1, Files: Download a file): byte-identical, and a client leaving mid-way leaves the server serving', async () => {
    const rest: RestServer = await startRest();
    try {
      const acc = await rest.app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) });
      const file = (await rest.app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'data.bin')!;
      const url = `${rest.url}/v2/accounts/${acc.id}/storage/files/${file.id}/contents`;
      const headers = { authorization: `APIKey ${rest.apiKey}` };
      const left = await request(url, { headers });
      expect(left.statusCode).toBe(200);
      for await (const _ of left.body) break; // one chunk, then the client goes
      const whole = await rest.call('GET', `/v2/accounts/${acc.id}/storage/files/${file.id}/contents`);
      expect(whole.status).toBe(200);
      expect(Number(whole.headers['content-length'])).toBe(data.length);
      expect(sha(whole.buffer)).toBe(sha(data));
    } finally {
      await rest.stop();
    }
  });

  it('a missing file is not_found (spec 1, Errors)', async () => {
    await expect(dav.read('/missing.bin', { size: data.length })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a server killed mid-stream makes the stream fail, never end short', async () => {
    // Bigger than what the kernel's socket buffers hold, so the server is still sending when killed.
    const big = randomBytes(64 * MiB);
    apache.place('big.bin', big);
    const stream = await dav.read('/big.bin', { size: big.length });
    let got = 0;
    const read = (async () => {
      for await (const c of stream) {
        got += (c as Buffer).length;
        await apache.kill(); // once; later calls find nothing to kill
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await expect(read).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(got).toBeLessThan(big.length);
    await apache.restart();
  });
});

describe('desktop downloads from WebDAV into a file (spec 1, Files: Download with byte ranges)', () => {
  it('a server killed mid-download fails the download without a target file; retried after the restart it completes byte-identical', async () => {
    const apache = await startApache();
    const work = scratchDir('dav-download');
    const app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false, downloads: { retry: { windowMs: 1000, maxDelayMs: 200 } } });
    try {
      const data = randomBytes(48 * MiB + 1);
      apache.place('big.bin', data);
      const account = (await app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) })).id;
      const file = (await app.storage.list(account, 'root')).items.find((i) => i.name === 'big.bin')!;
      const target = join(work, 'big.bin');
      const job = await app.downloads.plan({ accountId: account, fileId: file.id, targetPath: target });
      const id = `download-${job}`;
      // The server dies as soon as the first bytes are on disk (the file would be done before a poll saw them).
      const { connector } = await app.storage.locate(account, file.id);
      const readToFile = connector.features.readToFile!;
      let killing: Promise<void> | undefined;
      (connector.features as StorageFeatures).readToFile = (path, into, o) =>
        readToFile(path, into, { ...o, onBytes: (n) => ((killing ??= apache.kill()), o?.onBytes?.(n)) });
      const run = app.downloads.resume(job);
      await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
      await killing;
      expect(statSync(partialPath(target)).size).toBeLessThan(data.length);
      expect(existsSync(target)).toBe(false);
      expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'failed', actions: ['retry'] });

      await apache.restart();
      app.transfers.retry(id);
      await until(() => (app.transfers.list().find((t) => t.id === id)?.state === 'done' ? true : undefined), 30_000, 'the retried download');
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(existsSync(partialPath(target))).toBe(false);
    } finally {
      await app.close();
      await apache.stop();
    }
  }, 90_000);
});
