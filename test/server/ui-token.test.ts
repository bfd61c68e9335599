// The web UI token and the browser's downloads (docs/security.md, "The web UI token"): a random
// secret of its own, kept for existing installs, rotatable (contract uiToken.rotate, `serve
// ui-token rotate`) with the old token refused over HTTP and WebSocket at once; downloads by
// one-use tickets that hold no token.
import { Readable } from 'node:stream';
import { request } from 'undici';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { openDb } from '../../src-main/cache/db';
import { SettingsStore } from '../../src-main/cache/queries/settings';
import { LocalAccess, localAccess, TICKET_RESUME_MS, TICKET_TTL_MS } from '../../src-main/server/access';
import type { HttpServer } from '../../src-main/server/http';
import { startLocalServer } from '../../src-main/server/local';
import { scratchDir } from '../servers/util';
import { join } from 'node:path';

const legacyToken = (app: App) => app.keyring.key('ui-token').toString('base64url').slice(0, 32);

describe('the UI token is a secret of its own', () => {
  it('a new install gets a random token, not one derived from the master key, and keeps it across restarts', async () => {
    const dir = scratchDir('ui-token-new');
    let app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    const token = localAccess(app).current();
    expect(token).toMatch(/^[\w-]{32}$/);
    expect(token).not.toBe(legacyToken(app));
    await app.close();
    app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    expect(localAccess(app).current()).toBe(token);
    await app.close();
  });

  it('an install from before keeps the URL it printed (the derived token), until it is rotated', async () => {
    const dir = scratchDir('ui-token-old');
    let app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    await app.close();
    // As an older version left it: a master key, no token of its own.
    app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    expect(app.settings.get('uiToken', null)).toBeNull();
    const access = localAccess(app);
    expect(access.current()).toBe(legacyToken(app));
    const rotated = access.rotate();
    expect(rotated).not.toBe(legacyToken(app));
    expect(access.current()).toBe(rotated);
    await app.close();
  });
});

describe('rotation refuses the old token everywhere (HTTP and WebSocket)', () => {
  let app: App;
  let http: HttpServer;
  let account: number;
  beforeAll(async () => {
    app = await createApp({ dataDir: scratchDir('ui-token-rotate'), defaultLocalFolder: false });
    account = (await app.accounts.connect({ service: 'memory', options: { store: `ui-token-${Date.now()}` } })).id;
    http = await startLocalServer(app, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await http?.close();
    await app?.close();
  });

  const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

  function open(token: string): Promise<WebSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${http.port}/ws?token=${token}`);
      ws.once('open', () => resolve(ws));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }
  let n = 0;
  function call(ws: WebSocket, procedure: string, input: unknown): Promise<{ result?: any; closed?: number }> {
    const id = ++n;
    return new Promise((resolve) => {
      const onMessage = (d: WebSocket.RawData) => {
        const m = JSON.parse(String(d));
        if (m.type === 'result' && m.id === id) resolve({ result: m.result });
      };
      ws.on('message', onMessage);
      ws.once('close', (code) => resolve({ closed: code }));
      ws.send(JSON.stringify({ type: 'call', id, procedure, input }));
    });
  }
  const closed = (ws: WebSocket) => new Promise<number>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve(-1) : ws.once('close', (code) => resolve(code))));
  const upload = (token: string) =>
    request(`${http.url}/app/upload?account=${account}&parent=root&name=x.txt`, { method: 'POST', body: 'x', headers: { 'x-tributary-token': token } });

  it('uiToken.rotate answers the new link; the old token is refused by HTTP and WebSocket, open sockets are closed with 4001', async () => {
    const old = tokenOf(http.uiUrl);
    const ws = await open(old);
    const bystander = await open(old);
    const ticket = (await call(ws, 'files.downloadTicket', { account, id: (await app.storage.upload(account, 'root', 'a.txt', Readable.from([Buffer.from('a')]), { size: 1 })).id })).result.value.url;
    const bystanderClosed = closed(bystander);
    const r = await call(ws, 'uiToken.rotate', {});
    expect(r.result).toMatchObject({ ok: true, value: { token: expect.stringMatching(/^[\w-]{32}$/), url: `${http.url}/?token=${r.result.value.token}` } });
    const fresh = r.result.value.token as string;
    expect(fresh).not.toBe(old);
    expect(await bystanderClosed).toBe(4001);
    await expect(open(old)).rejects.toThrow('HTTP 401');
    const refused = await upload(old);
    expect(refused.statusCode).toBe(401);
    expect(await refused.body.json()).toMatchObject({ status_code: 401, error_code: 'unauthorized' });
    // Download tickets issued before the rotation are gone too.
    expect((await request(`${http.url}${ticket}`)).statusCode).toBe(404);
    // The new token works, and is the one the server prints.
    expect(tokenOf(http.uiUrl)).toBe(fresh);
    const ok = await upload(fresh);
    expect(ok.statusCode).toBe(201);
    await ok.body.dump();
    const again = await open(fresh);
    expect((await call(again, 'accounts.list', {})).result.ok).toBe(true);
    again.close();
  });

  it('a rotation by another process (serve ui-token rotate) closes an open socket at its next call', async () => {
    const current = tokenOf(http.uiUrl);
    const ws = await open(current);
    expect((await call(ws, 'accounts.list', {})).result.ok).toBe(true);
    // Another process on the same data folder: its own database connection and LocalAccess.
    const db = openDb(join(app.dataDir, 'tributary.db'));
    const other = new LocalAccess({ settings: new SettingsStore(db), keyring: app.keyring });
    const fresh = other.rotate();
    db.close();
    expect(await call(ws, 'accounts.list', {})).toEqual({ closed: 4001 });
    await expect(open(current)).rejects.toThrow('HTTP 401');
    (await open(fresh)).close();
  });
});

describe('browser downloads by one-use tickets', () => {
  let app: App;
  let http: HttpServer;
  let account: number;
  let fileId: string;
  const bytes = Buffer.from('0123456789'.repeat(50));
  beforeAll(async () => {
    app = await createApp({ dataDir: scratchDir('tickets'), defaultLocalFolder: false });
    account = (await app.accounts.connect({ service: 'memory', options: { store: `tickets-${Date.now()}` } })).id;
    fileId = (await app.storage.upload(account, 'root', 't.bin', Readable.from([bytes]), { size: bytes.length })).id;
    http = await startLocalServer(app, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await http?.close();
    await app?.close();
  });

  it('a ticket URL holds no token, downloads once, then only the browser resume of that download (Range + If-Range)', async () => {
    const path = localAccess(app).issueTicket(account, fileId);
    const token = new URL(http.uiUrl).searchParams.get('token')!;
    expect(path).toMatch(/^\/app\/download\/[\w-]{43}$/);
    expect(path).not.toContain(token);
    const first = await request(`${http.url}${path}`);
    expect(first.statusCode).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    const etag = first.headers.etag as string;
    expect(Buffer.from(await first.body.arrayBuffer()).equals(bytes)).toBe(true);
    // Used: a second full download, or a range without the validator, is refused.
    const second = await request(`${http.url}${path}`);
    expect(second.statusCode).toBe(404);
    expect(await second.body.json()).toMatchObject({ status_code: 404, error_code: 'not_found' });
    expect((await request(`${http.url}${path}`, { headers: { range: 'bytes=100-' } })).statusCode).toBe(404);
    expect((await request(`${http.url}${path}`, { headers: { range: 'bytes=100-', 'if-range': '"other"' } })).statusCode).toBe(404);
    const resumed = await request(`${http.url}${path}`, { headers: { range: 'bytes=100-', 'if-range': etag } });
    expect(resumed.statusCode).toBe(206);
    expect(Buffer.from(await resumed.body.arrayBuffer()).equals(bytes.subarray(100))).toBe(true);
    // The old form, with the token in the address, is gone.
    const old = await request(`${http.url}/app/download?account=${account}&id=${fileId}&token=${token}`);
    expect(old.statusCode).toBe(404);
    await old.body.dump();
  });

  it('an unused ticket expires after TICKET_TTL_MS; a used one stops resuming after TICKET_RESUME_MS', () => {
    let now = 1_000_000;
    const access = new LocalAccess(app, () => now);
    const ticket = (p: string) => p.split('/').pop()!;
    const a = ticket(access.issueTicket(account, fileId));
    now += TICKET_TTL_MS + 1;
    expect(() => access.redeem(a, { range: false })).toThrow(expect.objectContaining({ code: 'not_found' }));
    const b = ticket(access.issueTicket(account, fileId));
    access.redeem(b, { range: false }).used('"e"');
    now += TICKET_RESUME_MS - 1;
    expect(access.redeem(b, { range: true, ifRange: '"e"' })).toMatchObject({ account, id: fileId });
    now += 2;
    expect(() => access.redeem(b, { range: true, ifRange: '"e"' })).toThrow(expect.objectContaining({ code: 'not_found' }));
  });
});
