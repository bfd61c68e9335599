// docs/sync.md ("Names that are one name on the other side") and docs/connectors.md ("`sftp` and
// `smb`: names as the server holds them"): a name in NFD (`Cafe` + U+0301, as a Mac writes it) on
// a Linux SFTP or SMB server, or in the local folder, syncs under that very name, the pair
// settles, and later edits reach the same file. Real OpenSSH and Samba servers.
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import { SmbConnector } from '../../src-main/connectors/smb';
import type { StorageConnector } from '../../src-main/connectors/types';
import { smbOptionsFor, startSamba } from '../servers/samba';
import { startSshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { localView, pairEngine, remoteView, sorted, syncDb, trashContents } from './scenario';

const NFD = 'Cafe\u0301.txt';
const NFC = NFD.normalize('NFC');
const hex = (s: string) => Buffer.from(s).toString('hex');
/** The names in a folder on disk, as bytes (hex), sorted. */
const names = (dir: string) => readdirSync(dir).map(hex).sort();
// A pair that does not settle throws after its rounds; the timeout only guards a stall.
const timeout = 30_000;

interface Remote {
  connector: StorageConnector;
  /** The folder on the server's disk that the connector's root shows. */
  disk: string;
  stop(): Promise<void>;
}

async function sftp(dir: string): Promise<Remote> {
  const s = await startSshd();
  await loadConnectors();
  const def = connectorDefinition('sftp');
  const options = { host: s.host, port: s.port, username: s.username, password: s.password, root: s.dataDir, hostKeyFingerprint: s.hostKeyFingerprint };
  const connector = (await def.create(parseOptions(def, options), { dataDir: dir, accountId: 1 })) as StorageConnector;
  return { connector, disk: s.dataDir, stop: () => s.stop() };
}

async function smb(): Promise<Remote> {
  const s = await startSamba();
  return { connector: new SmbConnector(smbOptionsFor(s)), disk: s.shareDir, stop: () => s.stop() };
}

/** A pair of a new local folder and `/Sync` on the server (made on its disk, with `files`). */
async function withPair(start: (dir: string) => Promise<Remote>, setup: { remote?: Record<string, string>; local?: Record<string, string> }, body: (t: { local: string; server: string; trash: string; run: () => Promise<number>; remote: StorageConnector }) => Promise<void>) {
  const dir = scratchDir('sync-unicode');
  const remote = await start(dir);
  const local = join(dir, 'local');
  const server = join(remote.disk, 'Sync');
  const trash = join(dir, 'trash');
  mkdirSync(local);
  mkdirSync(server);
  chmodSync(server, 0o777);
  for (const [name, content] of Object.entries(setup.remote ?? {})) {
    writeFileSync(join(server, name), content);
    chmodSync(join(server, name), 0o666);
  }
  for (const [name, content] of Object.entries(setup.local ?? {})) writeFileSync(join(local, name), content);
  const db = syncDb();
  const { engine, pair } = await pairEngine(db, remote.connector, local, '/Sync', trash);
  try {
    await body({ local, server, trash, remote: remote.connector, run: async () => (await engine.run(pair.id)).ops });
    expect(engine.store.pair(pair.id).state).toBe('idle');
  } finally {
    await engine.close();
    db.close();
    await remote.connector.close();
    await remote.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.each([
  ['OpenSSH SFTP', sftp],
  ['Samba SMB', smb],
] as const)('sync with %s: names in NFD', (_label, start) => {
  it('an NFD file on the server comes down under its name, settles, and a local edit goes back to it', { timeout }, async () => {
    await withPair(start, { remote: { [NFD]: 'made on a Mac' } }, async ({ local, server, run }) => {
      expect(await run()).toBe(1);
      expect(names(local)).toEqual([hex(NFD)]);
      expect(readFileSync(join(local, NFD), 'utf8')).toBe('made on a Mac');
      expect(await run()).toBe(0);
      writeFileSync(join(local, NFD), 'edited on this computer');
      expect(await run()).toBe(1);
      expect(names(server)).toEqual([hex(NFD)]);
      expect(readFileSync(join(server, NFD), 'utf8')).toBe('edited on this computer');
      expect(await run()).toBe(0);
    });
  });

  it('a local NFD file goes up under its name and is not renamed; later edits reach the server', { timeout }, async () => {
    await withPair(start, { local: { [NFD]: 'v1' } }, async ({ local, server, run }) => {
      expect(await run()).toBe(1);
      expect(names(server)).toEqual([hex(NFD)]);
      expect(names(local)).toEqual([hex(NFD)]);
      expect(await run()).toBe(0);
      writeFileSync(join(local, NFD), 'v2, longer');
      expect(await run()).toBe(1);
      expect(names(local)).toEqual([hex(NFD)]);
      expect(readFileSync(join(server, NFD), 'utf8')).toBe('v2, longer');
    });
  });

  it('an NFC and an NFD name of the same text on the server are both kept on both sides', { timeout }, async () => {
    await withPair(start, { remote: { [NFD]: 'nfd', [NFC]: 'nfc' } }, async ({ local, trash, run, remote }) => {
      await run();
      expect(await run()).toBe(0);
      const l = localView(local);
      expect(sorted(await remoteView(remote, '/Sync'))).toEqual(sorted(l));
      // Both versions, one of them under a conflict name (never merged, none lost).
      expect([...l.values()].sort()).toEqual(['nfc', 'nfd']);
      expect([...l.keys()].filter((p) => p.includes(' (conflict '))).toHaveLength(1);
      expect(trashContents(trash)).toEqual([]);
    });
  });
});
