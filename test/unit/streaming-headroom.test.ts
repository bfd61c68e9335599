/**
 * Streamed uploads run with room for their Buffers in V8's old-generation limit
 * (src-main/memory.ts, withStreamingHeadroom; the figures are in its comment): the growth is set
 * when the first transfer starts and given back to V8 when the last one ends, failed ones too.
 * Uploads through StorageService (the REST route, spec 1 "Upload a file"), copies across accounts,
 * the desktop uploader and the sync engine's transfers stream inside it. The memory account is
 * the reference backend.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src-main/app';
import { MemoryConnector } from '../../src-main/connectors/memory';
import type { StorageConnector } from '../../src-main/connectors/types';
import { withStreamingHeadroom } from '../../src-main/memory';
import { pairEngine, syncDb } from '../sync/scenario';
import { scratchDir } from '../servers/util';

vi.mock('node:v8', async (original) => ({ ...(await original<typeof import('node:v8')>()), setFlagsFromString: vi.fn() }));

const SET = '--heap-growing-percent=100';
const RESET = '--heap-growing-percent=0';
/** The growth settings made so far, in order. */
const growth = () => vi.mocked(setFlagsFromString).mock.calls.map((c) => c[0]).filter((f) => f.startsWith('--heap-growing-percent'));

let app: Awaited<ReturnType<typeof createApp>>;
let accountId: number;
const work = scratchDir('streaming-headroom');

beforeAll(async () => {
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  accountId = (await app.accounts.connect({ service: 'memory', options: { store: 'streaming-headroom' } })).id;
});
afterAll(() => app?.close());
beforeEach(() => vi.mocked(setFlagsFromString).mockClear());

describe('room in the heap while transfers stream', () => {
  it('is set once for transfers that overlap and given back when the last one ends, a failed one too', async () => {
    let endFirst!: () => void;
    const first = withStreamingHeadroom(() => new Promise<void>((r) => (endFirst = r)));
    const second = withStreamingHeadroom(async () => {
      throw new Error('the server went away');
    });
    await expect(second).rejects.toThrow('the server went away');
    expect(growth()).toEqual([SET]);
    endFirst();
    await first;
    expect(growth()).toEqual([SET, RESET]);
    await expect(withStreamingHeadroom(async () => Promise.reject(new Error('alone')))).rejects.toThrow('alone');
    expect(growth()).toEqual([SET, RESET, SET, RESET]);
  });

  it('a streamed upload (spec 1, Upload a file) is read with the room set, and gives it back', async () => {
    const seenWhileRead: string[][] = [];
    const body = Readable.from(
      (function* () {
        seenWhileRead.push(growth());
        yield Buffer.alloc(1024, 1);
      })(),
    );
    const resource = await app.storage.upload(accountId, 'root', 'streamed.bin', body, { size: 1024 });
    expect(resource).toMatchObject({ name: 'streamed.bin', size: 1024 });
    expect(seenWhileRead).toEqual([[SET]]);
    expect(growth()).toEqual([SET, RESET]);
  });

  it("the desktop uploader's streamed upload too", async () => {
    const local = join(work, 'up.bin');
    writeFileSync(local, Buffer.alloc(64 * 1024, 2));
    const resource = await app.uploads.uploader.upload({ accountId, parentId: 'root', localPath: local, name: 'uploaded.bin', overwrite: false });
    expect(resource).toMatchObject({ name: 'uploaded.bin', size: 64 * 1024 });
    expect(growth()).toEqual([SET, RESET]);
  });

  it('a copy to another account (spec 1, Copy: account) streams with the room set', async () => {
    const other = (await app.accounts.connect({ service: 'memory', options: { store: 'streaming-headroom-other' } })).id;
    const source = await app.storage.upload(accountId, 'root', 'to copy.bin', Readable.from([Buffer.alloc(2048, 3)]), { size: 2048 });
    const connector = await app.accounts.storage(other);
    const write = connector.write.bind(connector);
    const seenAtWrite: string[][] = [];
    connector.write = (path, body, opts) => (seenAtWrite.push(growth()), write(path, body, opts));
    vi.mocked(setFlagsFromString).mockClear();
    const copy = await app.storage.copy(accountId, source.id, { parentId: 'root', account: other });
    expect(copy).toMatchObject({ name: 'to copy.bin', size: 2048 });
    expect(seenAtWrite).toEqual([[SET]]);
    expect(growth()).toEqual([SET, RESET]);
  });

  it("the sync engine's transfer of a new local file to the remote side streams with the room set", async () => {
    const local = join(work, 'synced');
    mkdirSync(local);
    writeFileSync(join(local, 'new.txt'), 'a new file');
    const remote = new MemoryConnector('streaming-headroom-sync');
    const seenAtWrite: string[][] = [];
    const watched: StorageConnector = Object.assign(Object.create(remote) as StorageConnector, {
      write: (path: string, body: Readable, opts: Parameters<StorageConnector['write']>[2]) => (seenAtWrite.push(growth()), remote.write(path, body, opts)),
    });
    const { engine, pair } = await pairEngine(syncDb(), watched, local, '/', join(work, 'sync-trash'));
    try {
      await engine.run(pair.id);
    } finally {
      await engine.close();
    }
    expect(seenAtWrite).toEqual([[SET]]);
    expect(growth()).toEqual([SET, RESET]);
  });
});
