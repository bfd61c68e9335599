// Answers Node's HTTP server would write itself (README "Errors": every error has the body
// {status_code, error_code, message, id}): a request without Host, an unsupported Expect.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { createHttpServer, type HttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';

let app: App;
let http: HttpServer;

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('node-errors'), defaultLocalFolder: false });
  http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: 'node-errors-token-0123456789' });
});
afterAll(async () => {
  await http?.close();
  await app?.close();
});

/** Sends a raw request and parses the answer's status, headers and JSON body. */
function raw(request: string): Promise<{ status: number; headers: string; body: any }> {
  return new Promise((resolve, reject) => {
    const s = connect(http.port, '127.0.0.1', () => s.write(request));
    let out = '';
    s.on('data', (d) => {
      out += d;
      const end = out.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(out)?.[1];
      if (end !== -1 && length !== undefined && out.length >= end + 4 + Number(length)) s.destroy();
    });
    s.on('error', reject);
    s.on('close', () => {
      const [head, body] = [out.slice(0, out.indexOf('\r\n\r\n')), out.slice(out.indexOf('\r\n\r\n') + 4)];
      resolve({ status: Number(head.split(' ')[1]), headers: head, body: body ? JSON.parse(body) : undefined });
    });
  });
}

/** The headers of a WebSocket upgrade, each followed by CRLF. */
const UPGRADE = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';

const documented = (status: number) => ({ status_code: status, error_code: 'bad_request', message: expect.any(String), id: expect.any(String) });

describe("Node's own error answers carry the documented body (README, Errors)", () => {
  it('a request without a Host header: 400 bad_request, JSON', async () => {
    const r = await raw('GET /v1/accounts HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(r.status).toBe(400);
    expect(r.headers).toMatch(/content-type: application\/json/i);
    expect(r.body).toEqual(documented(400));
  });

  it('an Expect header other than 100-continue: 417, JSON', async () => {
    const r = await raw(`PUT /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1:${http.port}\r\nExpect: 200-ok\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx`);
    expect(r.status).toBe(417);
    expect(r.headers).toMatch(/content-type: application\/json/i);
    expect(r.body).toEqual(documented(417));
  });

  it('a foreign Host still gets 403 forbidden, a right one is served', async () => {
    const foreign = await raw('GET /nothing HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
    expect(foreign.body).toMatchObject({ status_code: 403, error_code: 'forbidden' });
    const ok = await raw(`GET /nothing HTTP/1.1\r\nHost: localhost:${http.port}\r\nConnection: close\r\n\r\n`);
    expect(ok.body).toMatchObject({ status_code: 404, error_code: 'not_found' });
  });

  // docs/rest.md, Authentication (RFC 9112 §3.2): no Host, or more than one, is 400.
  it('two Host headers: 400 bad_request, JSON, on routes and on WebSocket upgrades', async () => {
    for (const hosts of ['Host: localhost\r\nHost: evil.com', 'Host: evil.com\r\nHost: localhost']) {
      const r = await raw(`GET /nothing HTTP/1.1\r\n${hosts}\r\nConnection: close\r\n\r\n`);
      expect(r.status, hosts).toBe(400);
      expect(r.body).toEqual(documented(400));
      const ws = await raw(`GET /ws?token=node-errors-token-0123456789 HTTP/1.1\r\n${hosts}\r\n${UPGRADE}\r\n`);
      expect(ws.status, hosts).toBe(400);
    }
  });

  // docs/rest.md, Authentication (RFC 9112 §3.2.2): the authority of an absolute-form target
  // replaces Host and passes the same guard.
  it('an absolute-form target: a foreign authority is 403 whatever Host says; a local one is served', async () => {
    const foreign = await raw(`GET http://evil.example/nothing HTTP/1.1\r\nHost: localhost:${http.port}\r\nConnection: close\r\n\r\n`);
    expect(foreign.body).toMatchObject({ status_code: 403, error_code: 'forbidden' });
    const local = await raw(`GET http://localhost:${http.port}/nothing?x=1 HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
    expect(local.body).toMatchObject({ status_code: 404, error_code: 'not_found', message: 'No route for GET /nothing.' });
    const ws = await raw(`GET http://evil.example/ws?token=node-errors-token-0123456789 HTTP/1.1\r\nHost: localhost:${http.port}\r\n${UPGRADE}\r\n`);
    expect(ws.status).toBe(403);
    const wsLocal = await raw(`GET http://localhost:${http.port}/ws?token=wrong-token HTTP/1.1\r\nHost: evil.example\r\n${UPGRADE}\r\n`);
    expect(wsLocal.status).toBe(401);
  });
});
