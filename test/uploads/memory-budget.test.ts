// The uploader's buffered parts in flight are capped by its memory budget (docs/uploads.md, "The
// uploader"): parts × part size stays within it whatever concurrency is asked for, and the file
// still arrives byte-identical (spec 1, Multipart upload). Parts are buffered where they cannot go
// straight from the file: here a paced upload (a bandwidth limit, far above what is reached) to S3.
import { createHash, randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { MultipartService } from '../../src-main/uploads/multipart';
import { Uploader } from '../../src-main/uploads/uploader';
import { startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

/** The multipart service, counting the parts being sent at once. */
class Counting extends MultipartService {
  inFlight = 0;
  most = 0;
  override async putPart(accountId: number, id: number, partNumber: number, body: Readable, length?: number, signal?: AbortSignal) {
    this.most = Math.max(this.most, ++this.inFlight);
    try {
      return await super.putPart(accountId, id, partNumber, body, length, signal);
    } finally {
      this.inFlight--;
    }
  }
}

let s3: S3Server;
let app: App;
let work: string;
let account: number;
let file: string;
const data = randomBytes(6 * 8 * MiB + 1); // seven 8 MiB parts
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  s3 = await startS3rver();
  work = scratchDir('memory-budget');
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
  file = join(work, 'big.bin');
  writeFileSync(file, data);
});

afterAll(async () => {
  await app?.close();
  await s3?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Uploads the file (8 MiB parts: S3's size for it); the most parts at once, and the content's hash. */
async function uploadWith(name: string, memoryBudget?: number): Promise<{ most: number; sha: string }> {
  const multipart = new Counting(app);
  const uploader = new Uploader(app, multipart, { concurrency: { s3: 8 }, memoryBudget, bandwidthLimit: 4096 * MiB });
  const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name });
  const chunks: Buffer[] = [];
  for await (const c of (await app.storage.download(account, resource.id)).stream) chunks.push(c as Buffer);
  return { most: multipart.most, sha: sha(Buffer.concat(chunks)) };
}

describe('uploader memory budget', () => {
  it('by default at most 32 MiB of parts are in flight though 8 at once are asked for', async () => {
    const r = await uploadWith('default.bin');
    expect(r.sha).toBe(sha(data));
    expect(r.most).toBeGreaterThan(1);
    expect(r.most * 8 * MiB).toBeLessThanOrEqual(32 * MiB);
  });

  it('another budget sends more or fewer parts at once; below one part, one part at a time', async () => {
    const small = await uploadWith('small.bin', 8 * MiB);
    expect(small.sha).toBe(sha(data));
    expect(small.most).toBe(1);
    const tiny = await uploadWith('tiny.bin', 1 * MiB);
    expect(tiny.sha).toBe(sha(data));
    expect(tiny.most).toBe(1);
    const roomy = await uploadWith('roomy.bin', 64 * MiB);
    expect(roomy.sha).toBe(sha(data));
    expect(roomy.most).toBeGreaterThan(2);
  });
});
