// docs/connectors.md, "Object stores (`s3`, `azure`): moves, listings and reads": the behaviours of
// the shared object-store core and of the S3 connector below the storage service, on real servers
// (moto, s3rver, Azurite). Hooks in subclasses make the races deterministic: another client
// saves a file between the copy and the delete of a move, a copy fails in the middle of a folder.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureConnector } from '../../src-main/connectors/azure';
import { S3Connector } from '../../src-main/connectors/s3';
import { inParallel, type ObjectStoreConnector } from '../../src-main/connectors/shared/object-store';
import type { Entry } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { tcpProxy } from '../servers/tcp-proxy';
import { expectCode } from './storage-suite';

const MiB = 1024 * 1024;

/** Called around each server-side copy a move or copy makes, with the source key. */
interface CopyHooks {
  beforeCopy?(from: string): Promise<void>;
  afterCopy?(from: string): Promise<void>;
}

class HookedS3 extends S3Connector {
  hooks: CopyHooks = {};
  protected async copyObject(from: string, to: string, size: number, etag?: string): Promise<void> {
    await this.hooks.beforeCopy?.(from);
    await super.copyObject(from, to, size, etag);
    await this.hooks.afterCopy?.(from);
  }
}

class HookedAzure extends AzureConnector {
  hooks: CopyHooks = {};
  protected async copyObject(from: string, to: string, size: number, etag?: string): Promise<void> {
    await this.hooks.beforeCopy?.(from);
    await super.copyObject(from, to, size, etag);
    await this.hooks.afterCopy?.(from);
  }
}

/** Reads give up after 2 s of silence instead of READ_IDLE_MS. */
const QUICK_IDLE_MS = 2_000;
class QuickS3 extends S3Connector {
  protected readonly readIdleMs = QUICK_IDLE_MS;
}
class QuickAzure extends AzureConnector {
  protected readonly readIdleMs = QUICK_IDLE_MS;
}

/** The store as another client sees it. */
interface RawStore {
  put(key: string, data: string | Buffer): Promise<void>;
  /** The object's bytes as text; undefined when it is not there. */
  get(key: string): Promise<string | undefined>;
  keys(prefix: string): Promise<string[]>;
}

interface Store {
  name: string;
  raw: RawStore;
  hooked(): ObjectStoreConnector & { hooks: CopyHooks };
  /** A connector reaching the server through `port` (a proxy), reads giving up after QUICK_IDLE_MS. */
  quick(port: number): ObjectStoreConnector;
  port: number;
}

function s3Raw(server: S3Server): RawStore & { client: S3Client } {
  const client = new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey } });
  const Bucket = server.bucket;
  return {
    client,
    put: async (Key, Body) => void (await client.send(new PutObjectCommand({ Bucket, Key, Body }))),
    get: async (Key) => {
      try {
        return await (await client.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();
      } catch {
        return undefined;
      }
    },
    keys: async (Prefix) => {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix, ContinuationToken: token, EncodingType: 'url' }));
        for (const o of page.Contents ?? []) out.push(page.EncodingType === 'url' ? decodeURIComponent(o.Key!.replace(/\+/g, ' ')) : o.Key!);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort();
    },
  };
}

function azureRaw(server: AzuriteServer): RawStore {
  const container = BlobServiceClient.fromConnectionString(server.connectionString).getContainerClient(server.container);
  return {
    put: async (key, data) => void (await container.getBlockBlobClient(key).uploadData(Buffer.from(data))),
    get: async (key) => {
      try {
        return (await container.getBlobClient(key).downloadToBuffer()).toString();
      } catch {
        return undefined;
      }
    },
    keys: async (prefix) => {
      const out: string[] = [];
      for await (const b of container.listBlobsFlat({ prefix })) out.push(b.name);
      return out.sort();
    },
  };
}

const viaPort = (endpoint: string, from: number, to: number) => endpoint.replace(`:${from}/`, `:${to}/`).replace(new RegExp(`:${from}$`), `:${to}`);

let moto: S3Server;
let s3rver: S3Server;
let azurite: AzuriteServer;
let motoRaw: ReturnType<typeof s3Raw>;
let s3rverRaw: ReturnType<typeof s3Raw>;
const open: { close(): Promise<void> }[] = [];
const track = <T extends { close(): Promise<void> }>(c: T): T => (open.push(c), c);

const motoStore = (): Store => ({
  name: 'moto',
  raw: motoRaw,
  hooked: () => track(new HookedS3(moto.options)),
  quick: (port) => track(new QuickS3({ ...moto.options, endpoint: viaPort(moto.endpoint, moto.port, port) })),
  port: moto.port,
});
const azuriteStore = (): Store => ({
  name: 'Azurite',
  raw: azureRaw(azurite),
  hooked: () => track(new HookedAzure(azurite.options)),
  quick: (port) => track(new QuickAzure({ ...azurite.options, endpoint: viaPort(azurite.endpoint, azurite.port, port) })),
  port: azurite.port,
});
/** The stores that honour conditional deletes and reads through a proxy: moto and Azurite. */
const STORES: [string, () => Store][] = [
  ['moto', motoStore],
  ['Azurite', azuriteStore],
];

beforeAll(async () => {
  [moto, s3rver, azurite] = await Promise.all([startMoto(), startS3rver(), startAzurite()]);
  motoRaw = s3Raw(moto);
  s3rverRaw = s3Raw(s3rver);
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => {})));
  motoRaw?.client.destroy();
  s3rverRaw?.client.destroy();
  await Promise.all([moto?.stop(), s3rver?.stop(), azurite?.stop()]);
});

const unique = (what: string) => `${what}-${randomBytes(4).toString('hex')}`;
const names = (entries: Entry[]) => entries.map((e) => e.name).sort();

async function seedFolder(raw: RawStore, folder: string, count: number): Promise<string[]> {
  const keys = Array.from({ length: count }, (_, i) => `${folder}/f${String(i).padStart(3, '0')}.txt`);
  await inParallel(keys, 8, (k) => raw.put(k, `v:${k}`));
  return keys;
}

describe.each(STORES)('a move keeps what is saved during it (%s)', (_name, store) => {
  // docs/connectors.md, "Object stores": a move copies and deletes each object only while it has the ETag it was listed with.
  it('a folder move copies a file saved between its copy and its delete in the new version, and deletes no newer version', async () => {
    const { raw, hooked } = store();
    const c = hooked();
    const root = unique('race');
    await seedFolder(raw, `${root}/src`, 6);
    let saved = false;
    c.hooks.afterCopy = async (from) => {
      if (from !== `${root}/src/f003.txt` || saved) return;
      saved = true;
      await raw.put(from, 'VERSION 2');
    };
    await c.features.move!(`/${root}/src`, `/${root}/dst`);
    expect(saved).toBe(true);
    expect(await raw.get(`${root}/dst/f003.txt`)).toBe('VERSION 2');
    expect(await raw.keys(`${root}/src/`)).toEqual([]);
    // The six files, and the marker that keeps the target a folder (the source had none).
    expect((await raw.keys(`${root}/dst/`)).length).toBe(7);
  });

  // docs/connectors.md, "Object stores": what still changes after the extra rounds stays at the source, and the move is a conflict.
  it('a file that keeps changing stays at the source in its newest version; the move fails with conflict naming it', async () => {
    const { raw, hooked } = store();
    const c = hooked();
    const root = unique('busy');
    await seedFolder(raw, `${root}/src`, 4);
    let version = 0;
    c.hooks.afterCopy = async (from) => {
      if (from === `${root}/src/f002.txt`) await raw.put(from, `VERSION ${++version}`);
    };
    const e = await expectCode(c.features.move!(`/${root}/src`, `/${root}/dst`), 'conflict');
    expect(e.message).toContain(`"/${root}/src/f002.txt" changed while the folder "/${root}/src" was moved`);
    expect(e.message).toContain('the newer version stays at the source and the destination holds the earlier one');
    // The first copy and two more rounds.
    expect(version).toBe(3);
    expect(await raw.get(`${root}/src/f002.txt`)).toBe('VERSION 3');
    expect(await raw.get(`${root}/dst/f002.txt`)).toBe('VERSION 2');
    expect(await raw.keys(`${root}/src/`)).toEqual([`${root}/src/f002.txt`]);
    expect((await raw.keys(`${root}/dst/`)).length).toBe(4 + 1);
  });

  // docs/connectors.md, "Object stores": a file move (a rename) is the same copy and conditional delete.
  it('a file move keeps a version saved between its copy and its delete', async () => {
    const { raw, hooked } = store();
    const c = hooked();
    const root = unique('one');
    await raw.put(`${root}/a.txt`, 'VERSION 1');
    c.hooks.afterCopy = async (from) => {
      c.hooks.afterCopy = undefined;
      await raw.put(from, 'VERSION 2');
    };
    const moved = await c.features.move!(`/${root}/a.txt`, `/${root}/b.txt`);
    expect(moved.size).toBe('VERSION 2'.length);
    expect(await raw.get(`${root}/b.txt`)).toBe('VERSION 2');
    expect(await raw.get(`${root}/a.txt`)).toBeUndefined();
  });
});

describe('a failed folder move or copy stops and leaves no partial target', () => {
  // docs/connectors.md, "Object stores": after the first failure no new copy starts; those in flight finish first.
  it('inParallel starts nothing after the first failure and settles once the calls in flight have ended', async () => {
    const started: number[] = [];
    let inFlight = 0;
    const boom = new Error('boom');
    const run = inParallel(
      Array.from({ length: 30 }, (_, i) => i),
      3,
      async (i) => {
        started.push(i);
        inFlight++;
        await new Promise((r) => setTimeout(r, i === 4 ? 5 : 40));
        inFlight--;
        if (i === 4) throw boom;
      },
    );
    await expect(run).rejects.toBe(boom);
    expect(inFlight).toBe(0);
    expect(started.length).toBeLessThanOrEqual(4 + 3);
    await new Promise((r) => setTimeout(r, 200));
    expect(started.length).toBeLessThanOrEqual(4 + 3);
  });

  for (const move of [true, false]) {
    // docs/connectors.md, "Object stores": a failed copy phase removes what it copied; the error keeps its cause's code.
    it(`a folder ${move ? 'move' : 'copy'} whose copy fails midway removes what it copied and says why (moto)`, async () => {
      const c = track(new HookedS3(moto.options));
      const root = unique(move ? 'failmove' : 'failcopy');
      const keys = await seedFolder(motoRaw, `${root}/src`, 40);
      let copies = 0;
      c.hooks.beforeCopy = async (from) => {
        copies++;
        if (from === `${root}/src/f010.txt`) throw new ServiceError('service_not_available', 'S3 is busy: SlowDown', { retryAfter: 5 });
      };
      const op = move ? c.features.move! : c.features.copy!;
      const e = await expectCode(op(`/${root}/src`, `/${root}/dst`), 'service_not_available');
      expect(e.status).toBe(503);
      expect(e.message).toBe(`The folder ${move ? 'move' : 'copy'} of "/${root}/src" failed: S3 is busy: SlowDown`);
      expect(e.details).toEqual({ retryAfter: 5 });
      const atFailure = copies;
      await new Promise((r) => setTimeout(r, 300));
      expect(copies).toBe(atFailure);
      expect(copies).toBeLessThan(40);
      expect(await motoRaw.keys(`${root}/dst/`)).toEqual([]);
      expect(await motoRaw.keys(`${root}/src/`)).toEqual(keys);
    });
  }
});

describe.each([
  ['moto', () => ({ c: track(new S3Connector(moto.options)) as ObjectStoreConnector, raw: motoRaw as RawStore })],
  ['Azurite', () => ({ c: track(new AzureConnector(azurite.options)) as ObjectStoreConnector, raw: azureRaw(azurite) })],
])('keys no path can name are not shown (%s)', (_name, make) => {
  // docs/connectors.md, "Object stores": keys with an empty segment ("/x", "a//b") are not listed; a folder never lists itself.
  it('a leading "/" or a "//" in a key makes no entry named "" and no folder that contains itself', async () => {
    const { c, raw } = make();
    const root = unique('segments');
    for (const key of ['/lead.txt', `${root}/a.txt`, `${root}//b.txt`, `${root}/sub//c.txt`, `${root}/sub/d.txt`]) await raw.put(key, 'x');
    const top = await c.list('/');
    expect(top.filter((e) => e.name === '' || e.path === '/')).toEqual([]);
    expect(names(await c.list(`/${root}`))).toEqual(['a.txt', 'sub']);
    expect(names(await c.list(`/${root}/sub`))).toEqual(['d.txt']);
    // A walk of the tree ends, and sees only entries with names.
    const seen: string[] = [];
    const walk = async (path: string, depth: number): Promise<void> => {
      expect(depth).toBeLessThan(5);
      for (const e of await c.list(path)) {
        seen.push(e.path);
        if (e.kind === 'folder') await walk(e.path, depth + 1);
      }
    };
    await walk(`/${root}`, 0);
    expect(seen.sort()).toEqual([`/${root}/a.txt`, `/${root}/sub`, `/${root}/sub/d.txt`]);
    // A recursive remove takes the hidden keys too: the folder is gone.
    await c.remove(`/${root}`, { recursive: true });
    expect(await raw.keys(`${root}/`)).toEqual([]);
    await expectCode(c.stat(`/${root}`), 'not_found');
  });
});

describe('S3 listings carry keys as stored', () => {
  // docs/connectors.md, "Object stores": S3 listings are asked URL-encoded, and decoded only when the answer says so.
  it.each([
    ['moto', () => ({ server: moto, raw: motoRaw, move: true })],
    // s3rver answers NoSuchKey to a CopyObject whose source key has "+" or "&": no move there.
    ['s3rver', () => ({ server: s3rver, raw: s3rverRaw, move: false })],
  ])('names with spaces, "+", "%" and XML characters list and read as written, and move (%s)', async (_name, make) => {
    const { server, raw, move } = make();
    const c = track(new S3Connector(server.options));
    const root = unique('enc');
    const files = ['a b+c%20d.txt', "ü~!*()'.txt", 'x&y<z>.txt'];
    for (const f of [...files, 'sub dir/+.txt']) await raw.put(`${root}/${f}`, f);
    expect(names(await c.list(`/${root}`))).toEqual([...files, 'sub dir'].sort());
    expect(names(await c.list(`/${root}/sub dir`))).toEqual(['+.txt']);
    const chunks: Buffer[] = [];
    for await (const chunk of await c.read(`/${root}/a b+c%20d.txt`)) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('a b+c%20d.txt');
    if (!move) return;
    await c.features.move!(`/${root}`, `/${root}-moved`);
    expect(await raw.keys(`${root}-moved/`)).toEqual([`${root}-moved/`, ...[...files, 'sub dir/+.txt'].map((f) => `${root}-moved/${f}`)].sort());
    expect(await raw.keys(`${root}/`)).toEqual([]);
  });

  // docs/connectors.md, "Object stores": a key with a carriage return is listed under its own name (moto; s3rver cannot).
  it('a key with a carriage return lists under its own name, reads, and a recursive remove deletes it (moto)', async () => {
    const c = track(new S3Connector(moto.options));
    const root = unique('cr');
    await motoRaw.put(`${root}/line\r.txt`, 'cr');
    await motoRaw.put(`${root}/plain.txt`, 'plain');
    expect(names(await c.list(`/${root}`))).toEqual(['line\r.txt', 'plain.txt']);
    const chunks: Buffer[] = [];
    for await (const chunk of await c.read(`/${root}/line\r.txt`)) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('cr');
    await c.remove(`/${root}`, { recursive: true });
    expect(await motoRaw.keys(`${root}/`)).toEqual([]);
  });
});

describe.each(STORES)('reads that stall or break (%s)', (_name, store) => {
  async function bigFile(s: Store, size: number): Promise<{ path: string; data: Buffer }> {
    const path = `/${unique('read')}.bin`;
    const data = randomBytes(size);
    await s.raw.put(path.slice(1), data);
    return { path, data };
  }

  /** Reads `stream` until `atBytes`, calls `then`, and settles with the stream's end or error (or "nothing" after `waitMs`). */
  function readUntil(stream: Readable, atBytes: number, then: () => unknown, waitMs: number): Promise<{ error?: unknown; got: number; outcome: string }> {
    let got = 0;
    let done = false;
    return new Promise((resolve) => {
      stream.on('data', (chunk: Buffer) => {
        got += chunk.length;
        if (!done && got >= atBytes) {
          done = true;
          then();
        }
      });
      stream.on('end', () => resolve({ got, outcome: 'end' }));
      stream.on('error', (error) => resolve({ error, got, outcome: 'error' }));
      setTimeout(() => resolve({ got, outcome: `nothing within ${waitMs} ms` }), waitMs).unref();
    });
  }

  // docs/connectors.md, "Object stores": a read whose connection goes silent fails with service_not_available after READ_IDLE_MS.
  it('a read whose connection goes silent fails with service_not_available instead of hanging', async () => {
    const s = store();
    const { path } = await bigFile(s, 24 * MiB);
    const proxy = await tcpProxy(s.port);
    try {
      const c = s.quick(proxy.port);
      const started = Date.now();
      const r = await readUntil(await c.read(path), MiB, () => proxy.cut(), 20_000);
      expect(r.outcome).toBe('error');
      expect(r.error).toBeInstanceOf(ServiceError);
      expect((r.error as ServiceError).code).toBe('service_not_available');
      expect(Date.now() - started).toBeGreaterThanOrEqual(QUICK_IDLE_MS);
    } finally {
      await proxy.stop();
    }
  });

  // docs/connectors.md, "Object stores": only the server's silence counts, not a reader that is behind.
  it('a reader that pauses longer than the idle limit still gets every byte', async () => {
    const s = store();
    const { path, data } = await bigFile(s, 12 * MiB);
    const c = s.quick(s.port);
    const stream = await c.read(path);
    const chunks: Buffer[] = [];
    let paused = false;
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      if (!paused) {
        paused = true;
        await new Promise((r) => setTimeout(r, QUICK_IDLE_MS * 2));
      }
    }
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });

  // docs/connectors.md, "Object stores": errors of the stream a read returns are mapped like any other failure of the store.
  it('a server that goes away mid-read fails the stream with a ServiceError, not a raw socket error', async () => {
    const s = store();
    const { path } = await bigFile(s, 24 * MiB);
    const proxy = await tcpProxy(s.port);
    const c = s.quick(proxy.port);
    let stopping: Promise<void> | undefined;
    const r = await readUntil(await c.read(path), MiB, () => (stopping = proxy.stop()), 20_000);
    await stopping;
    expect(r.outcome).toBe('error');
    expect(r.error).toBeInstanceOf(ServiceError);
    expect((r.error as ServiceError).code).toBe('service_not_available');
  });
});

describe('S3 writes and the root', () => {
  // docs/connectors.md, "Object stores": an upload not matching its declared size fails before it is published.
  it('a body shorter or longer than the declared size is invalid_parameters and publishes nothing (moto)', async () => {
    const c = track(new S3Connector(moto.options));
    const root = unique('size');
    const short = await expectCode(c.write(`/${root}/short.bin`, Readable.from([randomBytes(50)]), { size: 100 }), 'invalid_parameters');
    expect(short.message).toBe('The upload of "short.bin" is shorter than its declared size.');
    await expectCode(c.stat(`/${root}/short.bin`), 'not_found');
    const big = randomBytes(20 * MiB);
    const chunks = Array.from({ length: 20 }, (_, i) => big.subarray(i * MiB, (i + 1) * MiB));
    const long = await expectCode(c.write(`/${root}/long.bin`, Readable.from(chunks), { size: 9 * MiB }), 'invalid_parameters');
    expect(long.message).toBe('The upload of "long.bin" is longer than its declared size.');
    await expectCode(c.stat(`/${root}/long.bin`), 'not_found');
    const longSmall = await expectCode(c.write(`/${root}/long-small.bin`, Readable.from([randomBytes(50)]), { size: 10 }), 'invalid_parameters');
    expect(longSmall.message).toMatch(/longer than its declared size/);
    await expectCode(c.stat(`/${root}/long-small.bin`), 'not_found');
    const uploads = await motoRaw.client.send(new ListMultipartUploadsCommand({ Bucket: moto.bucket }));
    expect((uploads.Uploads ?? []).filter((u) => u.Key?.startsWith(root))).toEqual([]);
    // The right size still goes through.
    expect((await c.write(`/${root}/exact.bin`, Readable.from([randomBytes(50)]), { size: 50 })).size).toBe(50);
  });

  // connectors/types.ts, StorageConnector.write: a cancel is told as request_timeout, as by every connector.
  it('a write cancelled part-way is request_timeout "The upload was cancelled." and publishes nothing (moto)', async () => {
    const c = track(new S3Connector(moto.options));
    const root = unique('cancel');
    const cancel = new AbortController();
    const body = Readable.from(
      (async function* () {
        yield randomBytes(MiB);
        cancel.abort();
        yield randomBytes(MiB);
      })(),
    );
    const e = await expectCode(c.write(`/${root}/cancelled.bin`, body, { size: 2 * MiB, signal: cancel.signal }), 'request_timeout');
    expect(e.message).toBe('The upload was cancelled.');
    await expectCode(c.stat(`/${root}/cancelled.bin`), 'not_found');
  });

  // docs/uploads.md, "`s3`": a missing bucket is not_found with "The bucket "x" does not exist", the root's stat included.
  it.each([
    ['moto', () => moto],
    ['s3rver', () => s3rver],
  ])("stat('/') of a bucket that does not exist is not_found naming it (%s)", async (_name, server) => {
    const c = track(new S3Connector({ ...server().options, bucket: 'no-such-bucket' }));
    const e = await expectCode(c.stat('/'), 'not_found');
    expect(e.message).toBe('The bucket "no-such-bucket" does not exist.');
    const ok = track(new S3Connector(server().options));
    expect((await ok.stat('/')).kind).toBe('folder');
  });
});
