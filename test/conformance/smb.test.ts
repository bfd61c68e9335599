// spec 1, Files and Folders: the conformance suite for `smb` (Samba's smbclient against a real
// smbd, notes/test-servers.md §6), 200 MB files and a 5,000-entry folder, with `local` and
// WebDAV (Apache) accounts as the other side of cross-account copy and move. Then what is
// particular to SMB: names SMB cannot hold, SMB3 encryption, server-side copy, import parameters.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src-main/app';
import { parseOptions } from '../../src-main/connectors/registry';
import { SmbConnector } from '../../src-main/connectors/smb';
import smbDefinition from '../../src-main/connectors/smb/definition';
import type { SmbOptions } from '../../src-main/connectors/smb/options';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { scratchDir } from '../servers/util';
import { describeStorageConformance, diskServerSetup, expectCode, textOf } from './storage-suite';

describeStorageConformance(
  'smb (Samba smbd via smbclient)',
  async () => {
    const server = await startSamba();
    return diskServerSetup('smb', { dir: server.shareDir, stop: () => server.stop() }, { service: 'smb', options: { host: server.host, port: server.port, share: server.share, workgroup: server.workgroup, username: server.username, password: server.password } });
  },
  { bigSize: 200 << 20, pagingCount: 5000, timeout: 600_000 },
);

describe('smb specifics', () => {
  let server: Samba;
  let c: SmbConnector;
  const opts = (extra: Partial<SmbOptions> = {}): SmbOptions => smbOptionsFor(server, extra);

  beforeAll(async () => {
    server = await startSamba();
    c = new SmbConnector(opts());
  });
  afterAll(async () => {
    await c?.close();
    await server?.stop();
  });

  // Names SMB cannot hold are refused before anything is sent (Windows' reserved characters).
  it.each(['a:b.txt', 'what?.txt', 'star*.txt', 'pipe|.txt', 'trailing.', 'quote".txt'])('refuses the name %j (invalid_parameters)', async (name) => {
    await expectCode(c.write(`/${name}`, Readable.from([Buffer.from('x')])), 'invalid_parameters');
    await expectCode(c.mkdir(`/${name}`), 'invalid_parameters');
  });

  // Names smbclient's own command syntax would split (";") still work: commands go on stdin.
  it('keeps names with ";" and unicode', async () => {
    const dir = await c.mkdir('/semi;colon ü');
    await c.write('/semi;colon ü/a;b 文件.txt', Readable.from([Buffer.from('semi')]));
    expect((await c.list(dir.path)).map((e) => e.name)).toEqual(['a;b 文件.txt']);
    expect(await textOf(await c.read('/semi;colon ü/a;b 文件.txt'))).toBe('semi');
    expect(readFileSync(join(server.shareDir, 'semi;colon ü', 'a;b 文件.txt'), 'utf8')).toBe('semi');
  });

  // docs/sftp-smb.md, limits: SMB3 encryption on request (the npm SMB libraries cannot do it)
  it('works with SMB3 encryption and signing required', async () => {
    for (const protection of ['encrypt', 'sign'] as const) {
      const secure = new SmbConnector(opts({ protection }));
      const data = randomBytes(2 << 20);
      const e = await secure.write(`/${protection}.bin`, Readable.from([data]));
      expect(e.size).toBe(data.length);
      const back: Buffer[] = [];
      for await (const chunk of await secure.read(`/${protection}.bin`)) back.push(chunk as Buffer);
      expect(Buffer.concat(back).equals(data)).toBe(true);
    }
  });

  // Server-side copy (scopy, SMB2 COPYCHUNK): the copy appears with the same bytes.
  it('copies on the server', async () => {
    const data = randomBytes(3 << 20);
    await c.write('/src.bin', Readable.from([data]));
    const copy = await c.features.copy!('/src.bin', '/dst.bin');
    expect(copy.size).toBe(data.length);
    expect(readFileSync(join(server.shareDir, 'dst.bin')).equals(data)).toBe(true);
    await expectCode(c.features.copy!('/src.bin', '/dst.bin'), 'naming_conflict');
  });

  // document 1, "Copy a folder": scopy takes files only; the storage service walks the tree
  // (creating the folders) and copies each file on the server through it.
  it('copies a folder tree through the service, each file with scopy', async () => {
    const dataDir = scratchDir('smb-tree');
    const app = await createApp({ dataDir, defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({ service: 'smb', options: opts() });
      const sc = await app.accounts.storage(acc.id);
      const serverCopy = vi.spyOn(sc as unknown as { copy: (from: string, to: string) => Promise<unknown> }, 'copy');
      const tree = await app.storage.mkdir(acc.id, 'root', 'tree');
      const sub = await app.storage.mkdir(acc.id, tree.id, 'sub');
      await app.storage.upload(acc.id, tree.id, 'a.txt', Readable.from([Buffer.from('alpha')]));
      await app.storage.upload(acc.id, sub.id, 'b.txt', Readable.from([Buffer.from('beta')]));
      await expectCode(sc.features.copy!('/tree', '/tree-direct'), 'invalid_parameters');
      serverCopy.mockClear();
      await app.storage.copy(acc.id, tree.id, { parentId: 'root', name: 'tree-copy' });
      expect(serverCopy.mock.calls.map((call) => call[0]).sort()).toEqual(['/tree/a.txt', '/tree/sub/b.txt']);
      expect(readFileSync(join(server.shareDir, 'tree-copy', 'a.txt'), 'utf8')).toBe('alpha');
      expect(readFileSync(join(server.shareDir, 'tree-copy', 'sub', 'b.txt'), 'utf8')).toBe('beta');
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('reports features honestly: no trash, no hashes, 1 s mod times, case-insensitive', () => {
    expect(c.features.trash).toBeUndefined();
    expect(c.features.hashes).toEqual([]);
    expect(c.features.modTimePrecisionMs).toBe(1000);
    expect(c.features.caseSensitive).toBe(false);
    expect(c.features.openChunkWriter).toBeUndefined();
  });

  // spec 1, Import an account, SMB: `domain` is host plus port if non-default
  it('maps an import body to options', () => {
    const def = smbDefinition;
    const a = parseOptions(def, def.fromImport({ account: 'ann', token: 'pw', domain: 'nas.local:4450', share: 'photos' })) as SmbOptions;
    expect(a).toMatchObject({ host: 'nas.local', port: 4450, share: 'photos', username: 'ann', password: 'pw', workgroup: 'WORKGROUP' });
    const b = parseOptions(def, def.fromImport({ account: 'ann', token: 'pw', domain: 'nas.local/media', workgroup: 'HOME' })) as SmbOptions;
    expect(b).toMatchObject({ host: 'nas.local', port: 445, share: 'media', workgroup: 'HOME' });
    expect(def.describe(b)).toBe('ann@nas.local/media');
  });

  it('connects through the accounts service and hides the password', async () => {
    const dataDir = scratchDir('smb-acc');
    const app = await createApp({ dataDir, defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({ service: 'smb', options: opts() });
      expect(acc.account).toBe(`itest@127.0.0.1:${server.port}/${server.share}`);
      expect(acc.settings).not.toHaveProperty('password');
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
