/**
 * Property-based fuzzing of the web UI's WebSocket (the contract over `/ws`, RFC 6455 framing),
 * as test/rest/fuzz.test.ts does for REST: raw frames with random opcodes, reserved bits, bad
 * UTF-8, huge announced lengths, missing masks and fragments; then well-framed messages with
 * random JSON shapes, unknown procedures and wrong input types. After each, the server still
 * answers a normal call: a bad frame ends that one socket, never the process.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { procedures, WS_MAX_MESSAGE_BYTES } from '../../src-main/contract';
import { createHttpServer, type HttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const token = 'ws-fuzz-token-0123456789abcdef';
let app: App;
let http: HttpServer;
let probe: WebSocket;

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('ws-fuzz'), defaultLocalFolder: false });
  await app.accounts.connect({ service: 'memory', options: { store: `ws-fuzz-${Date.now()}` } });
  http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: token });
  probe = await openSocket();
});
afterAll(async () => {
  probe?.terminate();
  await http?.close();
  await app?.close();
});

function openSocket(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${http.port}/ws?token=${token}`);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

let nextId = 1;
/** One call; resolves with its result, or with the close code when the server ends the socket. */
function call(ws: WebSocket, procedure: unknown, input: unknown, raw?: string): Promise<{ result?: any; closed?: number }> {
  const id = nextId++;
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const m = JSON.parse(String(data));
      if (m.type === 'result' && m.id === id) done({ result: m.result });
    };
    const onClose = (code: number) => done({ closed: code });
    const done = (v: { result?: any; closed?: number }) => {
      ws.off('message', onMessage);
      ws.off('close', onClose);
      resolve(v);
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.send(raw ?? JSON.stringify({ type: 'call', id, procedure, input }));
  });
}

/** Sends a raw text message; resolves with the first result that comes back, or the close code. */
function sendAny(ws: WebSocket, raw: string): Promise<{ result?: any; closed?: number }> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const m = JSON.parse(String(data));
      if (m.type === 'result') done({ result: m.result });
    };
    const onClose = (code: number) => done({ closed: code });
    const done = (v: { result?: any; closed?: number }) => {
      ws.off('message', onMessage);
      ws.off('close', onClose);
      resolve(v);
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.send(raw);
  });
}

/** The server is alive and serving calls: a normal call on the long-lived socket answers. */
async function stillServes(): Promise<void> {
  const r = await call(probe, 'accounts.list', {});
  expect(r.result?.ok).toBe(true);
}

/** A raw TCP connection that completed the WebSocket handshake. */
function rawSocket(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(http.port, '127.0.0.1', () => {
      s.write(
        `GET /ws?token=${token} HTTP/1.1\r\nHost: 127.0.0.1:${http.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.off('data', onData);
      if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(head.split('\r\n')[0]));
      resolve(s);
    };
    s.on('data', onData);
    s.on('error', () => {}); // the server may reset it: that is its right
  });
}

interface Frame {
  fin: boolean;
  rsv: number;
  opcode: number;
  masked: boolean;
  payload: Buffer;
  /** Announce this length instead of the payload's (huge or lying lengths). */
  announced?: number;
}

function encode(f: Frame): Buffer {
  const len = f.announced ?? f.payload.length;
  const head: number[] = [(f.fin ? 0x80 : 0) | (f.rsv << 4) | f.opcode];
  const mask = f.masked ? 0x80 : 0;
  let ext = Buffer.alloc(0);
  if (len < 126) head.push(mask | len);
  else if (len < 65536) {
    head.push(mask | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(len);
  } else {
    head.push(mask | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(BigInt(len));
  }
  const key = randomBytes(4);
  const body = Buffer.from(f.payload);
  if (f.masked) for (let i = 0; i < body.length; i++) body[i]! ^= key[i % 4]!;
  return Buffer.concat([Buffer.from(head), ext, f.masked ? key : Buffer.alloc(0), body]);
}

/** Writes the frames, then waits until the server closes the socket or has read them all. */
async function sendRaw(frames: Frame[]): Promise<void> {
  const s = await rawSocket();
  const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
  for (const f of frames) s.write(encode(f));
  // Frames the server is still waiting on the rest of (a lying length) never complete: the
  // next normal call proves the server read what it got; then this client leaves.
  await Promise.race([closed, stillServes()]);
  s.destroy();
  await closed;
}

describe('WebSocket fuzz (the contract over /ws)', () => {
  const badUtf8 = fc.constantFrom(Buffer.from([0xc3, 0x28]), Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), Buffer.from('{"a":"\xe9"}', 'latin1'));
  const json = fc.json().map((j) => Buffer.from(j));
  const call0 = fc.constant(Buffer.from(JSON.stringify({ type: 'call', id: 1, procedure: 'accounts.list', input: {} })));
  const payload = fc.oneof(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), badUtf8, json, call0);
  const frame = fc.record({
    fin: fc.boolean(),
    rsv: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, { arbitrary: fc.integer({ min: 1, max: 7 }), weight: 1 }),
    // 0x3–0x7 and 0xB–0xF are reserved opcodes.
    opcode: fc.oneof({ arbitrary: fc.constantFrom(0x0, 0x1, 0x2, 0x8, 0x9, 0xa), weight: 3 }, { arbitrary: fc.integer({ min: 0, max: 15 }), weight: 1 }),
    masked: fc.oneof({ arbitrary: fc.constant(true), weight: 5 }, { arbitrary: fc.constant(false), weight: 1 }),
    payload,
    announced: fc.option(fc.constantFrom(WS_MAX_MESSAGE_BYTES + 1, 2 ** 32, 2 ** 53 - 1, 125, 65_535, 70_000), { freq: 4 }).map((v) => v ?? undefined),
  });

  it('never crashes on random raw frames (opcodes, reserved bits, bad UTF-8, huge lengths, fragments)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 4 }), async (frames) => {
        await sendRaw(frames);
        await stillServes();
      }),
      { numRuns: RUNS },
    );
  });

  it('a message over the size limit closes that socket with 1009, and the server lives on', async () => {
    const ws = await openSocket();
    const big = JSON.stringify({ type: 'call', id: 1, procedure: 'accounts.list', input: { pad: 'x'.repeat(WS_MAX_MESSAGE_BYTES) } });
    const r = await call(ws, null, null, big);
    expect(r.closed).toBe(1009);
    await stillServes();
  });

  it('invalid UTF-8 in a text frame closes that socket with 1007; a reserved opcode with 1002', async () => {
    for (const [frames, code] of [
      [[{ fin: true, rsv: 0, opcode: 0x1, masked: true, payload: Buffer.from([0xc3, 0x28]) }], 1007],
      [[{ fin: true, rsv: 0, opcode: 0x3, masked: true, payload: Buffer.from('x') }], 1002],
      [[{ fin: true, rsv: 4, opcode: 0x1, masked: true, payload: Buffer.from('{}') }], 1002],
    ] as [Frame[], number][]) {
      const s = await rawSocket();
      const got = new Promise<number>((resolve) => s.once('data', (d: Buffer) => resolve(d[0] === 0x88 ? d.readUInt16BE(2) : -1)));
      for (const f of frames) s.write(encode(f));
      expect(await got).toBe(code);
      s.destroy();
      await stillServes();
    }
  });

  it('random JSON shapes, unknown procedures and wrong input types get an error result or a closed socket, never a crash', async () => {
    const names = Object.keys(procedures).filter((n) => !/delete|revoke|rotate|remove|abort|clear|cancel|disconnect|set|update|move|rename|send/i.test(n));
    const procedure = fc.oneof(fc.constantFrom(...names), fc.constantFrom('nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'files.'), fc.string({ maxLength: 20 }), fc.jsonValue());
    const input = fc.oneof(fc.jsonValue(), fc.dictionary(fc.constantFrom('account', 'id', 'folder', 'page', 'name', 'q', 'session'), fc.jsonValue()));
    const message = fc.oneof(
      fc.tuple(procedure, input).map(([p, i]) => ({ p, i, raw: undefined as string | undefined })),
      fc.jsonValue().map((j) => ({ p: null, i: null, raw: JSON.stringify(j) })),
      fc.record({ type: fc.jsonValue(), id: fc.oneof(fc.integer(), fc.jsonValue()), procedure, input }).map((m) => ({ p: null, i: null, raw: JSON.stringify(m) })),
    );
    let ws = await openSocket();
    await fc.assert(
      fc.asyncProperty(message, async (m) => {
        if (ws.readyState !== WebSocket.OPEN) ws = await openSocket();
        const r = m.raw === undefined ? await call(ws, m.p, m.i) : await sendAny(ws, m.raw);
        if (r.result && typeof m.p === 'string' && !Object.hasOwn(procedures, m.p)) {
          expect(r.result).toMatchObject({ ok: false, error: { code: 'not_found' } });
        }
        if (r.result && !r.result.ok) expect(r.result.error.code).not.toBe('internal_error');
        await stillServes();
      }),
      { numRuns: RUNS },
    );
    ws.terminate();
  });

  // The request target of an upgrade is the client's text: one URL() cannot parse is refused
  // with 400 before any other check, as one for another path is with 404.
  it.each([
    ['//[', 400],
    ['http://127.0.0.1:99999/ws', 400],
    ['/ws?token=%zz', 401],
    ['/elsewhere', 404],
  ])('an upgrade to %s is answered %i, and the server lives on', async (target, status) => {
    const head = await new Promise<string>((resolve, reject) => {
      const s = connect(http.port, '127.0.0.1', () => {
        s.write(
          `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${http.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    expect(head.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${{ 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found' }[status]}`);
    await stillServes();
  });
});
