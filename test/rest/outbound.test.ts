/**
 * document 1, "Upload a file" (from a `url`): the server-side fetch reaches only the targets
 * Settings → Network allows. Private and local addresses are refused by default — checked on
 * the address actually connected to, and again at every redirect — with one message whatever
 * the target (an open and a closed port read the same).
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nonPublic, refusal } from '../../src-main/services/outbound';
import { SETTING_OUTBOUND_ALLOWED_HOSTS, SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import { freePort } from '../servers/util';
import { importMemory, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let account: { id: number; token: string };
/** An HTTP source on 127.0.0.1 serving /file.txt; counts the requests it got. */
let source: Server;
let sourcePort: number;
let sourceHits = 0;
/** On 127.0.0.2: /file.txt directly, /redirect → the 127.0.0.1 source. */
let second: Server;
let secondPort: number;
const secondHits: string[] = [];
/** A TCP listener that is not HTTP: accepts and hangs up. */
let tcp: TcpServer;
let tcpPort: number;
let closedPort: number;

const BODY = 'fetched by the server\n';

async function listen(server: Server | TcpServer, host: string): Promise<number> {
  const port = await freePort();
  await new Promise<void>((ok) => server.listen(port, host, ok));
  return port;
}

beforeAll(async () => {
  s = await startRest();
  account = await importMemory(s, 'outbound');
  source = createHttpServer((req, res) => {
    sourceHits++;
    res.writeHead(200, { 'content-length': String(Buffer.byteLength(BODY)) }).end(BODY);
  });
  sourcePort = await listen(source, '127.0.0.1');
  second = createHttpServer((req, res) => {
    secondHits.push(req.url!);
    if (req.url === '/redirect') res.writeHead(302, { location: `http://127.0.0.1:${sourcePort}/file.txt` }).end();
    else res.writeHead(200, { 'content-length': String(Buffer.byteLength(BODY)) }).end(BODY);
  });
  secondPort = await listen(second, '127.0.0.2');
  tcp = createTcpServer((c) => c.destroy());
  tcpPort = await listen(tcp, '127.0.0.1');
  closedPort = await freePort();
});

afterAll(async () => {
  await s?.stop();
  await Promise.all([source, second, tcp].map((x) => new Promise<void>((ok) => (x ? x.close(() => ok()) : ok()))));
});

const setPolicy = (allowPrivate: boolean, allowedHosts: string[] = []) => {
  s.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, allowPrivate);
  s.app.settings.set(SETTING_OUTBOUND_ALLOWED_HOSTS, allowedHosts);
};

let n = 0;
/** Upload from `url` with the account's bearer token (document 1, Upload a file). */
const fromUrl = (url: string) =>
  s.call('POST', `/v2/accounts/${account.id}/storage/files`, { auth: `Bearer ${account.token}`, body: { parent_id: 'root', name: `f${++n}.txt`, url } });

describe('document 1, "Upload a file" from a URL: outbound targets', () => {
  it('127.0.0.1 is refused by default, with the same answer for an open and a closed port', async () => {
    setPolicy(false);
    const open = await fromUrl(`http://127.0.0.1:${sourcePort}/file.txt`);
    const closed = await fromUrl(`http://127.0.0.1:${closedPort}/file.txt`);
    const notHttp = await fromUrl(`http://127.0.0.1:${tcpPort}/file.txt`);
    for (const r of [open, closed, notHttp]) {
      expect(r.status, r.text).toBe(502);
      expect(isErrorBody(r.json, 502)).toBe(true);
    }
    expect(closed.json.message).toBe(open.json.message);
    expect(notHttp.json.message).toBe(open.json.message);
    expect(closed.json.error_code).toBe(open.json.error_code);
    expect(sourceHits).toBe(0);
    // Other spellings of a local address: a name that resolves to it, an IPv4-mapped IPv6 form.
    for (const url of [`http://localhost:${sourcePort}/file.txt`, `http://[::ffff:127.0.0.1]:${sourcePort}/file.txt`, `http://0.0.0.0:${sourcePort}/file.txt`]) {
      const r = await fromUrl(url);
      expect(r.status, url).toBe(502);
      expect(r.json.message).toBe(open.json.message);
    }
    expect(sourceHits).toBe(0);
  });

  it('allowed with "allow every private address"; open and closed non-HTTP ports still read the same', async () => {
    setPolicy(true);
    const r = await fromUrl(`http://127.0.0.1:${sourcePort}/file.txt`);
    expect(r.status, r.text).toBe(201);
    const back = await s.call('GET', `/v2/accounts/${account.id}/storage/files/${r.json.id}/contents`, { auth: `Bearer ${account.token}` });
    expect(back.text).toBe(BODY);
    const closed = await fromUrl(`http://127.0.0.1:${closedPort}/x`);
    const notHttp = await fromUrl(`http://127.0.0.1:${tcpPort}/x`);
    expect(closed.status).toBe(502);
    expect(notHttp.status).toBe(502);
    expect(notHttp.json.message).toBe(closed.json.message);
  });

  it('an allow-list naming 127.0.0.2 only: 127.0.0.2 is fetched, its redirect to 127.0.0.1 is refused', async () => {
    setPolicy(false, ['127.0.0.2']);
    const direct = await fromUrl(`http://127.0.0.2:${secondPort}/file.txt`);
    expect(direct.status, direct.text).toBe(201);
    const hitsBefore = sourceHits;
    const redirected = await fromUrl(`http://127.0.0.2:${secondPort}/redirect`);
    expect(redirected.status, redirected.text).toBe(502);
    expect(secondHits).toContain('/redirect'); // the first hop was allowed and made
    expect(sourceHits).toBe(hitsBefore); // the second was not
    // With 127.0.0.1 also allowed (as a CIDR), the same redirect is followed.
    setPolicy(false, ['127.0.0.2', '127.0.0.1/32']);
    const followed = await fromUrl(`http://127.0.0.2:${secondPort}/redirect`);
    expect(followed.status, followed.text).toBe(201);
    expect(sourceHits).toBe(hitsBefore + 1);
  });
});

describe('outbound address classes (blocked unless allowed)', () => {
  it('loopback, private, CGNAT, link-local, metadata, ULA, unspecified, multicast and mapped forms are not public', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.10', '100.64.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.1']) {
      expect(nonPublic(a), a).toBeDefined();
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(nonPublic(a), a).toBeUndefined();
    const policy = { allowPrivate: false, allowedHosts: ['nas.example.test', '192.168.1.0/24'] };
    expect(refusal('nas.example.test', '192.168.7.7', policy)).toBeUndefined();
    expect(refusal('x', '192.168.1.20', policy)).toBeUndefined();
    expect(refusal('x', '::ffff:192.168.1.20', policy)).toBeUndefined();
    expect(refusal('x', '192.168.2.20', policy)).toMatch(/private address/);
    expect(refusal('x', '169.254.169.254', policy)).toMatch(/link-local/);
  });
});
