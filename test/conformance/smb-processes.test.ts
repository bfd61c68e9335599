// spec 1, "Download a file": an SMB download of a whole file runs one smbclient process (no
// `ls` before the `get`), and still refuses what it cannot read before the first byte.
// spec 1, Folders (list contents): a folder's page, which holds the folder's own metadata and its
// children, runs one smbclient process, with the same answers and failures as two.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { SmbConnector } from '../../src-main/connectors/smb';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { scratchDir } from '../servers/util';
import { textOf } from './storage-suite';

describe('smb without a process per question', () => {
  let server: Samba;
  let c: SmbConnector;
  let app: App;
  let log: string;
  let wrapper: string;
  let dir: string;
  const runs = () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length;

  beforeAll(async () => {
    server = await startSamba();
    // smbclient behind a wrapper that counts its runs.
    dir = scratchDir('smb-processes');
    log = join(dir, 'runs.log');
    writeFileSync(log, '');
    wrapper = join(dir, 'smbclient');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> '${log}'\nexec smbclient "$@"\n`);
    chmodSync(wrapper, 0o755);
    c = new SmbConnector(smbOptionsFor(server, { smbclient: wrapper }));
    writeFileSync(join(server.shareDir, 'whole.txt'), 'all of it');
    writeFileSync(join(server.shareDir, 'empty.txt'), '');
    mkdirSync(join(server.shareDir, 'folder'));
    mkdirSync(join(server.shareDir, 'Listed', 'Inner'), { recursive: true });
    writeFileSync(join(server.shareDir, 'Listed', 'one.txt'), '1');
    app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    await c?.close();
    await server?.stop();
  });

  it('reads a whole file with one smbclient run', async () => {
    const before = runs();
    expect(await textOf(await c.read('/whole.txt'))).toBe('all of it');
    expect(runs() - before).toBe(1);
    expect(await textOf(await c.read('/empty.txt'))).toBe('');
  });

  it('a ranged read still gets the right bytes', async () => {
    expect(await textOf(await c.read('/whole.txt', { start: 4, end: 5 }))).toBe('of');
  });

  it('a missing file or a folder fails the read itself, not a stream later', async () => {
    await expect(c.read('/missing.txt')).rejects.toMatchObject({ code: 'not_found' });
    await expect(c.read('/folder')).rejects.toMatchObject({ code: 'invalid_parameters' });
  });

  it('a stat and a listing of one folder asked together run one smbclient', async () => {
    const before = runs();
    const [self, children] = await Promise.all([c.stat('/listed'), c.list('/listed')]);
    expect(runs() - before).toBe(1);
    expect(self).toMatchObject({ path: '/listed', name: 'Listed', kind: 'folder' });
    expect(children.map((e) => [e.name, e.kind, e.size])).toEqual([
      ['Inner', 'folder', null],
      ['one.txt', 'file', 1],
    ]);
  });

  it('asked together, a folder named like the end of a listing still lists its children', async () => {
    // smbclient ends each `ls` with "N blocks of size B. F blocks available".
    const odd = '7 blocks of size 2. 3 blocks available';
    mkdirSync(join(server.shareDir, odd));
    writeFileSync(join(server.shareDir, odd, 'inside.txt'), 'in');
    const [self, children] = await Promise.all([c.stat(`/${odd}`), c.list(`/${odd}`)]);
    expect(self).toMatchObject({ name: odd, kind: 'folder' });
    expect(children.map((e) => e.name)).toEqual(['inside.txt']);
  });

  it('asked together, a file and a missing path fail the listing as when asked apart', async () => {
    const before = runs();
    const [file, listFile] = await Promise.allSettled([c.stat('/whole.txt'), c.list('/whole.txt')]);
    expect(file).toMatchObject({ status: 'fulfilled', value: { kind: 'file', size: 9 } });
    expect(listFile).toMatchObject({ status: 'rejected', reason: { code: 'invalid_parent_folder' } });
    const missing = await Promise.allSettled([c.stat('/missing'), c.list('/missing')]);
    expect(missing.map((r) => r.status === 'rejected' && r.reason.code)).toEqual(['not_found', 'not_found']);
    const empty = await Promise.all([c.stat('/folder'), c.list('/folder')]);
    expect(empty[0].kind).toBe('folder');
    expect(empty[1]).toEqual([]);
    expect(runs() - before).toBe(3);
  });

  it('a folder page from the storage service runs one smbclient', async () => {
    const acc = await app.accounts.connect({ service: 'smb', options: { ...smbOptionsFor(server), smbclient: wrapper } });
    const listed = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'Listed')!;
    const before = runs();
    const page = await app.storage.list(acc.id, listed.id);
    expect(runs() - before).toBe(1);
    expect(page.folder).toMatchObject({ name: 'Listed' });
    expect(page.items.map((i) => i.name)).toEqual(['Inner', 'one.txt']);
  });
});
