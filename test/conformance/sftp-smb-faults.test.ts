// SFTP and SMB faults (docs/sftp-smb.md, Errors): wrong password, unknown and changed host
// key, server killed mid-transfer.
// Real servers (OpenSSH sshd, Samba smbd) on loopback, killed with SIGKILL by the harness.
// Every failure must be a clear ServiceError, and an interrupted upload must never leave a
// partial file under its final name.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { SftpConnector } from '../../src-main/connectors/sftp';
import { SmbConnector } from '../../src-main/connectors/smb';
import { Smbclient } from '../../src-main/connectors/smb/smbclient';
import type { SmbOptions } from '../../src-main/connectors/smb/options';
import type { StorageConnector } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { expectCode } from './storage-suite';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { startSshd, type Sshd } from '../servers/sshd';
import { startThrottle } from '../servers/throttle';
import { scratchDir } from '../servers/util';

/** An endless-ish body: 1 MiB chunks; `onChunk(n)` runs before chunk n is handed over. */
function slowBody(chunks: number, onChunk: (n: number) => void | Promise<void>): Readable {
  return Readable.from(
    (async function* () {
      for (let n = 0; n < chunks; n++) {
        await onChunk(n);
        yield randomBytes(1 << 20);
        await new Promise((r) => setTimeout(r, 5));
      }
    })(),
  );
}

/** Reads a stream to the end; returns the error it failed with (or undefined). */
async function drain(stream: Readable, onFirstChunk: () => Promise<void>): Promise<unknown> {
  let first = true;
  try {
    for await (const _chunk of stream) {
      if (first) {
        first = false;
        await onFirstChunk();
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('sftp faults', () => {
  let server: Sshd;
  let app: App;
  let dataDir: string;

  beforeAll(async () => {
    server = await startSshd();
    dataDir = scratchDir('sftp-faults');
    app = await createApp({ dataDir, defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const base = () => ({ host: server.host, port: server.port, root: server.dataDir });

  it('wrong password → upstream_auth_failed, and nothing is stored', async () => {
    const err = await expectCode(app.accounts.connect({ service: 'sftp', options: { ...base(), username: 'itest', password: 'wrong' } }), 'upstream_auth_failed');
    expect(err.message).toMatch(/refused the user name, password or key/);
    expect(app.accounts.list()).toEqual([]);
  });

  it('unreachable server → service_not_available', async () => {
    const c = new SftpConnector({ host: '127.0.0.1', port: 1, username: 'x', password: 'y' }, dataDir);
    await expectCode(c.list('/'), 'service_not_available');
  });

  it('a pinned fingerprint that does not match an unknown key → forbidden, key not recorded', async () => {
    const err = await expectCode(
      app.accounts.connect({ service: 'sftp', options: { ...base(), username: 'itest', password: 'secret', hostKeyFingerprint: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } }),
      'forbidden',
    );
    expect(err.message).toContain(`SHA256:${server.hostKeyFingerprint}`);
    expect(existsSync(join(dataDir, 'connectors', 'sftp', 'known_hosts.json'))).toBe(false);
  });

  it('a changed host key → forbidden naming both fingerprints; accepted by setting hostKeyFingerprint', async () => {
    const acc = await app.accounts.connect({ service: 'sftp', options: { ...base(), username: 'itest', password: 'secret' } });
    const oldFp = server.hostKeyFingerprint;
    await server.restart({ newHostKey: true });
    const newFp = server.hostKeyFingerprint;
    expect(newFp).not.toBe(oldFp);
    const c = new SftpConnector({ ...base(), username: 'itest', password: 'secret' }, dataDir);
    const err = await expectCode(c.list('/'), 'forbidden');
    expect(err.message).toContain(`was SHA256:${oldFp}`);
    expect(err.message).toContain(`now SHA256:${newFp}`);
    expect(err.message).toMatch(/host key fingerprint/);
    // The user accepts the new key: the account's settings get the new fingerprint.
    await app.accounts.update(acc.id, { options: { hostKeyFingerprint: `SHA256:${newFp}` } });
    expect((await (await app.accounts.storage(acc.id)).list('/')).length).toBeGreaterThanOrEqual(0);
    const known = JSON.parse(readFileSync(join(dataDir, 'connectors', 'sftp', 'known_hosts.json'), 'utf8'));
    expect(known[`[${server.host}]:${server.port}`].fingerprint).toBe(newFp);
    // Other connections to this host now trust the new key without a pin.
    await c.close();
    expect(await new SftpConnector({ ...base(), username: 'itest', password: 'secret' }, dataDir).list('/')).toBeInstanceOf(Array);
  });

  it('server killed mid-upload → service_not_available, no file under the final name; reconnects after', async () => {
    const c = new SftpConnector({ ...base(), username: 'itest', password: 'secret' }, dataDir);
    await c.list('/');
    const err = await expectCode(
      c.write('/killed-upload.bin', slowBody(400, (n) => (n === 20 ? server.kill() : undefined))),
      'service_not_available',
    );
    expect(err.message).toMatch(/not reachable/);
    expect(existsSync(join(server.dataDir, 'killed-upload.bin'))).toBe(false);
    await server.restart();
    // The next call reconnects by itself; the partial temp file stays hidden from listings.
    expect((await c.list('/')).map((e) => e.name)).not.toContain('killed-upload.bin');
    await expectCode(c.stat('/killed-upload.bin'), 'not_found');
    await c.close();
  });

  it('server killed mid-download → the stream fails with service_not_available', async () => {
    writeFileSync(join(server.dataDir, 'big-download.bin'), randomBytes(64 << 20));
    const c = new SftpConnector({ ...base(), username: 'itest', password: 'secret' }, dataDir);
    const stream = await c.read('/big-download.bin');
    const err = await drain(stream, () => server.kill());
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('service_not_available');
    await server.restart();
    await c.close();
  });
});

describe('smb faults', () => {
  let server: Samba;
  const opts = (extra: Partial<SmbOptions> = {}): SmbOptions => smbOptionsFor(server, extra);

  beforeAll(async () => {
    server = await startSamba();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('wrong password → upstream_auth_failed', async () => {
    const err = await expectCode(new SmbConnector(opts({ password: 'wrong' })).list('/'), 'upstream_auth_failed');
    expect(err.message).toMatch(/refused the user name or password/);
  });

  it('through the accounts service too, and nothing is stored', async () => {
    const dataDir = scratchDir('smb-faults');
    const app = await createApp({ dataDir, defaultLocalFolder: false });
    try {
      await expectCode(app.accounts.connect({ service: 'smb', options: opts({ password: 'wrong' }) }), 'upstream_auth_failed');
      expect(app.accounts.list()).toEqual([]);
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('unknown share → invalid_parameters; unreachable server → service_not_available; no smbclient → clear error', async () => {
    const err = await expectCode(new SmbConnector(opts({ share: 'nosuchshare' })).list('/'), 'invalid_parameters');
    expect(err.message).toMatch(/no share of that name/);
    await expectCode(new SmbConnector(opts({ port: 1 })).list('/'), 'service_not_available');
    const missing = await expectCode(new SmbConnector(opts({ smbclient: '/nonexistent/smbclient' })).list('/'), 'service_not_available');
    expect(missing.message).toMatch(/smbclient/);
  });

  it('server killed mid-upload → service_not_available, no file under the final name', async () => {
    const c: StorageConnector = new SmbConnector(opts());
    await c.list('/');
    const err = await expectCode(
      c.write('/killed-upload.bin', slowBody(400, (n) => (n === 20 ? server.kill() : undefined))),
      'service_not_available',
    );
    expect(err.message).toMatch(/not reachable/);
    expect(readdirSync(server.shareDir)).not.toContain('killed-upload.bin');
    await server.restart();
    await expectCode(c.stat('/killed-upload.bin'), 'not_found');
    expect((await c.list('/')).map((e) => e.name)).not.toContain('killed-upload.bin');
  });

  it('a vague failure stays upstream_error while the server answers, and is service_not_available once it is gone, behind a hop too', async () => {
    // A hop that takes connections whatever is behind it (a proxy, a tunnel): the test's throttle.
    const hop = await startThrottle(server.port, 64 << 20);
    try {
      const vague = () => new ServiceError('upstream_error', 'Writing "/x.bin": cli_push returned NT_STATUS_INVALID_PARAMETER');
      for (const port of [server.port, hop.port]) {
        expect((await new Smbclient(opts({ port })).settle(vague(), 'Writing "/x.bin"')).code).toBe('upstream_error');
        // An answer that refuses the login is still an answer.
        expect((await new Smbclient(opts({ port, password: 'wrong' })).settle(vague(), 'Writing "/x.bin"')).code).toBe('upstream_error');
      }
      await server.kill();
      for (const port of [server.port, hop.port]) {
        const err = await new Smbclient(opts({ port })).settle(vague(), 'Writing "/x.bin"');
        expect(err).toMatchObject({ code: 'service_not_available', message: 'Writing "/x.bin": the SMB server is not reachable (cli_push returned NT_STATUS_INVALID_PARAMETER).' });
      }
    } finally {
      await hop.stop();
      await server.restart();
    }
  });

  it('server killed mid-download → the stream fails with service_not_available', async () => {
    writeFileSync(join(server.shareDir, 'big-download.bin'), randomBytes(64 << 20));
    const c = new SmbConnector(opts());
    const stream = await c.read('/big-download.bin');
    const err = await drain(stream, () => server.kill());
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('service_not_available');
    await server.restart();
  });
});
