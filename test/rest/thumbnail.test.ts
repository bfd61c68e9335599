/**
 * spec 1, Thumbnail: "Response 200: bytes" of a png or jpeg. A read of the image that fails or
 * stops part-way (a backend connection that drops) is answered with 502 upstream_error in the
 * documented error shape, and the process serving it stays up; an image the decoder refuses is
 * 400 invalid_parameters. The memory connector is the reference backend; its read
 * is replaced here by one that sends 64 KiB and then fails or stops.
 */
import { Readable } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let account: number;

beforeAll(async () => {
  s = await startRest();
  account = (await s.app.accounts.connect({ service: 'memory', options: { store: 'thumbnail' } })).id;
});
afterAll(async () => {
  await s?.stop();
});

async function upload(name: string, bytes: Buffer): Promise<string> {
  return (await s.app.storage.upload(account, 'root', name, Readable.from([bytes]), { conflict: 'overwrite' })).id;
}

/** While `use` runs, the account's reads go through `read`. */
async function withReads(read: (bytes: Readable) => Readable, use: () => Promise<void>): Promise<void> {
  const connector = await s.app.accounts.storage(account);
  const original = connector.read.bind(connector);
  connector.read = async (...args: Parameters<typeof original>) => read(await original(...args));
  try {
    await use();
  } finally {
    connector.read = original;
  }
}

/** 64 KiB of the file, then `end` is called on the stream. */
const partWay = (end: (r: Readable) => void) => (real: Readable) => {
  real.destroy();
  const r = new Readable({ read() {} });
  r.push(Buffer.alloc(65536, 7));
  setImmediate(() => end(r));
  return r;
};

const thumbnail = (id: string) => s.call('GET', `/v0/accounts/${account}/files/${encodeURIComponent(id)}/thumbnail?size=32`);

describe('spec 1 Thumbnail', () => {
  it('an image is answered with a png of at most the asked size', async () => {
    const image = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#3070c0' } }).png().toBuffer();
    const res = await thumbnail(await upload('photo.png', image));
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    const meta = await sharp(res.buffer).metadata();
    expect([meta.width, meta.height]).toEqual([32, 21]);
  });

  it.each([
    ['fails', (r: Readable) => r.destroy(new Error('the connection dropped'))],
    ['stops without an error', (r: Readable) => r.destroy()],
  ])('a read that %s part-way is 502 upstream_error, and the server goes on answering', async (_how, end) => {
    const id = await upload('big.png', Buffer.alloc(200_000, 7));
    await withReads(partWay(end), async () => {
      const res = await thumbnail(id);
      expect(res.status, res.text).toBe(502);
      expect(isErrorBody(res.json, 502)).toBe(true);
      expect(res.json.error_code).toBe('upstream_error');
    });
    expect((await s.call('GET', '/v0/accounts')).status).toBe(200);
  });

  it('an image the decoder refuses is 400 invalid_parameters', async () => {
    const res = await thumbnail(await upload('broken.png', Buffer.alloc(300_000, 9)));
    expect(res.status, res.text).toBe(400);
    expect(isErrorBody(res.json, 400)).toBe(true);
    expect(res.json.error_code).toBe('invalid_parameters');
  });
});
