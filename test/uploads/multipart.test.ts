// spec 1, Multipart upload / Multipart session / Create an upload URL: sessions through
// MultipartService on real servers: S3 (moto: s3rver implements neither AbortMultipartUpload nor
// ListMultipartUploads) and Azure (Azurite) with native parts, a local folder with offset writes,
// and the reference backend (memory) through the spooled server-side assembly.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { openDb } from '../../src-main/cache/db';
import { ServiceError } from '../../src-main/errors';
import { MultipartService } from '../../src-main/uploads/multipart';
import { expectCode } from '../conformance/storage-suite';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, type S3Server } from '../servers/s3';
import { openOn, scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

async function bytesOf(app: App, account: number, id: string): Promise<Buffer> {
  const { stream } = await app.storage.download(account, id);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const body = (b: Buffer) => Readable.from([b]);

let s3: S3Server;
let azurite: AzuriteServer;
let app: App;
let dataDir: string;
let mp: MultipartService;
const acc: Record<'s3' | 'azure' | 'local' | 'memory', number> = { s3: 0, azure: 0, local: 0, memory: 0 };
let localFolder: string;

beforeAll(async () => {
  [s3, azurite] = await Promise.all([startMoto(), startAzurite()]);
  dataDir = scratchDir('multipart');
  app = await createApp({ dataDir, defaultLocalFolder: false });
  acc.s3 = (await app.accounts.connect({ service: 's3', options: s3.options })).id;
  acc.azure = (await app.accounts.connect({ service: 'azure', options: azurite.options })).id;
  acc.memory = (await app.accounts.connect({ service: 'memory', options: { store: `mp-${randomBytes(4).toString('hex')}` } })).id;
  localFolder = scratchDir('multipart-local');
  acc.local = (await app.accounts.connect({ service: 'local', options: { path: localFolder } })).id;
  mp = new MultipartService(app);
});

afterAll(async () => {
  await app?.close();
  await Promise.all([s3?.stop(), azurite?.stop()]);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (localFolder) rmSync(localFolder, { recursive: true, force: true });
});

/** Upstream leftovers of unfinished multipart uploads, per backend. */
async function leftovers(kind: 's3' | 'azure' | 'local' | 'memory', name: string): Promise<number> {
  // local: the hidden file the parts are written into, beside the target.
  if (kind === 'local') return readdirSync(localFolder).filter((n) => /^\.tributary-.*\.upload$/.test(n)).length;
  if (kind === 's3') {
    const c = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    try {
      const r = await c.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
      return (r.Uploads ?? []).filter((u) => u.Key === name).length;
    } finally {
      c.destroy();
    }
  }
  if (kind === 'azure') {
    const blob = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(azurite.container).getBlockBlobClient(name);
    try {
      const list = await blob.getBlockList('uncommitted');
      return list.uncommittedBlocks?.length ?? 0;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return 0;
      throw e;
    }
  }
  const spool = join(dataDir, 'multipart');
  return existsSync(spool) ? readdirSync(spool).length : 0;
}

describe.each(['s3', 'azure', 'local', 'memory'] as const)('multipart sessions on %s', (kind) => {
  it('spec 1, Multipart upload: parts in any order, complete returns the file with the same bytes', async () => {
    const size = 17 * MiB + 12345;
    const data = randomBytes(size);
    const s = await mp.init(acc[kind], { parentId: 'root', name: `ooo-${kind}.bin`, size, overwrite: false });
    expect(s).toMatchObject({ account: acc[kind], parallel_uploads: true });
    expect(s.part_size).toBeGreaterThanOrEqual(5 * MiB);
    expect(mp.info(acc[kind], s.id)).toEqual(s);
    const count = Math.ceil(size / s.part_size);
    const order = Array.from({ length: count }, (_, i) => count - i); // last part first
    await Promise.all(order.map((n) => mp.putPart(acc[kind], s.id, n, body(data.subarray((n - 1) * s.part_size, n * s.part_size)))));
    const file = await mp.complete(acc[kind], s.id);
    expect(file).toMatchObject({ name: `ooo-${kind}.bin`, kind: 'file', size });
    expect(sha(await bytesOf(app, acc[kind], file.id))).toBe(sha(data));
    await expectCode(Promise.resolve().then(() => mp.info(acc[kind], s.id)), 'not_found');
    expect(await leftovers(kind, `ooo-${kind}.bin`)).toBe(0);
  });

  it('spec 1, Multipart session: a non-final part of the wrong size, part_number 0 and 10001 are refused', async () => {
    const size = 12 * MiB;
    const s = await mp.init(acc[kind], { parentId: 'root', name: `bad-${kind}.bin`, size });
    const err = await expectCode(mp.putPart(acc[kind], s.id, 1, body(randomBytes(s.part_size - 1))), 'invalid_parameters');
    expect(err.message).toMatch(/exactly/);
    // Same, announced by Content-Length before any byte is read.
    await expectCode(mp.putPart(acc[kind], s.id, 1, body(Buffer.alloc(0)), s.part_size + 1), 'invalid_parameters');
    await expectCode(mp.putPart(acc[kind], s.id, 0, body(randomBytes(10))), 'invalid_parameters');
    await expectCode(mp.putPart(acc[kind], s.id, 10001, body(randomBytes(10))), 'invalid_parameters');
    await expectCode(mp.putPart(acc[kind], s.id, 1.5, body(randomBytes(10))), 'invalid_parameters');
    // A part beyond the announced size, and complete with a part missing.
    const count = Math.ceil(size / s.part_size);
    await expectCode(mp.putPart(acc[kind], s.id, count + 1, body(randomBytes(10))), 'invalid_parameters');
    await mp.putPart(acc[kind], s.id, count, body(randomBytes(size - (count - 1) * s.part_size)));
    await expectCode(mp.complete(acc[kind], s.id), 'invalid_parameters');
    await mp.abort(acc[kind], s.id);
  });

  it('spec 1, Multipart upload: abort removes the parts upstream and leaves no file', async () => {
    const size = 10 * MiB;
    const name = `aborted-${kind}.bin`;
    const s = await mp.init(acc[kind], { parentId: 'root', name, size });
    await mp.putPart(acc[kind], s.id, 1, body(randomBytes(s.part_size)));
    expect(await leftovers(kind, name)).toBe(1);
    await mp.abort(acc[kind], s.id);
    expect(await leftovers(kind, name)).toBe(0);
    const names = (await app.storage.list(acc[kind], 'root')).items.map((r) => r.name);
    expect(names).not.toContain(name);
    await expectCode(mp.putPart(acc[kind], s.id, 2, body(randomBytes(10))), 'not_found');
  });

  it('spec 1, Limits: only files larger than 5 MB', async () => {
    await expectCode(mp.init(acc[kind], { parentId: 'root', name: 'small.bin', size: 5 * MiB }), 'invalid_parameters');
    await expectCode(mp.init(acc[kind], { parentId: 'root', name: 'small.bin', size: 1000 }), 'invalid_parameters');
  });

  it('spec 1, Multipart upload: overwrite=false picks another name, overwrite=true replaces', async () => {
    const size = 6 * MiB;
    const name = `same-${kind}.bin`;
    const put = async (overwrite: boolean) => {
      const data = randomBytes(size);
      const s = await mp.init(acc[kind], { parentId: 'root', name, size, overwrite });
      for (let n = 1; (n - 1) * s.part_size < size; n++) await mp.putPart(acc[kind], s.id, n, body(data.subarray((n - 1) * s.part_size, n * s.part_size)));
      return { file: await mp.complete(acc[kind], s.id), data };
    };
    const first = await put(false);
    const second = await put(false);
    expect(second.file.name).toBe(`same-${kind} (1).bin`);
    const third = await put(true);
    expect(third.file.name).toBe(name);
    expect(sha(await bytesOf(app, acc[kind], third.file.id))).toBe(sha(third.data));
    expect(first.file.id).toBe(third.file.id);
  });
});

describe('multipart sessions: size, restarts, staleness', () => {
  // spec 1, Errors: only "the three services that require it" refuse a session without `size`,
  // and Tributary connects to none of them.
  it('spec 1, Multipart upload: a session without `size` works on every backend (S3, Azure, local, memory)', async () => {
    for (const kind of ['s3', 'azure', 'local', 'memory'] as const) {
      // Native writers plan parts from the size: without one the parts are spooled and assembled,
      // parts of part_size and a shorter last one, the total unknown upfront.
      const s = await mp.init(acc[kind], { parentId: 'root', name: `nosize-${kind}.bin` });
      const data = randomBytes(s.part_size + 100);
      await mp.putPart(acc[kind], s.id, 2, body(data.subarray(s.part_size)));
      await mp.putPart(acc[kind], s.id, 1, body(data.subarray(0, s.part_size)));
      const file = await mp.complete(acc[kind], s.id);
      expect(file.size, kind).toBe(data.length);
      expect(sha(await bytesOf(app, acc[kind], file.id)), kind).toBe(sha(data));
    }
  });

  it('a session survives a restart: a new service (and connector) continues it from SQLite', async () => {
    const size = 9 * MiB;
    const data = randomBytes(size);
    const s = await mp.init(acc.s3, { parentId: 'root', name: 'restart.bin', size });
    await mp.putPart(acc.s3, s.id, 1, body(data.subarray(0, s.part_size)));
    await app.close();
    app = await createApp({ dataDir, defaultLocalFolder: false });
    mp = new MultipartService(app);
    expect(mp.info(acc.s3, s.id)).toEqual(s);
    expect(mp.parts(acc.s3, s.id).map((p) => p.partNumber)).toEqual([1]);
    await mp.putPart(acc.s3, s.id, 2, body(data.subarray(s.part_size)));
    const file = await mp.complete(acc.s3, s.id);
    expect(sha(await bytesOf(app, acc.s3, file.id))).toBe(sha(data));
  });

  it('a local session holds no open file between its parts (a session can wait for days, or outlive the app)', async () => {
    const size = 11 * MiB;
    const data = randomBytes(size);
    const s = await mp.init(acc.local, { parentId: 'root', name: 'between-parts.bin', size });
    await mp.putPart(acc.local, s.id, 1, body(data.subarray(0, s.part_size)));
    const [temp] = readdirSync(localFolder).filter((n) => /^\.tributary-.*\.upload$/.test(n));
    expect(temp).toBeDefined();
    const target = realpathSync(join(localFolder, temp!));
    expect(openOn(target)).toEqual([]);
    for (let n = 2; (n - 1) * s.part_size < size; n++) await mp.putPart(acc.local, s.id, n, body(data.subarray((n - 1) * s.part_size, n * s.part_size)));
    const file = await mp.complete(acc.local, s.id);
    expect(sha(await bytesOf(app, acc.local, file.id))).toBe(sha(data));
  });

  it('sessions of another account are not found', async () => {
    const s = await mp.init(acc.s3, { parentId: 'root', name: 'mine.bin', size: 6 * MiB });
    await expectCode(Promise.resolve().then(() => mp.info(acc.azure, s.id)), 'not_found');
    await expectCode(mp.putPart(acc.azure, s.id, 1, body(randomBytes(10))), 'not_found');
    await mp.abort(acc.s3, s.id);
  });

  it('abortStale aborts sessions untouched for longer than the given age, upstream included', async () => {
    const s = await mp.init(acc.s3, { parentId: 'root', name: 'stale.bin', size: 6 * MiB });
    const fresh = await mp.init(acc.s3, { parentId: 'root', name: 'fresh.bin', size: 6 * MiB });
    app.db.prepare('UPDATE multipart_sessions SET updated = ? WHERE id = ?').run(new Date(Date.now() - 2 * 3600_000).toISOString(), s.id);
    expect(await leftovers('s3', 'stale.bin')).toBe(1);
    expect(await mp.abortStale(3600_000)).toBe(1);
    expect(await leftovers('s3', 'stale.bin')).toBe(0);
    expect(mp.info(acc.s3, fresh.id).id).toBe(fresh.id);
    await mp.abort(acc.s3, fresh.id);
  });
});

describe('spec 1, Create an upload URL', () => {
  it('S3: a presigned PUT URL that a third party can upload to', async () => {
    const { method, url } = await mp.uploadUrl(acc.s3, { parentId: 'root', name: 'via-url.txt', expiresIn: 60 });
    expect(method).toBe('PUT');
    expect(url).toMatch(/X-Amz-Expires=60/);
    const res = await fetch(url, { method, body: 'third party' });
    expect(res.status).toBe(200);
    const file = (await app.storage.list(acc.s3, 'root')).items.find((r) => r.name === 'via-url.txt')!;
    expect((await bytesOf(app, acc.s3, file.id)).toString()).toBe('third party');
    // overwrite=false: the taken name is not handed out again.
    const again = await mp.uploadUrl(acc.s3, { parentId: 'root', name: 'via-url.txt' });
    expect(decodeURIComponent(new URL(again.url).pathname)).toMatch(/via-url \(1\)\.txt$/);
  });

  it('Azure: a SAS URL with write permission', async () => {
    const { method, url } = await mp.uploadUrl(acc.azure, { parentId: 'root', name: 'via-sas.txt', expiresIn: 120, overwrite: true });
    expect(method).toBe('PUT');
    expect(new URL(url).searchParams.get('sp')).toMatch(/w/);
    const res = await fetch(url, { method, body: 'sas body', headers: { 'x-ms-blob-type': 'BlockBlob' } });
    expect(res.status).toBe(201);
    const file = (await app.storage.list(acc.azure, 'root')).items.find((r) => r.name === 'via-sas.txt')!;
    expect((await bytesOf(app, acc.azure, file.id)).toString()).toBe('sas body');
  });

  it('expires_in outside 1..10000 and backends without upload URLs are refused', async () => {
    await expectCode(mp.uploadUrl(acc.s3, { parentId: 'root', name: 'x', expiresIn: 0 }), 'invalid_parameters');
    await expectCode(mp.uploadUrl(acc.s3, { parentId: 'root', name: 'x', expiresIn: 10001 }), 'invalid_parameters');
    await expectCode(mp.uploadUrl(acc.memory, { parentId: 'root', name: 'x' }), 'not_implemented');
  });
});

describe('migrations 0200-multipart and 0210-upload-jobs', () => {
  it('create STRICT tables whose checks refuse bad rows, and cascade with the account', () => {
    const db = openDb(':memory:');
    const strict = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%STRICT%'").all().map((r) => (r as { name: string }).name);
    expect(strict).toEqual(expect.arrayContaining(['multipart_sessions', 'multipart_parts', 'upload_jobs']));
    db.prepare("INSERT INTO accounts (id, service, account, options, created, modified) VALUES (1, 's3', 'a', x'00', 'c', 'm')").run();
    const insert = (part: number) =>
      db.prepare("INSERT INTO multipart_parts (session_id, part_number, size, created) VALUES (1, ?, 1, 'c')").run(part);
    db.prepare(
      "INSERT INTO multipart_sessions (id, account_id, parent_path, name, path, overwrite, part_size, parallel, mode, created, updated) VALUES (1, 1, '/', 'n', '/n', 0, 8, 1, 'native', 'c', 'u')",
    ).run();
    insert(1);
    expect(() => insert(0)).toThrow(/CHECK/);
    expect(() => insert(10001)).toThrow(/CHECK/);
    db.prepare(
      "INSERT INTO upload_jobs (account_id, parent_id, name, local_path, size, mtime_ms, overwrite, state, created, updated) VALUES (1, 'root', 'n', '/tmp/n', 1, 1, 0, 'running', 'c', 'u')",
    ).run();
    expect(() => db.prepare("UPDATE upload_jobs SET state = 'stalled'").run()).toThrow(/CHECK/);
    db.prepare('DELETE FROM accounts WHERE id = 1').run();
    expect(db.prepare('SELECT COUNT(*) AS n FROM multipart_parts').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT COUNT(*) AS n FROM upload_jobs').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('connector import parameters (spec 1, Import an account)', () => {
  it('s3 and azure map token, token_secret and their extra parameters', async () => {
    const { connectorDefinition, parseOptions } = await import('../../src-main/connectors/registry');
    const s3def = connectorDefinition('s3');
    expect(parseOptions(s3def, s3def.fromImport({ token: 'AK', token_secret: 'SK', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', bucket: 'b', path_style: 'true' }))).toMatchObject({
      accessKeyId: 'AK', secretAccessKey: 'SK', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', bucket: 'b', pathStyle: true,
    });
    const az = connectorDefinition('azure');
    expect(parseOptions(az, az.fromImport({ account: 'acct', token: 'a2V5', container: 'c' }))).toMatchObject({ accountName: 'acct', accountKey: 'a2V5', container: 'c' });
    expect(parseOptions(az, az.fromImport({ account: 'acct', token: 'sv=2024-01-01&sig=x', container: 'c' }))).toMatchObject({ sasToken: 'sv=2024-01-01&sig=x' });
    expect(() => parseOptions(az, az.fromImport({ container: 'c' }))).toThrow(ServiceError);
  });
});
