// `azure` on Azurite: how the connector writes. Multipart sessions (docs/uploads.md, "Multipart
// sessions (spec 1)"), the streamed `write` (its contract in connectors/types.ts: an aborted
// signal stops it and leaves no partial file; a declared `size` is the file's), and the
// conditional copy and delete of a folder move (docs/uploads.md, "Connecting object stores").
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { AzureConnector } from '../../src-main/connectors/azure';
import { ChangedMeanwhile } from '../../src-main/connectors/shared/if-match';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { scratchDir } from '../servers/util';
import { expectCode } from './storage-suite';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The connector's object operations, opened up for the test. */
class OpenAzure extends AzureConnector {
  copy = (from: string, to: string, size: number, etag?: string) => this.copyObject(from, to, size, etag);
  del = (objects: { key: string; etag?: string }[]) => this.deleteObjects(objects);
  below = (prefix: string) => this.objectsBelow(prefix);
}

let server: AzuriteServer;
let container: ContainerClient;
let az: OpenAzure;

beforeAll(async () => {
  server = await startAzurite();
  container = BlobServiceClient.fromConnectionString(server.connectionString).getContainerClient(server.container);
  az = new OpenAzure(server.options);
});

afterAll(async () => {
  await az?.close();
  await server?.stop();
});

const bytesOf = async (name: string) => container.getBlobClient(name).downloadToBuffer();
const exists = (name: string) => container.getBlobClient(name).exists();

describe('azure: multipart sessions', () => {
  let app: App;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = scratchDir('azure-writes');
    app = await createApp({ dataDir, defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // docs/uploads.md, Multipart sessions (spec 1): `overwrite=true` sessions of one name, and
  // sessions survive a restart. Blocks staged for a blob are the blob's, whoever staged them.
  it('two overwrite sessions of one name: the file published is exactly the one completed, also across a restart', async () => {
    const account = (await app.accounts.connect({ service: 'azure', options: server.options })).id;
    const size = 16 * MiB;
    const a = randomBytes(size);
    const b = randomBytes(size);
    let mp = app.uploads.multipart;
    const sa = await mp.init(account, { parentId: 'root', name: 'report.bin', size, overwrite: true });
    const sb = await mp.init(account, { parentId: 'root', name: 'report.bin', size, overwrite: true });
    const half = sa.part_size;
    expect(half).toBe(8 * MiB);
    await mp.putPart(account, sa.id, 1, Readable.from([a.subarray(0, half)]), half);
    await mp.putPart(account, sb.id, 1, Readable.from([b.subarray(0, half)]), half);
    // A restart: the sessions go on from what the app saved of them.
    await app.close();
    app = await createApp({ dataDir, defaultLocalFolder: false });
    mp = app.uploads.multipart;
    await mp.putPart(account, sa.id, 2, Readable.from([a.subarray(half)]), size - half);
    await mp.complete(account, sa.id);
    expect(sha(await bytesOf('report.bin'))).toBe(sha(a));
    // The other session's staged part went with that commit (Azure keeps only the blocks
    // committed): it cannot complete, and the file stays the first session's.
    await mp.putPart(account, sb.id, 2, Readable.from([b.subarray(half)]), size - half);
    await expectCode(mp.complete(account, sb.id), 'invalid_parameters');
    expect(sha(await bytesOf('report.bin'))).toBe(sha(a));
  });

  it('a session saved by an earlier version (no nonce in its state) goes on with the block ids it began with', async () => {
    const partSize = 8 * MiB;
    const data = randomBytes(partSize + 1000);
    // What an earlier version staged before it stopped: part 1 under its id `tributary-part-00001`.
    const blob = container.getBlockBlobClient('earlier.bin');
    await blob.stageBlock(Buffer.from('tributary-part-00001').toString('base64'), data.subarray(0, partSize), partSize);
    const writer = await az.features.resumeChunkWriter!('/earlier.bin', { partSize });
    expect(writer.state).toEqual({ partSize });
    const two = await writer.writePart(2, data.subarray(partSize));
    const file = await writer.complete([{ partNumber: 1, size: partSize }, two]);
    expect(file.size).toBe(data.length);
    expect(sha(await bytesOf('earlier.bin'))).toBe(sha(data));
  });
});

describe('azure: write', () => {
  /** A body that sends `first` bytes and then nothing, never ending (a source gone quiet). */
  function stalling(first: number): Readable {
    let sent = 0;
    return new Readable({
      read() {
        if (sent >= first) return;
        const chunk = randomBytes(Math.min(MiB, first - sent));
        sent += chunk.length;
        this.push(chunk);
      },
    });
  }

  // connectors/types.ts, StorageConnector.write: an aborted signal stops the write and leaves no
  // partial file.
  it('a cancel while the body sends nothing ends the write at once as request_timeout, the body destroyed, nothing published', async () => {
    await az.write('/kept.bin', Readable.from([Buffer.from('OLD CONTENT')]));
    for (const [name, first] of [
      ['/new.bin', MiB],
      ['/kept.bin', 9 * MiB], // a block staged already, over an existing file
    ] as const) {
      const cancel = new AbortController();
      const body = stalling(first);
      const writing = az.write(name, body, { size: 100 * MiB, signal: cancel.signal });
      writing.catch(() => {});
      await sleep(1500);
      cancel.abort();
      const started = Date.now();
      const settled = await Promise.race([writing.then(() => 'resolved', (e: unknown) => e), sleep(5000).then(() => 'still running 5 s after the cancel')]);
      expect(settled, name).toMatchObject({ code: 'request_timeout', message: 'The upload was cancelled.' });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(body.destroyed, name).toBe(true);
    }
    expect(await exists('new.bin')).toBe(false);
    expect((await bytesOf('kept.bin')).toString()).toBe('OLD CONTENT');
  });

  it('a write already cancelled does not start', async () => {
    const e = await expectCode(az.write('/never.bin', Readable.from([Buffer.from('never')]), { size: 5, signal: AbortSignal.abort() }), 'request_timeout');
    expect(e.message).toBe('The upload was cancelled.');
    expect(await exists('never.bin')).toBe(false);
  });

  // WriteOptions.size, "Exact byte count when known": a body of another length is refused
  // before the commit, as the WebDAV connector does.
  it('a body longer or shorter than the declared size is invalid_parameters and publishes nothing', async () => {
    await az.write('/sized.bin', Readable.from([Buffer.from('OLD CONTENT')]));
    const chunks = (b: Buffer) => Array.from({ length: Math.ceil(b.length / MiB) }, (_, i) => b.subarray(i * MiB, (i + 1) * MiB));
    const cases = [
      { name: 'short.bin', body: randomBytes(50), size: 100, says: 'shorter' },
      { name: 'long.bin', body: randomBytes(20 * MiB), size: 9 * MiB, says: 'longer' },
      { name: 'sized.bin', body: randomBytes(9 * MiB), size: 9 * MiB + 1, says: 'shorter' },
      { name: 'sized.bin', body: randomBytes(100), size: 99, says: 'longer' },
    ];
    for (const c of cases) {
      const e = await expectCode(az.write(`/${c.name}`, Readable.from(chunks(c.body)), { size: c.size }), 'invalid_parameters');
      expect(e.message).toBe(`The upload of "${c.name}" is ${c.says} than its declared size.`);
    }
    expect(await exists('short.bin')).toBe(false);
    expect(await exists('long.bin')).toBe(false);
    expect((await bytesOf('sized.bin')).toString()).toBe('OLD CONTENT');
    // The exact size, and no size at all, write as before.
    const data = randomBytes(8 * MiB + 1);
    expect((await az.write('/sized.bin', Readable.from(chunks(data)), { size: data.length })).size).toBe(data.length);
    expect(sha(await bytesOf('sized.bin'))).toBe(sha(data));
    expect((await az.write('/unsized.bin', Readable.from(chunks(data)))).size).toBe(data.length);
  });
});

// docs/uploads.md, Connecting object stores: a move is a copy by the server and a delete. Each is
// made only while the object still has the ETag it was listed with.
describe('azure: conditional copy and delete', () => {
  it('a blob saved anew since it was listed is neither copied nor deleted; an unchanged one is', async () => {
    await container.getBlockBlobClient('c/changed.txt').upload('V1', 2);
    await container.getBlockBlobClient('c/same.txt').upload('SAME', 4);
    const listed = new Map((await az.below('c/')).map((o) => [o.key, o]));
    const changed = listed.get('c/changed.txt')!;
    const same = listed.get('c/same.txt')!;
    expect(changed.etag).toMatch(/^[^"]+$/);
    expect(changed.etag).toBe((await az.stat('/c/changed.txt')).etag);
    await container.getBlockBlobClient('c/changed.txt').upload('V2 saved meanwhile', 18);

    const refused = await az.copy(changed.key, 'd/changed.txt', changed.size, changed.etag).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ChangedMeanwhile);
    expect(refused).toMatchObject({ code: 'conflict', message: expect.stringContaining('"changed.txt"') });
    expect(await exists('d/changed.txt')).toBe(false);
    await az.copy(same.key, 'd/same.txt', same.size, same.etag);
    expect((await bytesOf('d/same.txt')).toString()).toBe('SAME');

    expect(await az.del([changed, same])).toEqual(['c/changed.txt']);
    expect((await bytesOf('c/changed.txt')).toString()).toBe('V2 saved meanwhile');
    expect(await exists('c/same.txt')).toBe(false);
  });

  it('a source gone is ChangedMeanwhile for a conditional copy; a blob gone counts as deleted', async () => {
    await container.getBlockBlobClient('g/x.txt').upload('X', 1);
    const [x] = await az.below('g/');
    await container.deleteBlob('g/x.txt');
    await expect(az.copy(x!.key, 'h/x.txt', x!.size, x!.etag)).rejects.toBeInstanceOf(ChangedMeanwhile);
    await expectCode(az.copy(x!.key, 'h/x.txt', x!.size), 'not_found');
    expect(await az.del([x!, { key: 'g/never-there.txt' }])).toEqual([]);
    // Without an ETag the delete is plain.
    await container.getBlockBlobClient('g/y.txt').upload('Y', 1);
    expect(await az.del([{ key: 'g/y.txt' }])).toEqual([]);
    expect(await exists('g/y.txt')).toBe(false);
  });
});
