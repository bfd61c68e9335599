// spec 1, "Download a file" (and its byte ranges): an SFTP download keeps 16 reads in flight
// on the real OpenSSH sshd (notes/test-servers.md §7), across many SSH window adjustments, on
// a connection with Nagle's algorithm off.
// Piped into a file or the REST answer it reads into a few reused buffers (docs/sftp-smb.md,
// Performance); any other consumer gets chunks of its own. A server killed mid-read fails the
// download instead of leaving it waiting; a sink closed early stops it.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SftpConnector } from '../../src-main/connectors/sftp';
import { ServiceError } from '../../src-main/errors';
import { startRest, type RestServer } from '../rest/harness';
import { startSshd, type Sshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';

const MiB = 1 << 20;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('sftp streamed download', () => {
  let server: Sshd;
  let c: SftpConnector;
  let dir: string;
  // 40 MiB: twenty times the SSH channel window, and more than the reused buffers hold.
  const data = randomBytes(40 * MiB);

  beforeAll(async () => {
    server = await startSshd();
    dir = scratchDir('sftp-read-stream');
    c = new SftpConnector({ host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir }, dir);
    writeFileSync(join(server.dataDir, 'data.bin'), data);
  });
  afterAll(async () => {
    await c?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Pipes `stream` into a file, each write called back after `delayMs` (`onWrite` runs at each);
   * the file's bytes, how many writes reached it and how many distinct buffers they came from.
   */
  const pipeToFile = async (stream: Readable, name: string, delayMs = 0, onWrite?: () => void) => {
    const target = join(dir, name);
    const ws = createWriteStream(target);
    const write = ws.write.bind(ws) as (chunk: Buffer, cb?: (e?: Error | null) => void) => boolean;
    let writes = 0;
    const buffers = new Set<ArrayBufferLike>();
    ws.write = ((chunk: Buffer, cb?: (e?: Error | null) => void) => {
      writes++;
      onWrite?.();
      buffers.add(chunk.buffer);
      return write(chunk, delayMs && cb ? (e) => setTimeout(() => cb(e), delayMs) : cb);
    }) as typeof ws.write;
    await pipeline(stream, ws);
    return { bytes: readFileSync(target), writes, buffers: buffers.size };
  };

  it("the SSH connection has Nagle's algorithm off: READ requests go out as they are made (docs/sftp-smb.md, Performance)", async () => {
    const spy = vi.spyOn(Socket.prototype, 'setNoDelay');
    try {
      const fresh = new SftpConnector({ host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir }, dir);
      await fresh.stat('/data.bin');
      const calls = spy.mock.contexts.map((socket, i) => ({ port: (socket as Socket).remotePort, noDelay: spy.mock.calls[i]![0] ?? true }));
      expect(calls).toContainEqual({ port: server.port, noDelay: true });
      await fresh.close();
    } finally {
      spy.mockRestore();
    }
  });

  it('piped into a file: byte-identical, written from a few reused buffers, not a new one per read', async () => {
    const { bytes, writes, buffers } = await pipeToFile(await c.read('/data.bin'), 'whole.bin');
    expect(sha(bytes)).toBe(sha(data));
    // 40 MiB in reads of up to 255 KiB: 161 or more writes, from at most 24 buffers.
    expect(writes).toBeGreaterThan(160);
    expect(buffers).toBeLessThanOrEqual(24);
  });

  it('piped into a file slower than the server: reads wait for a written buffer, bytes still identical', async () => {
    const { bytes, buffers } = await pipeToFile(await c.read('/data.bin', { start: 0, end: 12 * MiB - 1 }), 'slow.bin', 3);
    expect(sha(bytes)).toBe(sha(data.subarray(0, 12 * MiB)));
    expect(buffers).toBeLessThanOrEqual(24);
  });

  it('byte ranges at odd offsets, piped into a file and read chunk by chunk, are those bytes (spec 1, "Download a file", Range)', async () => {
    for (const [start, end] of [
      [1, 1],
      [261_119, 261_121],
      [1_000_003, 9_999_991],
      [40 * MiB - 7, 40 * MiB - 1],
    ] as const) {
      const { bytes } = await pipeToFile(await c.read('/data.bin', { start, end }), 'range.bin');
      expect(sha(bytes)).toBe(sha(data.subarray(start, end + 1)));
      const chunks: Buffer[] = [];
      for await (const chunk of await c.read('/data.bin', { start, end })) chunks.push(chunk as Buffer);
      expect(sha(Buffer.concat(chunks))).toBe(sha(data.subarray(start, end + 1)));
    }
  });

  it('a consumer that keeps its chunks gets chunks of its own: all of them still right at the end', async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of await c.read('/data.bin')) chunks.push(chunk as Buffer);
    expect(new Set(chunks.map((b) => b.buffer)).size).toBe(chunks.length);
    expect(sha(Buffer.concat(chunks))).toBe(sha(data));
  });

  it('piped after some bytes were read: those go first, then the rest', async () => {
    const stream = await c.read('/data.bin');
    const first = await new Promise<Buffer>((resolve) => stream.once('readable', () => resolve(stream.read(1000) as Buffer)));
    const { bytes } = await pipeToFile(stream, 'after.bin');
    expect(sha(Buffer.concat([first, bytes]))).toBe(sha(data));
    // A range read to its end before the pipe: the rest of it, then the end.
    const small = await c.read('/data.bin', { start: 5, end: 14 });
    await new Promise((resolve) => small.once('readable', resolve));
    const head = small.read(3) as Buffer;
    const rest = await pipeToFile(small, 'after-small.bin');
    expect(Buffer.concat([head, rest.bytes]).equals(data.subarray(5, 15))).toBe(true);
  });

  it('a file that a sink closes early: the download stops and the handle is closed', async () => {
    const stream = await c.read('/data.bin');
    const ws = createWriteStream(join(dir, 'closed.bin'));
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.pipe(ws);
    setTimeout(() => ws.destroy(), 5);
    await finished(ws).catch(() => {});
    await closed;
    expect(stream.readableEnded).toBe(false);
    // The connection is still good for the next download.
    const { bytes } = await pipeToFile(await c.read('/data.bin', { start: 0, end: MiB - 1 }), 'next.bin');
    expect(sha(bytes)).toBe(sha(data.subarray(0, MiB)));
  });

  it('server killed mid-download piped into a file → the download fails with service_not_available, no wait', async () => {
    let killed = false;
    const err = await pipeToFile(await c.read('/data.bin'), 'killed.bin', 3, () => {
      if (killed) return;
      killed = true;
      void server.kill();
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('service_not_available');
    await server.restart();
  });
});

describe('sftp streamed download through the REST route (spec 1, "Download a file")', () => {
  let server: Sshd;
  let rest: RestServer;
  const data = randomBytes(12 * MiB + 12_345);

  beforeAll(async () => {
    server = await startSshd();
    rest = await startRest();
    writeFileSync(join(server.dataDir, 'rest.bin'), data);
  });
  afterAll(async () => {
    await rest?.stop();
    await server?.stop();
  });

  it('answers the file byte-identical, written into the answer from reused buffers', async () => {
    const acc = await rest.call('POST', '/v2/accounts', {
      body: { service: 'sftp', account: server.username, token: server.password, host: server.host, port: server.port, path: server.dataDir },
    });
    expect(acc.status).toBe(201);
    const P = `/v2/accounts/${acc.json.id}/storage/`;
    const list = await rest.call('GET', `${P}folders/root/contents`);
    const id = list.json.objects.find((o: { name: string }) => o.name === 'rest.bin').id as string;
    const spy = vi.spyOn(ServerResponse.prototype, 'write');
    let res;
    let written: unknown[];
    try {
      res = await rest.call('GET', `${P}files/${id}/contents`);
    } finally {
      written = spy.mock.calls.map((call) => call[0]);
      spy.mockRestore();
    }
    expect(res.status).toBe(200);
    expect(res.buffer.length).toBe(data.length);
    expect(sha(res.buffer)).toBe(sha(data));
    // 12 MiB in reads of 255 KiB: 48 full writes, from at most 24 buffers.
    const chunks = written.filter((c): c is Buffer => Buffer.isBuffer(c) && c.length > 64 * 1024);
    expect(chunks.length).toBeGreaterThanOrEqual(48);
    expect(new Set(chunks.map((c) => c.buffer)).size).toBeLessThanOrEqual(24);
  });
});
