// spec 1, Files and Folders: the conformance suite for `sftp` on a real OpenSSH sshd with
// internal-sftp (notes/test-servers.md §7), 200 MB files and a 5,000-entry folder, with
// `local` and WebDAV (Apache) accounts as the other side of cross-account copy and move. Then
// what is particular to SFTP: key login, trust-on-first-use, server-side copy, offset-write multipart, import.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import sftpDefinition from '../../src-main/connectors/sftp/definition';
import type { SftpOptions } from '../../src-main/connectors/sftp/options';
import { parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startSshd, type Sshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { describeStorageConformance, diskServerSetup, expectCode, sha256Of } from './storage-suite';

describeStorageConformance(
  'sftp (OpenSSH internal-sftp)',
  async () => {
    const server = await startSshd();
    return diskServerSetup('sftp', { dir: server.dataDir, stop: () => server.stop() }, { service: 'sftp', options: { host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir } });
  },
  { bigSize: 200 << 20, pagingCount: 5000, timeout: 300_000 },
);

describe('sftp specifics', () => {
  let server: Sshd;
  let app: App;
  let dataDir: string;

  beforeAll(async () => {
    server = await startSshd();
    dataDir = scratchDir('sftp-specific');
    app = await createApp({ dataDir, defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const connect = (options: Record<string, unknown>) =>
    app.accounts.connect({ service: 'sftp', options: { host: server.host, port: server.port, root: server.dataDir, ...options } });

  // docs/sftp-smb.md: host-key verification, trust on first use
  it('records the host key on first connect, as ssh-keygen prints it', async () => {
    await connect({ username: server.username, password: server.password });
    const file = join(dataDir, 'connectors', 'sftp', 'known_hosts.json');
    expect(existsSync(file)).toBe(true);
    const known = JSON.parse(readFileSync(file, 'utf8'));
    expect(known[`[${server.host}]:${server.port}`].fingerprint).toBe(server.hostKeyFingerprint);
  });

  // docs/sftp-smb.md: private-key login (root with an ed25519 key), pinned fingerprint accepted
  it('logs in with a private key and a matching pinned fingerprint', async () => {
    const acc = await connect({ username: 'root', privateKey: server.rootPrivateKey, hostKeyFingerprint: `SHA256:${server.hostKeyFingerprint}` });
    const c = await app.accounts.storage(acc.id);
    const e = await c.write(`/key-${randomBytes(3).toString('hex')}.txt`, Readable.from([Buffer.from('by key')]));
    expect(e.size).toBe(6);
    expect(app.accounts.get(acc.id).settings).not.toHaveProperty('privateKey');
  });

  // docs/sftp-smb.md: server-side copy where the server offers it (OpenSSH ≥ 9.0 announces copy-data)
  it('copies on the server with copy-data', async () => {
    const acc = await connect({ username: server.username, password: server.password });
    const c = await app.accounts.storage(acc.id);
    await c.list('/');
    expect(c.features.copy).toBeTypeOf('function');
    const data = randomBytes(3 << 20);
    await c.write('/copy-src.bin', Readable.from([data]));
    const copy = await c.features.copy!('/copy-src.bin', '/copy-dst.bin');
    expect(copy.size).toBe(data.length);
    expect(readFileSync(join(server.dataDir, 'copy-dst.bin')).equals(data)).toBe(true);
  });

  // document 1, "Copy a folder": copy-data takes files only; the storage service walks the
  // tree (creating the folders) and copies each file on the server through it.
  it('copies a folder tree through the service, each file with copy-data', async () => {
    const acc = await connect({ username: server.username, password: server.password });
    const c = await app.accounts.storage(acc.id);
    await c.list('/');
    const serverCopy = vi.spyOn(c as unknown as { copy: (from: string, to: string) => Promise<unknown> }, 'copy');
    const tree = await app.storage.mkdir(acc.id, 'root', `tree-${randomBytes(3).toString('hex')}`);
    const sub = await app.storage.mkdir(acc.id, tree.id, 'sub');
    await app.storage.upload(acc.id, tree.id, 'a.txt', Readable.from([Buffer.from('alpha')]));
    await app.storage.upload(acc.id, sub.id, 'b.txt', Readable.from([Buffer.from('beta')]));
    await expectCode(c.features.copy!(`/${tree.name}`, `/${tree.name}-direct`), 'invalid_parameters');
    serverCopy.mockClear();
    const copied = await app.storage.copy(acc.id, tree.id, { parentId: 'root', name: `${tree.name}-copy` });
    expect(serverCopy.mock.calls.map((call) => call[0]).sort()).toEqual([`/${tree.name}/a.txt`, `/${tree.name}/sub/b.txt`]);
    expect(readFileSync(join(server.dataDir, copied.name, 'a.txt'), 'utf8')).toBe('alpha');
    expect(readFileSync(join(server.dataDir, copied.name, 'sub', 'b.txt'), 'utf8')).toBe('beta');
  });

  // spec 1, Multipart upload: offset writes for multipart, parts in parallel and out of order, then resumed
  it('writes parts by offset into a hidden temp file and renames it on complete', async () => {
    const acc = await connect({ username: server.username, password: server.password });
    const c: StorageConnector = await app.accounts.storage(acc.id);
    const size = 5 * (1 << 20) + 12345;
    const partSize = 1 << 20;
    const data = randomBytes(size);
    const w = await c.features.openChunkWriter!('/multi.bin', { size, partSize });
    expect(w.parallel).toBe(true);
    const part = (n: number) => data.subarray((n - 1) * partSize, Math.min(size, n * partSize));
    const receipts = await Promise.all([6, 2, 4].map((n) => w.writePart(n, part(n))));
    expect((await c.list('/')).map((e) => e.name)).not.toContain('multi.bin');
    // "Crash": a new connector resumes from the persisted state.
    const again = await c.features.resumeChunkWriter!('/multi.bin', JSON.parse(JSON.stringify(w.state)));
    receipts.push(...(await Promise.all([1, 3, 5].map((n) => again.writePart(n, part(n))))));
    const entry = await again.complete(receipts);
    expect(entry.size).toBe(size);
    const got = await sha256Of(await c.read('/multi.bin'));
    expect(got.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    expect((await c.list('/')).filter((e) => e.name.startsWith('.tributary-'))).toEqual([]);
  });

  // spec 1, Import an account: account → username, token → password or key, host, port
  it('maps an import body to options', () => {
    const def = sftpDefinition;
    const pw = parseOptions(def, def.fromImport({ account: 'ann', token: 'pw', host: 'h.example', port: '2222' })) as SftpOptions;
    expect(pw).toMatchObject({ username: 'ann', password: 'pw', host: 'h.example', port: 2222 });
    const key = parseOptions(def, def.fromImport({ account: 'ann', token: server.rootPrivateKey, host: 'h.example' })) as SftpOptions;
    expect(key).toMatchObject({ username: 'ann', privateKey: server.rootPrivateKey, port: 22 });
    expect(key.password).toBeUndefined();
    expect(def.describe(pw)).toBe('ann@h.example:2222');
  });
});
