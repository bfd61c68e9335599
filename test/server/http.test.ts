// The local server of both modes: Host guard (DNS rebinding), UI token, the contract over a
// WebSocket, browser upload/download.
import { Readable } from 'node:stream';
import { request } from 'undici';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { createHttpServer, type HttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';

let app: App;
let http: HttpServer;
let account: number;
const token = 'test-ui-token-0123456789abcdef';

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('http'), defaultLocalFolder: false });
  account = (await app.accounts.connect({ service: 'memory', options: { store: `http-${Date.now()}` } })).id;
  http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: token });
});
afterAll(async () => {
  await http?.close();
  await app?.close();
});

function call(ws: WebSocket, id: number, procedure: string, input: unknown): Promise<any> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const m = JSON.parse(String(data));
      if (m.type !== 'result' || m.id !== id) return;
      ws.off('message', onMessage);
      resolve(m.result);
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ type: 'call', id, procedure, input }));
  });
}

/** A one-use download URL of the web UI (contract files.downloadTicket), asked over the WebSocket. */
async function downloadUrl(id: string): Promise<string> {
  const ws = await openSocket();
  try {
    const r = await call(ws, 1, 'files.downloadTicket', { account, id });
    return `${http.url}${r.value.url}`;
  } finally {
    ws.close();
  }
}

function openSocket(headers: Record<string, string> = {}, t = token): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${http.port}/ws?token=${t}`, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

describe('Host guard (DNS-rebinding protection)', () => {
  it('refuses a request whose Host is evil.example, with the documented error shape', async () => {
    const res = await request(`${http.url}/app/download?account=1&id=x&token=${token}`, { headers: { host: 'evil.example' } });
    expect(res.statusCode).toBe(403);
    const body = (await res.body.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status_code: 403, error_code: 'forbidden' });
    expect(typeof body.message).toBe('string');
  });
  it('accepts localhost and 127.0.0.1 with a port', async () => {
    for (const host of [`localhost:${http.port}`, `127.0.0.1:${http.port}`]) {
      const res = await request(`${http.url}/nothing-here`, { headers: { host } });
      await res.body.dump();
      expect(res.statusCode).toBe(404);
    }
  });
  it('refuses WebSocket upgrades from another origin or with a rebinding Host', async () => {
    await expect(openSocket({ origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
    await expect(openSocket({ host: 'evil.example' })).rejects.toThrow('HTTP 403');
  });
});

describe('requests refused before routing', () => {
  it('answers a malformed URL escape and an oversized header with the documented JSON body', async () => {
    const bad = await request(`${http.url}/v1/accounts/%E0%A4%A`);
    expect(bad.headers['content-type']).toBe('application/json');
    expect(await bad.body.json()).toMatchObject({ status_code: 400, error_code: 'bad_request' });
    const { connect } = await import('node:net');
    const raw = await new Promise<string>((resolve) => {
      const s = connect(http.port, '127.0.0.1', () => s.write(`GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
      let out = '';
      s.on('data', (d) => (out += d));
      s.on('close', () => resolve(out));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ status_code: 431, error_code: 'bad_request', id: expect.any(String) });
  });
  it('sends errors with Content-Type application/json exactly', async () => {
    const res = await request(`${http.url}/nothing`);
    expect(res.headers['content-type']).toBe('application/json');
    await res.body.dump();
  });
});

describe('UI token', () => {
  it('refuses a WebSocket without the right token', async () => {
    await expect(openSocket({}, 'wrong')).rejects.toThrow('HTTP 401');
  });
  it('refuses uploads without the token', async () => {
    const res = await request(`${http.url}/app/upload?account=${account}&parent=root&name=a.txt`, { method: 'POST', body: 'x' });
    expect(res.statusCode).toBe(401);
    expect(((await res.body.json()) as { error_code: string }).error_code).toBe('unauthorized');
  });
});

describe('contract over the WebSocket', () => {
  it('calls procedures, validates input, and pushes events', async () => {
    const ws = await openSocket({ origin: `http://127.0.0.1:${http.port}` });
    const events: string[] = [];
    ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if (m.type === 'event') events.push(m.name);
    });
    const list = await call(ws, 1, 'accounts.list', {});
    expect(list.ok).toBe(true);
    expect(list.value.map((a: { id: number }) => a.id)).toContain(account);

    const bad = await call(ws, 2, 'files.list', { account: 'one', folder: 'root' });
    expect(bad).toMatchObject({ ok: false, error: { code: 'invalid_parameters', status: 400 } });

    const unknown = await call(ws, 3, 'files.explode', {});
    expect(unknown).toMatchObject({ ok: false, error: { code: 'not_found' } });

    const folder = await call(ws, 4, 'files.mkdir', { account, parent: 'root', name: 'Docs' });
    expect(folder).toMatchObject({ ok: true, value: { name: 'Docs', kind: 'folder' } });
    await new Promise((r) => setTimeout(r, 50));
    expect(events).toContain('files.changed');
    ws.close();
  });
  it('refuses to write a download to a caller-chosen local path in headless mode', async () => {
    const ws = await openSocket();
    const up = await call(ws, 10, 'files.mkdir', { account, parent: 'root', name: 'x' });
    const res = await call(ws, 11, 'files.download', { account, id: up.value.id, to: '/tmp/should-not-exist-tributary' });
    expect(res).toMatchObject({ ok: false, error: { code: 'not_implemented' } });
    const { existsSync } = await import('node:fs');
    expect(existsSync('/tmp/should-not-exist-tributary')).toBe(false);
    ws.close();
  });
  it('closes the socket on a malformed message instead of crashing', async () => {
    const ws = await openSocket();
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send('{not json');
    expect(await closed).toBe(1007);
  });
});

describe('browser upload and download', () => {
  it('uploads raw bytes of any content type, renames on conflict, downloads byte-identical with ranges', async () => {
    const bytes = Buffer.from('hello, tributary \u2713');
    const up = async () =>
      request(`${http.url}/app/upload?account=${account}&parent=root&name=${encodeURIComponent('hé llo.txt')}`, {
        method: 'POST',
        body: bytes,
        headers: { 'x-tributary-token': token, 'content-type': 'application/json' },
      });
    const first = await up();
    expect(first.statusCode).toBe(201);
    const file = (await first.body.json()) as { id: string; name: string; size: number };
    expect(file).toMatchObject({ name: 'hé llo.txt', size: bytes.length });
    const second = (await (await up()).body.json()) as { name: string };
    expect(second.name).toBe('hé llo (1).txt');

    const down = await request(await downloadUrl(file.id));
    expect(down.statusCode).toBe(200);
    expect(down.headers['content-disposition']).toContain("filename*=UTF-8''h%C3%A9%20llo.txt");
    expect(Buffer.from(await down.body.arrayBuffer())).toEqual(bytes);

    const part = await request(await downloadUrl(file.id), { headers: { range: 'bytes=7-15' } });
    expect(part.statusCode).toBe(206);
    expect(Buffer.from(await part.body.arrayBuffer())).toEqual(bytes.subarray(7, 16));
  });
  it('records no transfer for a web upload: the page that sends it shows it in Transfers, once', async () => {
    const before = new Set(app.transfers.list().map((t) => t.id));
    const res = await request(`${http.url}/app/upload?account=${account}&parent=root&name=once.txt`, { method: 'POST', body: 'once', headers: { 'x-tributary-token': token } });
    expect(res.statusCode).toBe(201);
    await res.body.dump();
    expect(app.transfers.list().filter((t) => !before.has(t.id))).toEqual([]);
  });
  it('gives validators so a browser resumes safely: If-Range with the ETag continues, a stale one gets the whole file; past the end is 416', async () => {
    const bytes = Buffer.from('0123456789'.repeat(100));
    const file = await app.storage.upload(account, 'root', 'resume.txt', Readable.from([bytes]), { conflict: 'overwrite', size: bytes.length });
    const url = await downloadUrl(file.id);
    const whole = await request(url);
    await whole.body.dump();
    const etag = whole.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    expect(new Date(whole.headers['last-modified'] as string).toString()).not.toBe('Invalid Date');
    const resumed = await request(url, { headers: { range: 'bytes=600-', 'if-range': etag } });
    expect(resumed.statusCode).toBe(206);
    expect(resumed.headers['content-range']).toBe('bytes 600-999/1000');
    expect(Buffer.from(await resumed.body.arrayBuffer())).toEqual(bytes.subarray(600));
    // The file changed since the browser's first bytes: the whole new file, not a splice.
    const changed = Buffer.from('abcdefghij'.repeat(120));
    await app.storage.upload(account, 'root', 'resume.txt', Readable.from([changed]), { conflict: 'overwrite', size: changed.length });
    const stale = await request(url, { headers: { range: 'bytes=600-', 'if-range': etag } });
    expect(stale.statusCode).toBe(200);
    expect(stale.headers.etag).not.toBe(etag);
    expect(Buffer.from(await stale.body.arrayBuffer())).toEqual(changed);
    const beyond = await request(await downloadUrl(file.id), { headers: { range: 'bytes=5000-' } });
    expect(beyond.statusCode).toBe(416);
    expect(beyond.headers['content-range']).toBe('bytes */1200');
    expect(await beyond.body.json()).toMatchObject({ status_code: 416, error_code: 'range_not_satisfiable' });
  });
  it('takes a web upload in parts (uploads.begin, PUT /app/upload/part, uploads.complete), in any order, with clear errors', async () => {
    const ws = await openSocket();
    try {
      const data = Buffer.alloc(12 * 1024 * 1024 + 5);
      for (let i = 0; i < data.length; i += 4096) data[i] = (i / 4096) & 0xff;
      const begun = await call(ws, 1, 'uploads.begin', { account, parent: 'root', name: 'parts.bin', size: data.length });
      expect(begun).toMatchObject({ ok: true, value: { parallel: true } });
      const { session, partSize } = begun.value as { session: number; partSize: number };
      const put = (n: number, body: Buffer, t = token) =>
        request(`${http.url}/app/upload/part?account=${account}&session=${session}&part=${n}`, { method: 'PUT', body, headers: { 'x-tributary-token': t } });
      const count = Math.ceil(data.length / partSize);
      const slice = (n: number) => data.subarray((n - 1) * partSize, Math.min(data.length, n * partSize));
      const unauthorized = await put(1, slice(1), 'wrong');
      expect(unauthorized.statusCode).toBe(401);
      await unauthorized.body.dump();
      const bad = await put(10_001, slice(1));
      expect(await bad.body.json()).toMatchObject({ status_code: 400, error_code: 'invalid_parameters' });
      for (let n = count; n >= 1; n--) {
        const res = await put(n, slice(n));
        expect(await res.body.json()).toEqual({ part: n, size: slice(n).length });
      }
      expect(await call(ws, 2, 'uploads.parts', { account, session })).toEqual({ ok: true, value: Array.from({ length: count }, (_, i) => i + 1) });
      const done = await call(ws, 3, 'uploads.complete', { account, session });
      expect(done).toMatchObject({ ok: true, value: { name: 'parts.bin', size: data.length } });
      const { stream } = await app.storage.download(account, done.value.id);
      const got: Buffer[] = [];
      for await (const c of stream) got.push(c as Buffer);
      expect(Buffer.concat(got).equals(data)).toBe(true);
      expect(await call(ws, 4, 'uploads.abort', { account, session })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    } finally {
      ws.close();
    }
  });
  it('answers a tampered id with not_found, not a crash', async () => {
    const res = await request(await downloadUrl('A'.repeat(60)));
    expect(res.statusCode).toBe(404);
    expect(((await res.body.json()) as { error_code: string }).error_code).toBe('not_found');
  });
});
