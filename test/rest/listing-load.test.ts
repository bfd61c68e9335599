// Folder listings under load (spec 1, Folders "Retrieve folder contents"): an unchanged folder
// is answered from its last listing's page, every change upstream still shows, and listings do
// not hold back the other routes.
import { chmodSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLocal, importMemory, startRest, type RestServer } from './harness';

let server: RestServer;

beforeAll(async () => {
  server = await startRest();
});

afterAll(async () => {
  await server?.stop();
});

describe('spec 1, Folders: listing an unchanged folder again', () => {
  it('reuses the page made for it, and a change upstream in any field (raw included) makes a new one', async () => {
    const local = await importLocal(server, 'reuse');
    writeFileSync(join(local.folder, 'a.txt'), 'a');
    writeFileSync(join(local.folder, 'b.txt'), 'b');
    chmodSync(join(local.folder, 'b.txt'), 0o644);
    const storage = server.app.storage;
    const first = await storage.list(local.id, 'root', 1, 100);
    const again = await storage.list(local.id, 'root', 1, 100);
    expect(again.items).toBe(first.items);

    // A mode change alters neither size nor mtime: only the entry's `raw` tells.
    chmodSync(join(local.folder, 'b.txt'), 0o600);
    const changed = await storage.list(local.id, 'root', 1, 100);
    expect(changed.items).not.toBe(first.items);
    const res = await server.call('GET', `/v2/accounts/${local.id}/storage/folders/root/contents`);
    expect(res.status).toBe(200);
    const b = res.json.objects.find((o: { name: string }) => o.name === 'b.txt');
    expect(b.raw.object.mode & 0o777).toBe(0o600);
    expect(res.json).toMatchObject({ count: 2, total: 2, page: '1', next_page: null, type: 'object_list', api: 'storage' });

    // Same answer in every version from the reused page (v0 wrapper and members).
    const v0 = await server.call('GET', `/v0/accounts/${local.id}/folders/root/contents`);
    expect(v0.json).toMatchObject({ total: 2, count: 2, page: 1, has_next: false });
    expect(v0.json.objects.map((o: { name: string; raw: { mode: number } }) => [o.name, o.raw.mode & 0o777])).toEqual([
      ['a.txt', expect.any(Number)],
      ['b.txt', 0o600],
    ]);
  });
});

/** One keep-alive connection to the server, for requests written by hand. */
async function openConnection(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** Writes one GET and resolves with the whole answer's status once its body has arrived. */
function get(socket: Socket, path: string, apiKey: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const head = data.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(data.subarray(0, head).toString())?.[1]);
      if (data.length < head + 4 + length) return;
      socket.off('data', onData);
      resolve(Number(data.subarray(9, 12).toString()));
    };
    socket.on('data', onData).once('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: APIKey ${apiKey}\r\n\r\n`);
  });
}

describe('spec 1, Folders: listings and other routes at once', () => {
  it('answers a metadata request read together with many listings before most of them start', async () => {
    const memory = await importMemory(server, `load-${Date.now()}`);
    const folder = await server.app.storage.mkdir(memory.id, 'root', 'Many');
    let fileId = '';
    for (let i = 0; i < 20; i++) {
      const f = await server.app.storage.upload(memory.id, folder.id, `f${i}.txt`, Readable.from([Buffer.from(`${i}`)]));
      fileId ||= f.id;
    }
    const listPath = `/v2/accounts/${memory.id}/storage/folders/${folder.id}/contents`;
    const metaPath = `/v2/accounts/${memory.id}/storage/files/${fileId}`;
    const listings = await Promise.all(Array.from({ length: 12 }, () => openConnection(server.port)));
    const meta = await openConnection(server.port);
    // Every connection accepted and used once, so the requests below are read in one turn.
    expect(await Promise.all(listings.map((s) => get(s, listPath, server.apiKey)))).toEqual(Array(12).fill(200));
    expect(await get(meta, metaPath, server.apiKey)).toBe(200);

    // The order in which the server starts the work (the server runs in this process).
    const order: string[] = [];
    const storage = server.app.storage;
    const { list, get: getResource } = storage;
    storage.list = (...args) => (order.push('list'), list.apply(storage, args));
    storage.get = (...args) => (order.push('get'), getResource.apply(storage, args));
    try {
      // All written before the event loop turns again: the server reads them in one turn,
      // the metadata request last.
      const answers = listings.map((s) => get(s, listPath, server.apiKey));
      const metaAnswer = get(meta, metaPath, server.apiKey);
      expect(await Promise.all([...answers, metaAnswer])).toEqual(Array(13).fill(200));
    } finally {
      storage.list = list;
      storage.get = getResource;
      for (const s of [...listings, meta]) s.destroy();
    }
    expect(order.filter((o) => o === 'list')).toHaveLength(12);
    // Without a bound every listing read in that turn would run before it (12).
    expect(order.indexOf('get')).toBeLessThanOrEqual(4);
  });
});
