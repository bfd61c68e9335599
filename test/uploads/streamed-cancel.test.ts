// Pause and Cancel in Transfers (docs/uploads.md, Pause, resume, retry) for an upload sent in one
// request: a file under the multipart threshold, paced by the bandwidth limit so that it is still
// on its way, into a local folder (written under a hidden temporary name, then renamed) and into
// the in-memory reference account. Cancel ends it `cancelled`, pause ends it `paused` (resume sends
// it again), and neither leaves a file under its name nor a temporary file. The desktop's upload by
// path and a dropped folder's upload stop too, against a backend that stopped taking the bytes.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { Transfer } from '../../src-main/contract';
import type { WriteFileOptions } from '../../src-main/connectors/types';
import { createHandlers } from '../../src-main/rpc/handlers';
import { uploadLocalFolder } from '../../src-main/services/folder-upload';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

let app: App;
let work: string;

beforeAll(async () => {
  work = scratchDir('streamed-cancel');
  // 4 MiB at 1 MiB/s: seconds on its way.
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false, uploads: { bandwidthLimit: MiB } });
});

afterAll(async () => {
  await app?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const transfer = (id: string): Transfer | undefined => app.transfers.list().find((t) => t.id === id);
const jobState = (id: number) => (app.db.prepare('SELECT state FROM upload_jobs WHERE id = ?').get(id) as { state: string }).state;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A new, empty account of `service`; for a local folder, `onDisk` lists the folder on the disk. */
async function account(service: 'local' | 'memory', name: string): Promise<{ id: number; onDisk?: () => string[] }> {
  if (service === 'memory') return { id: (await app.accounts.connect({ service: 'memory', options: { store: `${name}-${randomBytes(4).toString('hex')}` } })).id };
  const folder = join(work, name);
  mkdirSync(folder);
  const id = (await app.accounts.connect({ service: 'local', options: { path: folder } })).id;
  return { id, onDisk: () => readdirSync(folder) };
}

/** Starts the upload of a 4 MiB file and waits until its bytes are on their way. */
async function startUpload(accountId: number, onDisk: (() => string[]) | undefined, name: string) {
  const local = join(work, name);
  const data = randomBytes(4 * MiB);
  writeFileSync(local, data);
  const jobId = await app.uploads.uploader.plan({ accountId, parentId: 'root', localPath: local });
  const running = app.uploads.uploader.resume(jobId);
  running.catch(() => {});
  const id = `upload-${jobId}`;
  await expect.poll(() => transfer(id)?.bytesDone ?? 0).toBeGreaterThan(0);
  // The local folder's write has begun: its temporary file is there.
  if (onDisk) await expect.poll(onDisk).toHaveLength(1);
  expect(transfer(id)?.state).toBe('running');
  return { id, jobId, running, data };
}

describe("a streamed upload's Cancel and Pause (docs/uploads.md, Pause, resume, retry)", () => {
  it.each(['local', 'memory'] as const)('cancel stops it mid-way: cancelled, no file and no temporary file (%s)', async (service) => {
    const acc = await account(service, `cancel-${service}`);
    const { id, jobId, running } = await startUpload(acc.id, acc.onDisk, `cancel-${service}.bin`);
    await app.transfers.cancel(id);
    await expect(running).rejects.toMatchObject({ message: 'Cancelled by the user.' });
    expect(transfer(id)).toMatchObject({ state: 'cancelled', error: null });
    expect(jobState(jobId)).toBe('cancelled');
    expect((await app.storage.list(acc.id, 'root')).items).toEqual([]);
    expect(acc.onDisk?.() ?? []).toEqual([]);
  });

  it('pause stops it mid-way and keeps nothing; resume sends the whole file again, byte-identical', async () => {
    const acc = await account('local', 'pause-local');
    const { id, jobId, running, data } = await startUpload(acc.id, acc.onDisk, 'paused.bin');
    app.transfers.pause(id);
    await expect(running).rejects.toMatchObject({ message: 'Paused by the user.' });
    expect(transfer(id)).toMatchObject({ state: 'paused', finishedAt: null, actions: ['resume', 'cancel'] });
    expect(jobState(jobId)).toBe('paused');
    expect((await app.storage.list(acc.id, 'root')).items).toEqual([]);
    expect(acc.onDisk!()).toEqual([]);

    app.transfers.resume(id);
    await expect.poll(() => transfer(id)?.state, { timeout: 30_000 }).toBe('done');
    expect(jobState(jobId)).toBe('done');
    expect(acc.onDisk!()).toEqual(['paused.bin']);
    expect(sha(readFileSync(join(work, 'pause-local', 'paused.bin')))).toBe(sha(data));
  });
});

/** Takes the first bytes of the body, then reads no more: ends only when the body fails. */
async function stalledWrite(_path: string, body: Readable): Promise<never> {
  await once(body, 'readable');
  body.read();
  await finished(body);
  throw new Error('The body ended, yet nobody read it.');
}

/** Reads the file by the backend's own means and stops taking bytes: ends only when stopped. */
function stalledWriteFile(_path: string, _file: string, options?: WriteFileOptions): Promise<never> {
  return new Promise((_resolve, reject) => {
    options?.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true });
  });
}

describe('desktop uploads by path stop on Cancel (spec 1, Upload a file)', () => {
  /** A memory account whose backend stops taking the bytes, by `how`. */
  async function stalledAccount(how: 'streamed' | 'from the file'): Promise<number> {
    const id = (await account('memory', 'stalled')).id;
    const connector = await app.accounts.storage(id);
    if (how === 'streamed') connector.write = stalledWrite;
    else connector.features.writeFile = stalledWriteFile;
    return id;
  }

  /** The running upload transfer named `name`, once it has begun. */
  async function running(name: string): Promise<Transfer> {
    await expect.poll(() => app.transfers.list().find((t) => t.name === name && t.state === 'running')).toBeDefined();
    return app.transfers.list().find((t) => t.name === name && t.state === 'running')!;
  }

  it.each(['streamed', 'from the file'] as const)('files.uploadPath, %s', async (how) => {
    const accountId = await stalledAccount(how);
    const name = `by-path-${how.replaceAll(' ', '-')}.bin`;
    const local = join(work, name);
    writeFileSync(local, randomBytes(4 * MiB));
    const desktop = createHandlers(app, { mode: 'electron', version: 'test' });
    const upload = desktop['files.uploadPath']({ account: accountId, parent: 'root', path: local, conflict: 'rename' });
    upload.catch(() => {});
    const t = await running(name);
    await app.transfers.cancel(t.id);
    await expect.poll(() => transfer(t.id)?.state).toBe('cancelled');
    await expect(upload).rejects.toMatchObject({ code: 'request_timeout', message: 'Cancelled by the user.' });
    expect(transfer(t.id)?.error).toBeNull();
    expect((await app.storage.list(accountId, 'root')).items).toEqual([]);
  });

  it("a dropped folder's upload, from the file", async () => {
    const accountId = await stalledAccount('from the file');
    const dropped = join(work, 'dropped');
    mkdirSync(dropped);
    writeFileSync(join(dropped, 'report.bin'), randomBytes(4 * MiB));
    const upload = uploadLocalFolder(app, accountId, 'root', dropped);
    upload.catch(() => {});
    const t = await running('dropped');
    await app.transfers.cancel(t.id);
    await expect.poll(() => transfer(t.id)?.state).toBe('cancelled');
    await expect(upload).rejects.toMatchObject({ message: 'Cancelled by the user.' });
    expect(transfer(t.id)?.error).toBeNull();
    // What was made before the cancel stays (the folder); the file never got its name.
    const [folder] = (await app.storage.list(accountId, 'root')).items;
    expect(folder).toMatchObject({ kind: 'folder' });
    expect((await app.storage.list(accountId, folder!.id)).items).toEqual([]);
  });
});
