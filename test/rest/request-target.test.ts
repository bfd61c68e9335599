/**
 * The HTTP layer below the REST routes, as a raw client sends it: request targets in absolute form
 * (what `curl --proxy` sends), the Host header counted, and methods no route has.
 */
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importMemory, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let account: number;

beforeAll(async () => {
  s = await startRest();
  account = (await importMemory(s, 'request-target')).id;
});
afterAll(async () => {
  await s?.stop();
});

/** Sends `head` (request line and headers, without the blank line) and `body`, and parses the answer. */
function raw(head: string, body = ''): Promise<{ status: number; headers: string; body: any }> {
  return new Promise((resolve, reject) => {
    const socket = connect(s.port, '127.0.0.1', () => socket.write(`${head}\r\nConnection: close\r\n\r\n${body}`));
    let out = '';
    socket.on('data', (d) => (out += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const end = out.indexOf('\r\n\r\n');
      const body = out.slice(end + 4);
      resolve({ status: Number(out.split(' ')[1]), headers: out.slice(0, end), body: body ? JSON.parse(body) : undefined });
    });
  });
}

const auth = () => `Authorization: APIKey ${s.apiKey}`;

describe('absolute-form request targets (docs/rest.md, Authentication: RFC 9112 §3.2.2)', () => {
  it('GET http://localhost:PORT/v2/accounts/{id} is served like its path, query included', async () => {
    const one = await raw(`GET http://localhost:${s.port}/v2/accounts/${account} HTTP/1.1\r\nHost: localhost:${s.port}\r\n${auth()}`);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ id: account, api: 'meta' });
    const list = await raw(`GET http://127.0.0.1:${s.port}/v2/accounts?page_size=1 HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n${auth()}`);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body).toMatchObject({ count: 1, type: 'object_list' });
    const missing = await raw(`GET http://localhost:${s.port}/v2/nothing HTTP/1.1\r\nHost: localhost\r\n${auth()}`);
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('No route for GET /v2/nothing.');
  });

  it("the target's authority replaces Host and passes the same guard: a foreign one is 403, credentials in it 400", async () => {
    const foreign = await raw(`GET http://evil.example/v2/accounts/${account} HTTP/1.1\r\nHost: localhost:${s.port}\r\n${auth()}`);
    expect(foreign.status).toBe(403);
    expect(isErrorBody(foreign.body, 403)).toBe(true);
    expect(foreign.body.error_code).toBe('forbidden');
    const local = await raw(`GET http://localhost:${s.port}/v2/accounts/${account} HTTP/1.1\r\nHost: evil.example\r\n${auth()}`);
    expect(local.status).toBe(200);
    // URLs in answers name the host checked, never the Host header the target overrides.
    const file = await s.app.storage.upload(account, 'root', 'linked.txt', Readable.from([Buffer.from('x')]));
    const body = JSON.stringify({ file_id: file.id });
    const link = await raw(`POST http://localhost:${s.port}/v1/accounts/${account}/storage/links HTTP/1.1\r\nHost: evil.example\r\n${auth()}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}`, body);
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    expect(link.body.url).toMatch(new RegExp(`^http://localhost:${s.port}/l/`));
    const userinfo = await raw(`GET http://me@localhost:${s.port}/v2/accounts/${account} HTTP/1.1\r\nHost: localhost:${s.port}\r\n${auth()}`);
    expect(userinfo.status).toBe(400);
    expect(userinfo.body).toMatchObject({ status_code: 400, error_code: 'bad_request' });
  });
});

describe('the Host header counted (docs/rest.md, Authentication and Errors: RFC 9112 §3.2)', () => {
  it('two Host headers are 400 bad_request in the documented shape, whichever comes first', async () => {
    for (const hosts of ['Host: localhost\r\nHost: evil.com', 'Host: evil.com\r\nHost: localhost', `Host: localhost:${s.port}\r\nHost: localhost:${s.port}`]) {
      const r = await raw(`GET /v2/accounts HTTP/1.1\r\n${hosts}\r\n${auth()}`);
      expect(r.status, hosts).toBe(400);
      expect(isErrorBody(r.body, 400)).toBe(true);
      expect(r.body.error_code).toBe('bad_request');
      expect(r.body.message).toMatch(/more than one Host/);
    }
    expect((await raw(`GET /v2/accounts HTTP/1.1\r\nHost: localhost\r\n${auth()}`)).status).toBe(200);
  });
});

describe('methods without a handler (docs/rest.md, Errors: 405 "the path exists, the method does not")', () => {
  it('TRACE, PROPFIND and other methods on an existing path are 405; on no path, 404', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'SEARCH', 'PUT']) {
      const r = await raw(`${method} /v2/accounts/${account} HTTP/1.1\r\nHost: localhost\r\n${auth()}`);
      expect(r.status, method).toBe(405);
      expect(isErrorBody(r.body, 405)).toBe(true);
      expect(r.body.error_code).toBe('method_not_allowed');
    }
    const none = await raw(`PROPFIND /v2/no/such/path HTTP/1.1\r\nHost: localhost\r\n${auth()}`);
    expect(none.status).toBe(404);
    expect(none.body.error_code).toBe('not_found');
  });
});
