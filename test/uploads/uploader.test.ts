// The client-side uploader over spec 1's multipart sessions (spec 1, Multipart upload): parallel
// parts from disk, progress through the transfers service, retries through a 10 s server outage,
// and a resume by a new process after the first one was SIGKILLed mid-way.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { Transfer } from '../../src-main/contract';
import { MultipartService } from '../../src-main/uploads/multipart';
import { Uploader } from '../../src-main/uploads/uploader';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;
const root = join(import.meta.dirname, '..', '..');

async function sha256(stream: AsyncIterable<unknown>): Promise<string> {
  const h = createHash('sha256');
  for await (const c of stream) h.update(c as Buffer);
  return h.digest('hex');
}

let s3: S3Server;
let moto: S3Server;
let azurite: AzuriteServer;
let work: string;

beforeAll(async () => {
  [s3, moto, azurite] = await Promise.all([startS3rver(), startMoto(), startAzurite()]);
  work = scratchDir('uploader');
});

afterAll(async () => {
  await Promise.all([s3?.stop(), moto?.stop(), azurite?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

function localFile(name: string, size: number): { path: string; sha: string } {
  const data = randomBytes(size);
  const path = join(work, name);
  writeFileSync(path, data);
  return { path, sha: createHash('sha256').update(data).digest('hex') };
}

async function newApp(dataDir: string): Promise<App> {
  return createApp({ dataDir, defaultLocalFolder: false });
}

describe('uploader', () => {
  // s3rver reports a plain MD5 of the whole file, moto S3's multipart ETag (md5 of part md5s):
  // the uploader checks whichever it gets.
  it.each(['s3', 's3-moto', 'azure'] as const)('uploads a 20 MiB file to %s in parallel parts, byte-identical, with progress', async (target) => {
    const dataDir = join(work, `data-${target}`);
    const app = await newApp(dataDir);
    const service = target === 'azure' ? 'azure' : 's3';
    try {
      const options = target === 's3' ? s3.options : target === 's3-moto' ? moto.options : azurite.options;
      const account = (await app.accounts.connect({ service, options })).id;
      const file = localFile(`twenty-${target}.bin`, 20 * MiB + 7);
      const updates: Transfer[] = [];
      app.events.on('transfers.updated', (t) => updates.push(t as Transfer));
      const uploader = new Uploader(app, new MultipartService(app));
      const resource = await uploader.upload({ accountId: account, parentId: 'root', localPath: file.path });
      expect(resource).toMatchObject({ name: `twenty-${target}.bin`, size: 20 * MiB + 7 });
      expect(await sha256((await app.storage.download(account, resource.id)).stream)).toBe(file.sha);
      const last = updates.at(-1)!;
      expect(last).toMatchObject({ direction: 'upload', state: 'done', bytesDone: 20 * MiB + 7, bytesTotal: 20 * MiB + 7 });
      expect(uploader.unfinished()).toEqual([]);
      // s3rver: whole-file MD5; moto: multipart ETag from the parts' MD5s; Azurite: none after a block commit.
      const verified = { s3: 'md5', 's3-moto': 'multipart-etag', azure: 'size' }[target];
      expect(app.db.prepare('SELECT verified FROM upload_jobs WHERE result_id = ?').get(resource.id)).toEqual({ verified });
      // At or below 5 MB: one standard upload, no session.
      const small = localFile(`small-${target}.bin`, MiB);
      const smallRes = await uploader.upload({ accountId: account, parentId: 'root', localPath: small.path });
      expect(await sha256((await app.storage.download(account, smallRes.id)).stream)).toBe(small.sha);
      expect(app.db.prepare('SELECT COUNT(*) AS n FROM multipart_sessions').get()).toEqual({ n: 0 });
    } finally {
      await app.close();
    }
  });

  it('waits through a 10 s S3 outage mid-upload, retries and completes byte-identical', async () => {
    const dataDir = join(work, 'data-outage');
    const app = await newApp(dataDir);
    try {
      const account = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
      const size = 48 * MiB + 3;
      const file = localFile('outage.bin', size);
      let confirmed = 0;
      let firstPart!: () => void;
      const started = new Promise<void>((r) => (firstPart = r));
      const uploader = new Uploader(app, new MultipartService(app), {
        concurrency: { s3: 2 },
        bandwidthLimit: 8 * MiB, // about 6 s without the outage, so the outage hits mid-way
        retry: { maxDelayMs: 2000 },
        onPart: () => (confirmed++, firstPart()),
      });
      const upload = uploader.upload({ accountId: account, parentId: 'root', localPath: file.path });
      let settled = false;
      upload.then(() => (settled = true), () => (settled = true));
      await started;
      await s3.pause();
      const atOutage = confirmed;
      await sleep(10_000);
      const duringOutage = confirmed - atOutage;
      // The upload neither finished nor gave up while the server was away: it waits.
      expect(settled).toBe(false);
      await s3.resume();
      const resource = await upload;
      // Nothing can be confirmed while the server is down (at most the parts already answered).
      expect(duringOutage).toBeLessThanOrEqual(2);
      expect(atOutage).toBeLessThan(6);
      expect(resource.size).toBe(size);
      expect(await sha256((await app.storage.download(account, resource.id)).stream)).toBe(file.sha);
    } finally {
      await app.close();
    }
  });

  // (moto answers an unknown UploadId with a 500, not S3's 404 NoSuchUpload, so the lost upload
  // is staged on a local folder, whose offset writer loses its temporary file.)
  it('resumes by starting over with a new session when the backend lost the confirmed parts', async () => {
    const dataDir = join(work, 'data-lost');
    const folder = join(work, 'lost-target');
    mkdirSync(folder);
    const app = await newApp(dataDir);
    try {
      const account = (await app.accounts.connect({ service: 'local', options: { path: folder } })).id;
      const file = localFile('lost.bin', 12 * MiB + 1);
      // A process confirmed part 1, then died; then the backend lost the upload's temporary file.
      const crashed = new Uploader(app, new MultipartService(app));
      const jobId = await crashed.plan({ accountId: account, parentId: 'root', localPath: file.path });
      const first = new MultipartService(app);
      const session = await first.init(account, { parentId: 'root', name: 'lost.bin', size: 12 * MiB + 1 });
      await first.putPart(account, session.id, 1, createReadStream(file.path, { start: 0, end: session.part_size - 1 }));
      app.db.prepare('UPDATE upload_jobs SET session_id = ? WHERE id = ?').run(session.id, jobId);
      for (const n of readdirSync(folder)) if (n.endsWith('.upload')) rmSync(join(folder, n));

      const resource = await new Uploader(app, new MultipartService(app)).resume(jobId);
      expect(await sha256((await app.storage.download(account, resource.id)).stream)).toBe(file.sha);
      const job = app.db.prepare('SELECT state, session_id FROM upload_jobs WHERE id = ?').get(jobId) as { state: string; session_id: number };
      expect(job.state).toBe('done');
      expect(job.session_id).not.toBe(session.id);
      expect(app.transfers.list().at(-1)).toMatchObject({ name: 'lost.bin', state: 'done', bytesDone: 12 * MiB + 1 });
      expect(readdirSync(folder).sort()).toEqual(['lost.bin']);
    } finally {
      await app.close();
    }
  });

  it('opening the app resumes the unfinished uploads of a previous process, then aborts stale sessions', async () => {
    const dataDir = join(work, 'data-start');
    const folder = join(work, 'start-target');
    mkdirSync(folder);
    const first = await newApp(dataDir);
    const account = (await first.accounts.connect({ service: 'local', options: { path: folder } })).id;
    const file = localFile('pending.bin', 7 * MiB);
    const jobId = await first.uploads.uploader.plan({ accountId: account, parentId: 'root', localPath: file.path });
    const stale = await first.uploads.multipart.init(account, { parentId: 'root', name: 'forgotten.bin', size: 6 * MiB });
    first.db.prepare('UPDATE multipart_sessions SET updated = ? WHERE id = ?').run(new Date(Date.now() - 48 * 3600_000).toISOString(), stale.id);
    await first.close(); // as if the process had ended with the upload planned but not run

    const app = await newApp(dataDir);
    try {
      await app.uploads.resumed;
      expect(app.uploads.uploader.job(jobId)).toMatchObject({ state: 'done', verified: 'size' });
      expect(readFileSync(join(folder, 'pending.bin')).equals(readFileSync(file.path))).toBe(true);
      expect(app.db.prepare('SELECT id FROM multipart_sessions').all()).toEqual([]);
      expect(readdirSync(folder)).toEqual(['pending.bin']); // the stale session's temporary file is gone
    } finally {
      await app.close();
    }
  });

  it('cancelling the transfer stops the upload and aborts its session upstream (moto)', async () => {
    const dataDir = join(work, 'data-cancel');
    const app = await newApp(dataDir);
    try {
      const account = (await app.accounts.connect({ service: 's3', options: moto.options })).id;
      const file = localFile('cancel.bin', 32 * MiB);
      let cancel!: () => void;
      const firstPart = new Promise<void>((r) => (cancel = r));
      const uploader = new Uploader(app, new MultipartService(app), { concurrency: { s3: 1 }, bandwidthLimit: 8 * MiB, onPart: () => cancel() });
      const upload = uploader.upload({ accountId: account, parentId: 'root', localPath: file.path });
      await firstPart;
      const transfer = app.transfers.list().find((t) => t.name === 'cancel.bin' && !t.finishedAt)!;
      app.transfers.cancel(transfer.id);
      await expect(upload).rejects.toThrow();
      expect(app.transfers.list().find((t) => t.id === transfer.id)).toMatchObject({ state: 'cancelled' });
      expect(app.db.prepare('SELECT state FROM upload_jobs').get()).toEqual({ state: 'cancelled' });
      expect(app.db.prepare('SELECT COUNT(*) AS n FROM multipart_sessions').get()).toEqual({ n: 0 });
      const c = new S3Client({ endpoint: moto.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: moto.accessKeyId, secretAccessKey: moto.secretAccessKey } });
      try {
        expect((await c.send(new ListMultipartUploadsCommand({ Bucket: moto.bucket }))).Uploads ?? []).toEqual([]);
      } finally {
        c.destroy();
      }
      expect((await app.storage.list(account, 'root')).items.map((r) => r.name)).not.toContain('cancel.bin');
    } finally {
      await app.close();
    }
  });

  it('resumes from the confirmed parts in a new process after the first was SIGKILLed, byte-identical', async () => {
    const dataDir = join(work, 'data-resume');
    const setup = await newApp(dataDir);
    const account = (await setup.accounts.connect({ service: 's3', options: s3.options })).id;
    await setup.close();
    const size = 40 * MiB + 11;
    const file = localFile('resume.bin', size);
    const runner = join(root, 'scripts/run-ts.mjs');
    const child = join(root, 'test/uploads/fixtures/upload-child.ts');

    // First process: slowed to 6 MiB/s, killed once two parts are confirmed.
    const first = spawn(process.execPath, [runner, child, 'start', dataDir, String(account), 'root', file.path, String(6 * MiB)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    first.stderr.on('data', (d) => (stderr += d));
    const partsBeforeKill: number[] = [];
    const killed = new Promise<NodeJS.Signals | null>((resolve) => first.once('exit', (_code, signal) => resolve(signal)));
    for await (const line of createInterface({ input: first.stdout })) {
      const m = /^PART (\d+)$/.exec(line);
      if (m) partsBeforeKill.push(Number(m[1]));
      if (partsBeforeKill.length === 2) {
        first.kill('SIGKILL');
        break;
      }
    }
    expect(await killed, stderr).toBe('SIGKILL');

    const mid = await newApp(dataDir);
    const job = mid.db.prepare('SELECT state, session_id FROM upload_jobs').get() as { state: string; session_id: number };
    const confirmed = (mid.db.prepare('SELECT part_number FROM multipart_parts WHERE session_id = ?').all(job.session_id) as { part_number: number }[]).map((r) => r.part_number);
    await mid.close();
    expect(job.state).toBe('running');
    expect(confirmed.length).toBeGreaterThanOrEqual(2);
    expect(confirmed.length).toBeLessThan(5);

    // Second process: resumes every unfinished job.
    const second = spawn(process.execPath, [runner, child, 'resume', dataDir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err2 = '';
    second.stdout.on('data', (d) => (out += d));
    second.stderr.on('data', (d) => (err2 += d));
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    expect(code, err2).toBe(0);
    const resumedParts = [...out.matchAll(/^PART (\d+)$/gm)].map((m) => Number(m[1]));
    // Only the missing parts went again.
    expect(resumedParts.filter((n) => confirmed.includes(n))).toEqual([]);
    expect([...confirmed, ...resumedParts].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    const id = /^DONE (\S+)$/m.exec(out)![1];

    const after = await newApp(dataDir);
    try {
      const { resource, stream } = await after.storage.download(account, id);
      expect(resource.size).toBe(size);
      expect(await sha256(stream)).toBe(file.sha);
      expect(await sha256(createReadStream(file.path))).toBe(file.sha);
      expect(after.db.prepare('SELECT state FROM upload_jobs').get()).toEqual({ state: 'done' });
    } finally {
      await after.close();
    }
  });
});
