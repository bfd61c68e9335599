/**
 * document 1, "Update an account": what an account's own bearer token (or v0 account key) may
 * change. Credentials yes; anything that moves the account elsewhere (server, port, folder,
 * share, bucket, container, endpoint — also an endpoint carried inside a secret) is refused with
 * 403 before any connection is made, and works with an API key (re-verified against the server).
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startS3rver, type S3Server } from '../servers/s3';
import { startSamba, type Samba } from '../servers/samba';
import { startSshd, type Sshd } from '../servers/sshd';
import { freePort } from '../servers/util';
import { isErrorBody, startRest, type RestServer } from './harness';

type Json = Record<string, unknown>;

let s: RestServer;
let apache: ApacheServer;
let sshd: Sshd;
let samba: Samba;
let s3: S3Server;
let azurite: AzuriteServer;
let dovecot: DovecotServer;
const smtp: { server: SMTPServer; port: number }[] = [];
/** A listener that only counts connections: where a refused change would have pointed. */
let trap: Server;
let trapPort: number;
let trapConnections = 0;

async function startSmtp(): Promise<{ server: SMTPServer; port: number }> {
  const server = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onAuth: (_a, _s, cb) => cb(null, { user: 'alice' }) });
  const port = await freePort();
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return { server, port };
}

beforeAll(async () => {
  s = await startRest();
  [apache, sshd, samba, s3, azurite, dovecot] = await Promise.all([startApache(), startSshd(), startSamba(), startS3rver('scope'), startAzurite('scope'), startDovecot()]);
  smtp.push(await startSmtp(), await startSmtp());
  trap = createServer((c) => {
    trapConnections++;
    c.destroy();
  });
  trapPort = await freePort();
  await new Promise<void>((ok) => trap.listen(trapPort, '127.0.0.1', ok));
}, 120_000);

afterAll(async () => {
  await s?.stop();
  await Promise.all([apache?.stop(), sshd?.stop(), samba?.stop(), s3?.stop(), azurite?.stop(), dovecot?.stop()]);
  await Promise.all(smtp.map((m) => new Promise<void>((ok) => m.server.close(() => ok()))));
  await new Promise<void>((ok) => trap?.close(() => ok()));
});

interface Case {
  service: string;
  /** Import body (document 1, "Import an account"). */
  body: () => Json;
  /** Bearer PATCH bodies that each move the account; each must be refused. */
  moves: () => Json[];
  /** A credential-only PATCH the server accepts (the account's current secret, sent again). */
  credential?: () => Json;
  /** A location PATCH that works with an API key, and the option it sets. */
  apiKeyMove: () => Promise<{ body: Json; option: string; value: unknown }>;
}

const cases: Case[] = [
  {
    service: 'local',
    body: () => {
      const folder = join(s.dir, 'scope-local');
      mkdirSync(folder, { recursive: true });
      return { service: 'local', account: 'scope', token: '', path: folder, trash_dir: join(s.dir, 'scope-local-trash') };
    },
    // `/` would serve every file of the machine, the data dir its master key and database.
    moves: () => [{ path: '/' }, { path: join(s.dir, 'data') }, { trash_dir: '/tmp' }],
    apiKeyMove: async () => {
      const other = join(s.dir, 'scope-local-2');
      mkdirSync(other, { recursive: true });
      return { body: { path: other }, option: 'path', value: other };
    },
  },
  {
    service: 'webdav',
    body: () => ({ service: 'webdav', account: apache.user, token: apache.password, protocol: 'http', host: apache.host, port: apache.port, path: '/' }),
    // A WebDAV account re-pointed at another port would send its password there.
    moves: () => [{ port: trapPort }, { host: 'localhost' }, { path: '/elsewhere/' }, { protocol: 'https' }, { token: apache.password, port: trapPort }],
    credential: () => ({ token: apache.password }),
    apiKeyMove: async () => {
      mkdirSync(join(apache.root, 'scope-sub'), { recursive: true });
      return { body: { path: '/scope-sub/' }, option: 'path', value: '/scope-sub/' };
    },
  },
  {
    service: 'sftp',
    body: () => ({ service: 'sftp', account: sshd.username, token: sshd.password, host: sshd.host, port: sshd.port, path: sshd.dataDir }),
    moves: () => [{ port: trapPort }, { host: 'localhost' }, { domain: 'localhost' }, { path: '/' }, { host_key_fingerprint: `SHA256:${'A'.repeat(43)}` }],
    credential: () => ({ token: sshd.password }),
    apiKeyMove: async () => ({ body: { path: '/' }, option: 'root', value: '/' }),
  },
  {
    service: 'smb',
    body: () => ({ service: 'smb', account: samba.username, token: samba.password, domain: `${samba.host}:${samba.port}`, share: samba.share }),
    moves: () => [{ domain: `127.0.0.1:${trapPort}` }, { share: 'other' }, { workgroup: 'ELSEWHERE' }, { port: trapPort }],
    credential: () => ({ token: samba.password }),
    apiKeyMove: async () => ({ body: { workgroup: 'OTHERGROUP' }, option: 'workgroup', value: 'OTHERGROUP' }),
  },
  {
    service: 's3',
    body: () => ({ service: 's3', account: 'bucket', token: s3.accessKeyId, token_secret: s3.secretAccessKey, endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true }),
    moves: () => [{ endpoint: `http://127.0.0.1:${trapPort}` }, { bucket: 'other' }, { region: 'eu-west-1' }, { prefix: 'x/' }, { path_style: false }, { token: 'another-key-id' }],
    credential: () => ({ token_secret: s3.secretAccessKey }),
    apiKeyMove: async () => ({ body: { prefix: 'scope/' }, option: 'prefix', value: 'scope/' }),
  },
  {
    service: 'azure',
    body: () => ({ service: 'azure', account: azurite.accountName, token: azurite.accountKey, endpoint: azurite.endpoint, container: azurite.container }),
    moves: () => [
      { endpoint: `http://127.0.0.1:${trapPort}/${azurite.accountName}` },
      { container: 'other' },
      // A secret that carries an endpoint: the same key, sent to another server.
      { token: azurite.connectionString.replace(azurite.endpoint, `http://127.0.0.1:${trapPort}/${azurite.accountName}`) },
      { token: `DefaultEndpointsProtocol=https;AccountName=${azurite.accountName};AccountKey=${azurite.accountKey};EndpointSuffix=core.windows.net` },
    ],
    // The same endpoint inside a connection string is only a credential.
    credential: () => ({ token: azurite.connectionString }),
    apiKeyMove: async () => {
      await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient('scope-second').createIfNotExists();
      return { body: { container: 'scope-second' }, option: 'container', value: 'scope-second' };
    },
  },
  {
    service: 'imap',
    body: () => ({ service: 'imap', account: 'alice', token: 'secret', host: dovecot.host, port: dovecot.imapPort, tls: 'none', smtp_host: '127.0.0.1', smtp_port: smtp[0]!.port }),
    moves: () => [{ port: trapPort }, { host: 'localhost' }, { smtp_host: '10.0.0.1' }, { smtp_port: trapPort }, { tls: 'tls' }, { email: 'someone@example.test' }],
    credential: () => ({ token: 'secret' }),
    apiKeyMove: async () => ({ body: { smtp_port: smtp[1]!.port }, option: 'smtp_port', value: smtp[1]!.port }),
  },
];

describe('document 1, "Update an account": a bearer token changes credentials, never where the account points', () => {
  for (const c of cases) {
    it(`${c.service}: location fields → 403 and nothing changed or contacted; credential alone → 200; the same move with an API key → 200`, async () => {
      const imported = await s.call('POST', '/v2/accounts', { body: c.body() });
      expect(imported.status, imported.text).toBe(201);
      const id = imported.json.id as number;
      const bearer = `Bearer ${imported.json.bearer_token.key}`;
      const before = s.app.accounts.options(id);
      const contactsBefore = trapConnections;

      for (const move of c.moves()) {
        const res = await s.call('PATCH', `/v2/accounts/${id}`, { auth: bearer, body: move });
        expect(res.status, `${JSON.stringify(move)}: ${res.text}`).toBe(403);
        expect(isErrorBody(res.json, 403)).toBe(true);
        expect(res.json.error_code).toBe('forbidden');
        expect(s.app.accounts.options(id)).toEqual(before);
      }
      expect(trapConnections).toBe(contactsBefore);
      const after = await s.call('GET', `/v2/accounts/${id}`, { auth: bearer });
      expect(after.status).toBe(200);
      expect(after.json.modified).toBe(imported.json.modified);

      // What document 1 lets an account change about itself still works.
      const renamed = await s.call('PATCH', `/v2/accounts/${id}`, { auth: bearer, body: { account: `${c.service} renamed` } });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.json.account).toBe(`${c.service} renamed`);
      if (c.credential) {
        const cred = await s.call('PATCH', `/v2/accounts/${id}`, { auth: bearer, body: c.credential() });
        expect(cred.status, cred.text).toBe(200);
      }

      const move = await c.apiKeyMove();
      const withKey = await s.call('PATCH', `/v2/accounts/${id}`, { body: move.body });
      expect(withKey.status, withKey.text).toBe(200);
      expect(s.app.accounts.options(id)[move.option]).toEqual(move.value);
      expect(trapConnections).toBe(contactsBefore);
    }, 60_000);
  }

  it('v0 account key: the same rule (document 1, Account keys)', async () => {
    const folder = join(s.dir, 'scope-key');
    mkdirSync(folder, { recursive: true });
    const imported = await s.call('POST', '/v0/accounts', { body: { service: 'local', account: 'key', token: '', path: folder, trash_dir: join(s.dir, 'scope-key-trash') } });
    expect(imported.status, imported.text).toBe(201);
    const key = await s.call('POST', `/v0/accounts/${imported.json.id}/keys`, { body: {} });
    expect(key.status, key.text).toBe(201);
    const res = await s.call('PATCH', `/v0/accounts/${imported.json.id}`, { auth: `AccountKey ${key.json.key}`, body: { path: '/' } });
    expect(res.status, res.text).toBe(403);
    expect(s.app.accounts.options(imported.json.id).path).toBe(folder);
    const off = await s.call('PATCH', `/v0/accounts/${imported.json.id}`, { auth: `AccountKey ${key.json.key}`, body: { active: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.json.active).toBe(false);
  });
});
