// Parts sent straight from the file (spec 1, Multipart upload): where the backend's writer reads
// a part by range (S3 UploadPart, Azure stage block), the uploader holds no part in memory, so its
// memory budget no longer bounds the parts in flight; the file still arrives byte-identical, each
// part checked by its Content-MD5, and the SDK's own retry of a part sends the whole part again.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import { readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { FilePart } from '../../src-main/connectors/types';
import { S3Connector } from '../../src-main/connectors/s3';
import { MultipartService } from '../../src-main/uploads/multipart';
import { Uploader } from '../../src-main/uploads/uploader';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

/** The multipart service, counting the file parts being sent at once. */
class Counting extends MultipartService {
  inFlight = 0;
  most = 0;
  fileParts = 0;
  override async putFilePart(accountId: number, id: number, partNumber: number, part: FilePart, signal?: AbortSignal) {
    this.fileParts++;
    this.most = Math.max(this.most, ++this.inFlight);
    try {
      return await super.putFilePart(accountId, id, partNumber, part, signal);
    } finally {
      this.inFlight--;
    }
  }
}

let s3rver: S3Server;
let moto: S3Server;
let azurite: AzuriteServer;
let work: string;
let app: App;
let file: string;
const data = randomBytes(5 * 8 * MiB + 5); // six 8 MiB parts, the last one 5 bytes
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  [s3rver, moto, azurite] = await Promise.all([startS3rver(), startMoto(), startAzurite()]);
  work = scratchDir('file-parts');
  file = join(work, 'big.bin');
  writeFileSync(file, data);
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
});

afterAll(async () => {
  await app?.close();
  await Promise.all([s3rver?.stop(), moto?.stop(), azurite?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

async function download(account: number, id: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of (await app.storage.download(account, id)).stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('uploader: parts straight from the file (spec 1, Multipart upload)', () => {
  it.each(['s3rver', 'moto', 'azurite'] as const)(
    'to %s: byte-identical, with more 8 MiB parts in flight than an 8 MiB memory budget holds buffered',
    async (target) => {
      const service = target === 'azurite' ? 'azure' : 's3';
      const options = target === 's3rver' ? s3rver.options : target === 'moto' ? moto.options : azurite.options;
      const account = (await app.accounts.connect({ service, options })).id;
      const multipart = new Counting(app);
      // An 8 MiB budget allows one buffered 8 MiB part at a time; parts read from the file by
      // range are not buffered, so the concurrency asked for is what goes.
      const uploader = new Uploader(app, multipart, { concurrency: { [service]: 4 }, memoryBudget: 8 * MiB });
      const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name: `${target}.bin` });
      expect(resource.size).toBe(data.length);
      expect(sha(await download(account, resource.id))).toBe(sha(data));
      expect(multipart.fileParts).toBe(6);
      expect(multipart.most).toBeGreaterThan(1);
      expect(multipart.most).toBeLessThanOrEqual(4);
      const verified = { s3rver: 'md5', moto: 'multipart-etag', azurite: 'size' }[target];
      expect(app.db.prepare('SELECT verified FROM upload_jobs WHERE result_id = ?').get(resource.id)).toEqual({ verified });
    },
  );

  it('holds far less than the parts in flight in memory (five 8 MiB parts at once to s3rver)', async () => {
    const account = (await app.accounts.connect({ service: 's3', options: s3rver.options })).id;
    const big = join(work, 'big64.bin');
    const content = randomBytes(40 * MiB);
    writeFileSync(big, content);
    // What is held while parts are in flight, not what the collector has yet to take back: a
    // full GC, then a sample, each time a part is confirmed (the others still going).
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage().arrayBuffers;
    const held: number[] = [];
    const onPart = () => {
      gc();
      held.push((process.memoryUsage().arrayBuffers - before) / MiB);
    };
    const uploader = new Uploader(app, new MultipartService(app), { concurrency: { s3: 8 }, memoryBudget: 64 * MiB, onPart });
    const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: big, name: 'held.bin' });
    expect(sha(await download(account, resource.id))).toBe(sha(content));
    // Buffered, the five 8 MiB parts are 40 MiB held until the last is confirmed; from the file
    // each part holds a read chunk or two on its way to the socket. (The median: a moment's
    // spike of what a socket or the SDK holds is not what the parts hold.)
    expect(held).toHaveLength(5);
    const median = [...held].sort((x, y) => x - y)[2]!;
    expect(median).toBeLessThan(8);
  });

  it('a file part whose range lies past the end of the file is refused as a conflict (the file changed)', async () => {
    const s3 = new S3Connector(moto.options);
    try {
      const writer = await s3.features.openChunkWriter!('/short.bin', { size: 16 * MiB, partSize: 8 * MiB });
      onTestFinished(() => writer.abort());
      await expect(writer.writeFilePart!(2, { path: file, start: data.length - 4, length: 8 * MiB })).rejects.toMatchObject({ code: 'conflict' });
    } finally {
      await s3.close();
    }
  });
});

/**
 * A proxy in front of s3rver that answers the first UploadPart it sees with 503 SlowDown after
 * reading its whole body, as a busy S3 does; everything else goes through.
 */
async function slowDownOnce(target: string): Promise<{ server: Server; endpoint: string; partRequests: () => number[] }> {
  const upstream = new URL(target);
  const sizes: number[] = [];
  let refused = false;
  const server = createServer((req, res) => {
    const isPart = req.method === 'PUT' && /[?&]partNumber=/.test(req.url ?? '');
    if (isPart && !refused) {
      refused = true;
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => {
        sizes.push(n);
        res.writeHead(503, { 'content-type': 'application/xml' });
        res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>');
      });
      return;
    }
    let n = 0;
    if (isPart) req.on('data', (c: Buffer) => (n += c.length));
    const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (isPart) sizes.push(n);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, partRequests: () => sizes };
}

describe('uploader: a part from the file refused by S3 is sent again whole (spec 1, Multipart upload)', () => {
  it('503 SlowDown on the first part: the part goes again in full, and the object is byte-identical', async () => {
    const proxy = await slowDownOnce(s3rver.endpoint);
    try {
      const account = (await app.accounts.connect({ service: 's3', options: { ...s3rver.options, endpoint: proxy.endpoint } })).id;
      const uploader = new Uploader(app, new MultipartService(app), { concurrency: { s3: 1 }, retry: { baseMs: 10 } });
      const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name: 'retried.bin' });
      // Part 1 twice (refused, then again in full), then the other five once each.
      expect(proxy.partRequests()).toEqual([8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB, 5]);
      expect(sha(await download(account, resource.id))).toBe(sha(data));
    } finally {
      proxy.server.close();
    }
  });
});

/** Whether this process has `path` open with its file position moved: a sequential read under way. */
function readingInSequence(path: string): boolean {
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) !== path) continue;
      // Parts are read by position (pread), which leaves the file position at 0.
      if (Number(/^pos:\s+(\d+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1]) > 0) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

/**
 * A proxy in front of s3rver that holds CompleteMultipartUpload until `release` is called (or
 * `until` returns true, checked every few milliseconds), and records what `until` answered.
 */
async function holdComplete(target: string, until: () => boolean): Promise<{ server: Server; endpoint: string; seen: () => boolean | undefined }> {
  const upstream = new URL(target);
  let seen: boolean | undefined;
  const server = createServer((req, res) => {
    const forward = () => {
      const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (req.method !== 'POST' || !/[?&]uploadId=/.test(req.url ?? '')) return forward();
    req.pause();
    let checks = 0;
    const timer = setInterval(() => {
      const now = until();
      if (!now && ++checks < 2000) return;
      clearInterval(timer);
      seen = now;
      req.resume();
      forward();
    }, 5);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen: () => seen };
}

describe('uploader: the whole-file check on S3 (spec 1, Multipart upload)', () => {
  it('s3rver (a whole-file MD5 for the assembled object): the file is hashed while the server completes, and the check still holds', async () => {
    // Until the file is seen being read in sequence (the whole-file hash), or for 10 s.
    const proxy = await holdComplete(s3rver.endpoint, () => readingInSequence(realpathSync(file)));
    try {
      const account = (await app.accounts.connect({ service: 's3', options: { ...s3rver.options, endpoint: proxy.endpoint } })).id;
      const uploader = new Uploader(app, new MultipartService(app), { concurrency: { s3: 4 } });
      const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name: 'hashed-early.bin' });
      expect(proxy.seen()).toBe(true);
      expect(app.db.prepare('SELECT verified FROM upload_jobs WHERE result_id = ?').get(resource.id)).toEqual({ verified: 'md5' });
      expect(sha(await download(account, resource.id))).toBe(sha(data));
    } finally {
      proxy.server.close();
    }
  });
});

describe('uploader: no whole-file hash where the server gives a multipart ETag (spec 1, Multipart upload)', () => {
  it('moto (multipart ETags): after the first upload to the account, the file is not read again while the upload completes', async () => {
    let reading = false;
    // Held for 1 s each time, noting any sequential read of the file meanwhile.
    let checks = 0;
    const proxy = await holdComplete(moto.endpoint, () => {
      reading ||= readingInSequence(realpathSync(file));
      return ++checks % 200 === 0;
    });
    try {
      const account = (await app.accounts.connect({ service: 's3', options: { ...moto.options, endpoint: proxy.endpoint } })).id;
      const uploader = new Uploader(app, new MultipartService(app), { concurrency: { s3: 4 } });
      await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name: 'first.bin' });
      // The first upload does not know the server yet and hashes while it completes.
      expect(reading).toBe(true);
      reading = false;
      const second = await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name: 'second.bin' });
      expect(reading).toBe(false);
      expect(app.db.prepare('SELECT verified FROM upload_jobs WHERE result_id = ?').get(second.id)).toEqual({ verified: 'multipart-etag' });
    } finally {
      proxy.server.close();
    }
  });
});
