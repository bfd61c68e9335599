// docs/connectors.md, "`sftp` and `smb`: names as the server holds them" (spec 1, Files and
// Folders): a file whose name a Mac wrote in NFD (`Cafe` + U+0301) on a Linux server is listed,
// downloaded, renamed and deleted through the storage API, on OpenSSH and on Samba; an NFC and an
// NFD name of the same text in one folder stay two files.
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startSamba } from '../servers/samba';
import { startSshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { textOf } from './storage-suite';

const NFD = 'Cafe\u0301.txt';
const NFC = NFD.normalize('NFC');
const hex = (s: string) => Buffer.from(s).toString('hex');
/** The names on the server's disk, as bytes (hex), sorted. */
const onDisk = (dir: string) => readdirSync(dir).map(hex).sort();

interface Server {
  dir: string;
  account: { service: string; options: Record<string, unknown> };
  stop(): Promise<void>;
}

const servers: [string, () => Promise<Server>][] = [
  [
    'sftp (OpenSSH)',
    async () => {
      const s = await startSshd();
      return { dir: s.dataDir, stop: () => s.stop(), account: { service: 'sftp', options: { host: s.host, port: s.port, username: s.username, password: s.password, root: s.dataDir, hostKeyFingerprint: s.hostKeyFingerprint } } };
    },
  ],
  [
    'smb (Samba)',
    async () => {
      const s = await startSamba();
      return { dir: s.shareDir, stop: () => s.stop(), account: { service: 'smb', options: { host: s.host, port: s.port, share: s.share, workgroup: s.workgroup, username: s.username, password: s.password } } };
    },
  ],
];

describe.each(servers)('%s: names in NFD', (_label, start) => {
  let server: Server;
  let app: App;
  let dataDir: string;
  let acc: number;
  let n = 0;

  beforeAll(async () => {
    server = await start();
    dataDir = scratchDir('unicode-names');
    app = await createApp({ dataDir, defaultLocalFolder: false });
    acc = (await app.accounts.connect(server.account)).id;
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** A new folder on the server's disk holding `files` (name → content), and its id. */
  const folderWith = async (files: Record<string, string>) => {
    const name = `f${++n}`;
    const dir = join(server.dir, name);
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    for (const [file, content] of Object.entries(files)) {
      writeFileSync(join(dir, file), content);
      chmodSync(join(dir, file), 0o666);
    }
    const folder = (await app.storage.list(acc, 'root')).items.find((i) => i.name === name)!;
    return { dir, id: folder.id };
  };

  it('lists the name as the server has it, and downloads, renames and deletes that file', async () => {
    const { dir, id } = await folderWith({ [NFD]: 'made on a Mac' });
    const [item, ...rest] = (await app.storage.list(acc, id)).items;
    expect(rest).toEqual([]);
    expect(hex(item!.name)).toBe(hex(NFD));
    expect(await textOf((await app.storage.download(acc, item!.id)).stream)).toBe('made on a Mac');
    const renamed = await app.storage.move(acc, item!.id, { name: 'Crème.txt' });
    expect(onDisk(dir)).toEqual([hex('Crème.txt')]);
    expect(readFileSync(join(dir, 'Crème.txt'), 'utf8')).toBe('made on a Mac');
    await app.storage.move(acc, renamed.id, { name: NFD });
    const back = (await app.storage.list(acc, id)).items[0]!;
    await app.storage.delete(acc, back.id, { permanent: true });
    expect(onDisk(dir)).toEqual([]);
  });

  it('keeps an NFC and an NFD name of the same text as two files', async () => {
    const { dir, id } = await folderWith({ [NFD]: 'nfd', [NFC]: 'nfc' });
    const items = (await app.storage.list(acc, id)).items;
    expect(items.map((i) => hex(i.name)).sort()).toEqual([hex(NFC), hex(NFD)].sort());
    expect(new Set(items.map((i) => i.id)).size).toBe(2);
    for (const i of items) expect(await textOf((await app.storage.download(acc, i.id)).stream)).toBe(i.name === NFC ? 'nfc' : 'nfd');
    // Deleting one leaves the other where it was.
    await app.storage.delete(acc, items.find((i) => i.name === NFD)!.id, { permanent: true });
    expect(onDisk(dir)).toEqual([hex(NFC)]);
    expect(readFileSync(join(dir, NFC), 'utf8')).toBe('nfc');
  });

  it('an upload under the NFC name beside an NFD file makes a second file and leaves it alone', async () => {
    const { dir, id } = await folderWith({ [NFD]: 'from the Mac' });
    await app.storage.upload(acc, id, NFC, Readable.from([Buffer.from('typed here')]), { size: 10 });
    expect(onDisk(dir)).toEqual([hex(NFC), hex(NFD)].sort());
    expect(readFileSync(join(dir, NFD), 'utf8')).toBe('from the Mac');
    expect(readFileSync(join(dir, NFC), 'utf8')).toBe('typed here');
  });
});
