// Transfers (docs/uploads.md: pause, resume, cancel, retry; large downloads streamed to disk
// and resumable with HTTP ranges), over real servers: uploads into moto (S3 multipart, whose
// ListParts / ListMultipartUploads show what is upstream) and downloads from s3rver (ranged GETs).
// Pausing keeps the confirmed parts / the partial file, also across a restart of the app;
// resuming continues from them; cancelling a paused transfer drops them; a failed transfer is
// retried from what it kept.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { partialPath } from '../../src-main/downloads/downloader';
import { Uploader } from '../../src-main/uploads/uploader';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;
let moto: S3Server;
let s3: S3Server;
let work: string;

beforeAll(async () => {
  [moto, s3] = await Promise.all([startMoto('pause-resume'), startS3rver('pause-resume')]);
  work = scratchDir('pause-resume');
}, 60_000);

afterAll(async () => {
  await Promise.all([moto?.stop(), s3?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Bytes of a download's partial file so far. */
const onDisk = (target: string) => (existsSync(partialPath(target)) ? statSync(partialPath(target)).size : 0);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function bytes(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Resolves when `check` holds for the transfer with this id (polled; progress is continuous). */
async function until(app: App, id: string, check: (t: ReturnType<App['transfers']['list']>[number]) => boolean): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const t = app.transfers.list().find((x) => x.id === id);
    if (t && check(t)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`transfer ${id} never reached the expected state: ${JSON.stringify(app.transfers.list().find((x) => x.id === id))}`);
}

function upstreamUploads(server: S3Server) {
  const c = new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey } });
  return c.send(new ListMultipartUploadsCommand({ Bucket: server.bucket })).then((r) => r.Uploads ?? []).finally(() => c.destroy());
}

describe('pausing and resuming an upload (spec 1, Multipart upload)', () => {
  it('pause keeps the confirmed parts, survives a restart of the app, and resume sends only the rest: byte-identical', async () => {
    const dataDir = join(work, 'up-data');
    const data = randomBytes(40 * MiB + 11);
    const local = join(work, 'paused upload.bin');
    writeFileSync(local, data);
    const sent: number[] = [];
    let app = await createApp({ dataDir, defaultLocalFolder: false, uploads: { concurrency: { s3: 1 }, bandwidthLimit: 16 * MiB, onPart: (_j, n) => sent.push(n) } });
    const account = (await app.accounts.connect({ service: 's3', options: moto.options })).id;
    const jobId = await app.uploads.uploader.plan({ accountId: account, parentId: 'root', localPath: local });
    const upload = app.uploads.uploader.resume(jobId);
    const id = `upload-${jobId}`;
    await until(app, id, () => sent.length >= 2);
    expect(app.transfers.list().find((t) => t.id === id)!.actions).toEqual(['pause', 'cancel']);
    app.transfers.pause(id);
    await expect(upload).rejects.toThrow(/Paused/);
    const paused = app.transfers.list().find((t) => t.id === id)!;
    expect(paused).toMatchObject({ state: 'paused', finishedAt: null, actions: ['resume', 'cancel'], speed: 0 });
    expect(app.db.prepare('SELECT state FROM upload_jobs WHERE id = ?').get(jobId)).toEqual({ state: 'paused' });
    const confirmed = [...sent];
    // The upload is still open upstream, with its parts; no object yet.
    expect((await upstreamUploads(moto)).map((u) => u.Key)).toContain('paused upload.bin');
    expect((await app.storage.list(account, 'root')).items.map((r) => r.name)).not.toContain('paused upload.bin');

    // A restart does not resume a paused upload: it is listed, paused, with what it kept.
    await app.close();
    app = await createApp({ dataDir, defaultLocalFolder: false, uploads: { concurrency: { s3: 2 }, onPart: (_j, n) => sent.push(n) } });
    await app.uploads.resumed;
    const listed = app.transfers.list().find((t) => t.id === id)!;
    expect(listed).toMatchObject({ state: 'paused', name: 'paused upload.bin', bytesTotal: data.length, actions: ['resume', 'cancel'] });
    const partSize = (app.db.prepare('SELECT part_size FROM multipart_sessions').get() as { part_size: number }).part_size;
    expect(listed.bytesDone).toBe(confirmed.length * partSize);

    app.transfers.resume(id);
    await until(app, id, (t) => t.state === 'done');
    const after = sent.slice(confirmed.length);
    // Only the parts not confirmed before the pause went up after it.
    expect(after.filter((n) => confirmed.includes(n))).toEqual([]);
    expect(new Set([...confirmed, ...after]).size).toBe(Math.ceil(data.length / partSize));
    const file = (await app.storage.list(account, 'root')).items.find((r) => r.name === 'paused upload.bin')!;
    expect(sha(await bytes((await app.storage.download(account, file.id)).stream))).toBe(sha(data));
    expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'done', bytesDone: data.length, actions: [] });
    await app.close();
  }, 120_000);

  it('cancelling a paused upload aborts its multipart upload upstream', async () => {
    const app = await createApp({ dataDir: join(work, 'cancel-data'), defaultLocalFolder: false, uploads: { concurrency: { s3: 1 }, bandwidthLimit: 16 * MiB } });
    try {
      const account = (await app.accounts.connect({ service: 's3', options: moto.options })).id;
      const local = join(work, 'cancel-me.bin');
      writeFileSync(local, randomBytes(24 * MiB));
      let part!: () => void;
      const first = new Promise<void>((r) => (part = r));
      const uploader = new Uploader(app, app.uploads.multipart, { concurrency: { s3: 1 }, bandwidthLimit: 16 * MiB, onPart: () => part() });
      const upload = uploader.upload({ accountId: account, parentId: 'root', localPath: local });
      await first;
      const id = app.transfers.list().find((t) => t.name === 'cancel-me.bin')!.id;
      app.transfers.pause(id);
      await expect(upload).rejects.toThrow(/Paused/);
      expect((await upstreamUploads(moto)).map((u) => u.Key)).toContain('cancel-me.bin');
      await app.transfers.cancel(id);
      expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'cancelled', actions: [] });
      expect((await upstreamUploads(moto)).map((u) => u.Key)).not.toContain('cancel-me.bin');
      expect(app.db.prepare("SELECT state FROM upload_jobs WHERE name = 'cancel-me.bin'").get()).toEqual({ state: 'cancelled' });
      expect(() => app.transfers.resume(id)).toThrow(/Only a paused transfer/);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a failed upload offers retry, which continues from the confirmed parts once the server is back', async () => {
    const app = await createApp({ dataDir: join(work, 'retry-data'), defaultLocalFolder: false, uploads: { concurrency: { s3: 1 }, bandwidthLimit: 16 * MiB, retry: { windowMs: 1500, maxDelayMs: 300 } } });
    try {
      const account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
      const data = randomBytes(30 * MiB + 5);
      const local = join(work, 'retry-me.bin');
      writeFileSync(local, data);
      const jobId = await app.uploads.uploader.plan({ accountId: account, parentId: 'root', localPath: local });
      const upload = app.uploads.uploader.resume(jobId);
      const id = `upload-${jobId}`;
      await until(app, id, (t) => t.bytesDone >= 8 * MiB);
      await s3.pause();
      await expect(upload).rejects.toThrow(/not reachable|ECONNREFUSED|service/i);
      const failed = app.transfers.list().find((t) => t.id === id)!;
      expect(failed).toMatchObject({ state: 'failed', actions: ['retry'] });
      expect(failed.error).toMatch(/Part \d+/);
      await s3.resume();
      app.transfers.retry(id);
      await until(app, id, (t) => t.state === 'done');
      const file = (await app.storage.list(account, 'root')).items.find((r) => r.name === 'retry-me.bin')!;
      expect(sha(await bytes((await app.storage.download(account, file.id)).stream))).toBe(sha(data));
      expect(() => app.transfers.retry(id)).toThrow(/Only a failed/);
    } finally {
      await app.close();
    }
  }, 90_000);
});

describe('resumable downloads to disk (spec 1, Files: Download with byte ranges)', () => {
  async function seed(app: App, account: number, name: string, data: Buffer) {
    return app.storage.upload(account, 'root', name, Readable.from([data]), { conflict: 'overwrite', size: data.length });
  }

  it('pause keeps the partial file, a restart lists it paused, and resume fetches only the rest: byte-identical', async () => {
    const dataDir = join(work, 'down-data');
    let app = await createApp({ dataDir, defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
    const data = randomBytes(64 * MiB + 3);
    const file = await seed(app, account, 'big download.bin', data);
    const target = join(work, 'big download.bin');
    const job = await app.downloads.plan({ accountId: account, fileId: file.id, targetPath: target });
    const id = `download-${job}`;
    const run = app.downloads.resume(job);
    await until(app, id, () => onDisk(target) > 0);
    app.transfers.pause(id);
    await expect(run).rejects.toThrow(/Paused/);
    expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'paused', actions: ['resume', 'cancel'], bytesDone: onDisk(target) });
    expect(existsSync(target)).toBe(false);
    const kept = statSync(partialPath(target)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(data.length);
    await app.close();

    app = await createApp({ dataDir, defaultLocalFolder: false });
    await app.downloads.resumed;
    expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'paused', bytesDone: kept, bytesTotal: data.length });
    // Mark the kept prefix: a download that fetched the whole file again would overwrite it.
    const fd = readFileSync(partialPath(target));
    fd[0] ^= 0xff;
    writeFileSync(partialPath(target), fd);
    app.transfers.resume(id);
    await until(app, id, (t) => t.state === 'done');
    const got = readFileSync(target);
    expect(got.length).toBe(data.length);
    expect(got[0]).toBe(data[0] ^ 0xff);
    expect(sha(got.subarray(1))).toBe(sha(data.subarray(1)));
    expect(existsSync(partialPath(target))).toBe(false);
    await app.close();
  }, 120_000);

  it('a file that changed while paused is fetched again from the start, byte-identical to the new version', async () => {
    const app = await createApp({ dataDir: join(work, 'changed-data'), defaultLocalFolder: false });
    try {
      const account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
      const v1 = randomBytes(48 * MiB);
      const file = await seed(app, account, 'changes.bin', v1);
      const target = join(work, 'changes.bin');
      const job = await app.downloads.plan({ accountId: account, fileId: file.id, targetPath: target });
      const id = `download-${job}`;
      const run = app.downloads.resume(job);
      await until(app, id, (t) => t.bytesDone > 0);
      app.transfers.pause(id);
      await expect(run).rejects.toThrow(/Paused/);
      const v2 = randomBytes(40 * MiB + 1);
      await seed(app, account, 'changes.bin', v2);
      app.transfers.resume(id);
      await until(app, id, (t) => t.state === 'done');
      expect(sha(readFileSync(target))).toBe(sha(v2));
    } finally {
      await app.close();
    }
  }, 90_000);

  it('cancelling a paused download removes the partial file; a server that stays away fails it with retry offered', async () => {
    const app = await createApp({ dataDir: join(work, 'down-fail'), defaultLocalFolder: false, downloads: { retry: { windowMs: 1000, maxDelayMs: 200 } } });
    try {
      const account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
      const data = randomBytes(48 * MiB);
      const file = await seed(app, account, 'flaky.bin', data);
      const target = join(work, 'flaky.bin');
      const job = await app.downloads.plan({ accountId: account, fileId: file.id, targetPath: target });
      const id = `download-${job}`;
      const run = app.downloads.resume(job);
      await until(app, id, (t) => t.bytesDone > 0);
      app.transfers.pause(id);
      await expect(run).rejects.toThrow(/Paused/);
      await s3.pause();
      app.transfers.resume(id);
      await until(app, id, (t) => t.state === 'failed');
      expect(app.transfers.list().find((t) => t.id === id)).toMatchObject({ state: 'failed', actions: ['retry'] });
      expect(existsSync(partialPath(target))).toBe(true);
      await s3.resume();
      app.transfers.retry(id);
      await until(app, id, (t) => t.state === 'done');
      expect(sha(readFileSync(target))).toBe(sha(data));

      // And a second one, cancelled while paused: nothing is left on disk.
      const other = join(work, 'flaky-2.bin');
      const job2 = await app.downloads.plan({ accountId: account, fileId: file.id, targetPath: other });
      const run2 = app.downloads.resume(job2);
      await until(app, `download-${job2}`, (t) => t.bytesDone > 0);
      app.transfers.pause(`download-${job2}`);
      await expect(run2).rejects.toThrow(/Paused/);
      await app.transfers.cancel(`download-${job2}`);
      expect(existsSync(partialPath(other))).toBe(false);
      expect(existsSync(other)).toBe(false);
      expect(app.downloads.job(job2).state).toBe('cancelled');
    } finally {
      await app.close();
    }
  }, 120_000);
});
