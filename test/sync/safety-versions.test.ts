// Two-way sync keeps every version (docs/sync.md, "Safety"): on a backend without a trash a
// local folder delete removes only the files this computer synced, never what it left out
// ("What is synced": ignored files, excluded folders); and a local save made while a new remote
// version downloads is not replaced by it, the two become a conflict ("Conflicts: both versions
// are kept"). Through the engine, against the memory connector (its trash taken away) and a real
// WebDAV server (Apache mod_dav_fs, which has no trash). A colleague's save that reaches the server
// while an upload replaces the file is not replaced either (the conditional replace): a conflict,
// on Apache WebDAV (the If header on its MOVE) and OpenSSH SFTP (a look right before the rename).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MemoryConnector } from '../../src-main/connectors/memory';
import type { StorageConnector } from '../../src-main/connectors/types';
import type { SyncEngine } from '../../src-main/sync/engine';
import { startApache, webdavOptions } from '../servers/apache';
import { startSshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { localView, openConnector, pairEngine, remoteView, sorted, syncDb, text, textOf, trashContents } from './scenario';

const put = (c: StorageConnector, path: string, s: string) => c.write(path, Readable.from([Buffer.from(s)]), { size: Buffer.byteLength(s) });

/** A memory connector over a fresh store, without a trash (as WebDAV, SFTP and S3). */
function memoryWithoutTrash(name: string): MemoryConnector {
  const c = new MemoryConnector(`${name}-${Math.random()}`);
  delete (c.features as { trash?: unknown }).trash;
  return c;
}

/**
 * The user deletes the local folder /Proj; the server's /Proj also holds a file this computer
 * ignores and an excluded folder, both put there by someone else. Only the synced files go.
 */
async function folderDeleteKeepsUnsynced(remote: StorageConnector, dir: string): Promise<void> {
  expect(remote.features.trash).toBeUndefined();
  const local = join(dir, 'local');
  const trash = join(dir, 'trash');
  mkdirSync(join(local, 'Proj', 'Sub'), { recursive: true });
  writeFileSync(join(local, '.tributaryignore'), '*.psd\n');
  writeFileSync(join(local, 'Proj', 'notes.txt'), 'notes');
  writeFileSync(join(local, 'Proj', 'Sub', 'plan.txt'), 'plan');
  await remote.mkdir('/Sync');
  const db = syncDb();
  const { engine, pair } = await pairEngine(db, remote, local, '/Sync', trash);
  try {
    await engine.run(pair.id);
    await put(remote, '/Sync/Proj/art.psd', 'artwork, only on the server');
    await remote.mkdir('/Sync/Proj/Big');
    await put(remote, '/Sync/Proj/Big/video.bin', 'video, only on the server');
    engine.setExcluded(pair.id, ['/Proj/Big']);
    await engine.run(pair.id);
    expect(localView(local).has('/Proj/art.psd')).toBe(false);

    rmSync(join(local, 'Proj'), { recursive: true });
    const r = await engine.run(pair.id);
    expect(r.plan.refused).toBeUndefined();
    // The synced files and the folder they left empty are gone; what was never here stays, in its folder.
    expect(sorted(await remoteView(remote, '/Sync'))).toEqual(
      sorted(
        new Map([
          ['/.tributaryignore', '*.psd\n'],
          ['/Proj', '/'],
          ['/Proj/art.psd', 'artwork, only on the server'],
          ['/Proj/Big', '/'],
          ['/Proj/Big/video.bin', 'video, only on the server'],
        ]),
      ),
    );
    // The folder is still on the server, so it is here again (empty: the rest is left out here).
    expect(sorted(localView(local))).toEqual([
      ['/.tributaryignore', '*.psd\n'],
      ['/Proj', '/'],
    ]);
    expect(engine.store.conflicts()).toEqual([]);
    expect(trashContents(trash)).toEqual([]);
    // Settled: nothing more to do.
    expect((await engine.run(pair.id)).ops).toBe(0);
    expect(engine.store.pair(pair.id).state).toBe('idle');
  } finally {
    await engine.close();
    db.close();
  }
}

/**
 * The usual conflict at /a.txt: the server's version under the name on both sides, this
 * computer's under the conflict name on both; no temporary file left, nothing more to do.
 */
async function expectBothKept(engine: SyncEngine, pairId: number, local: string, remote: StorageConnector, versions: { server: string; here: string }): Promise<void> {
  const conflicts = engine.store.conflicts();
  expect(conflicts).toHaveLength(1);
  expect(conflicts[0].path).toBe('/a.txt');
  expect(text(local, 'a.txt')).toBe(versions.server);
  expect(text(local, conflicts[0].copyPath)).toBe(versions.here);
  expect(await textOf(remote, `/Sync${conflicts[0].copyPath}`)).toBe(versions.here);
  expect(sorted(await remoteView(remote, '/Sync'))).toEqual(sorted(localView(local)));
  expect([...localView(local).keys()].sort()).toEqual(['/a.txt', conflicts[0].copyPath].sort());
  expect((await engine.run(pairId)).ops).toBe(0);
}

async function webdav(dir: string) {
  const server = await startApache();
  const remote = await openConnector('webdav', webdavOptions(server), dir);
  return { server, remote };
}

describe('sync safety: no version is lost', () => {
  it('Backend without a trash (memory): a local folder delete removes only the synced files; an ignored file and an excluded folder on the server stay', async () => {
    const dir = scratchDir('sync-unsynced-mem');
    try {
      await folderDeleteKeepsUnsynced(memoryWithoutTrash('unsynced'), dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('Backend without a trash (Apache WebDAV): a local folder delete removes only the synced files; an ignored file and an excluded folder on the server stay', async () => {
    const dir = scratchDir('sync-unsynced-webdav');
    const { server, remote } = await webdav(dir);
    try {
      await folderDeleteKeepsUnsynced(remote, dir);
    } finally {
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('A remote folder delete sends the local folder to the trash with the ignored files in it', async () => {
    const dir = scratchDir('sync-unsynced-local');
    const local = join(dir, 'local');
    const trash = join(dir, 'trash');
    mkdirSync(join(local, 'Proj'), { recursive: true });
    writeFileSync(join(local, '.tributaryignore'), '*.psd\n');
    writeFileSync(join(local, 'Proj', 'notes.txt'), 'notes');
    const remote = memoryWithoutTrash('local-side');
    await remote.mkdir('/Sync');
    const db = syncDb();
    const { engine, pair } = await pairEngine(db, remote, local, '/Sync', trash);
    try {
      await engine.run(pair.id);
      writeFileSync(join(local, 'Proj', 'art.psd'), 'artwork, only here');
      await engine.run(pair.id);
      await remote.remove('/Sync/Proj', { recursive: true });
      await engine.run(pair.id);
      expect(localView(local).has('/Proj')).toBe(false);
      expect(trashContents(trash).sort()).toEqual(['artwork, only here', 'notes']);
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('A local save made while a new remote version downloads is not replaced: both versions are kept as a conflict', async () => {
    const dir = scratchDir('sync-save-during-download');
    const local = join(dir, 'local');
    const trash = join(dir, 'trash');
    mkdirSync(local);
    writeFileSync(join(local, 'a.txt'), 'v1');
    const remote = new MemoryConnector(`save-during-download-${Math.random()}`);
    await remote.mkdir('/Sync');
    // The download of /Sync/a.txt stops half-way until the user has saved the local file.
    let save: (() => void) | undefined;
    let saved = false;
    const read = remote.read.bind(remote);
    remote.read = async (path, opts) => {
      const stream = await read(path, opts);
      const during = save;
      if (!during || path !== '/Sync/a.txt') return stream;
      save = undefined;
      const chunks: Buffer[] = [];
      for await (const ch of stream) chunks.push(ch as Buffer);
      const bytes = Buffer.concat(chunks);
      return Readable.from(
        (async function* () {
          yield bytes.subarray(0, bytes.length >> 1);
          during();
          yield bytes.subarray(bytes.length >> 1);
        })(),
      );
    };
    const db = syncDb();
    const { engine, pair } = await pairEngine(db, remote, local, '/Sync', trash);
    try {
      await engine.run(pair.id);
      expect(await textOf(remote, '/Sync/a.txt')).toBe('v1');
      await put(remote, '/Sync/a.txt', 'v2 from the server');
      save = () => {
        writeFileSync(join(local, 'a.txt'), 'v2 saved here');
        saved = true;
      };
      await engine.run(pair.id);
      expect(saved).toBe(true);
      await expectBothKept(engine, pair.id, local, remote, { server: 'v2 from the server', here: 'v2 saved here' });
    } finally {
      await engine.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /**
   * The user saves a.txt here; right after sync has looked at the server's a.txt, and before the
   * upload is published, a colleague saves a.txt there (`colleagueSaves`, behind the connector's
   * back). Neither version is lost: the usual conflict.
   */
  async function colleagueSavesDuringUpload(remote: StorageConnector, dir: string, colleagueSaves: (text: string) => void): Promise<void> {
    const local = join(dir, 'local');
    const trash = join(dir, 'trash');
    mkdirSync(local);
    writeFileSync(join(local, 'a.txt'), 'v1');
    await remote.mkdir('/Sync');
    let during: (() => void) | undefined;
    const once = () => {
      during?.();
      during = undefined;
    };
    // Both ways up: a stream (`write`) and, where the backend reads the file itself, `writeFile`.
    const write = remote.write.bind(remote);
    remote.write = async (path, body, opts) => (path === '/Sync/a.txt' && once(), write(path, body, opts));
    const features = remote.features as { writeFile?: StorageConnector['features']['writeFile'] };
    const writeFile = features.writeFile;
    if (writeFile) features.writeFile = async (path, file, opts) => (path === '/Sync/a.txt' && once(), writeFile(path, file, opts));
    const db = syncDb();
    const { engine, pair } = await pairEngine(db, remote, local, '/Sync', trash);
    try {
      await engine.run(pair.id);
      expect(await textOf(remote, '/Sync/a.txt')).toBe('v1');
      writeFileSync(join(local, 'a.txt'), 'v2 saved here');
      let saved = false;
      during = () => {
        colleagueSaves('v2 saved by a colleague');
        saved = true;
      };
      await engine.run(pair.id);
      expect(saved).toBe(true);
      await expectBothKept(engine, pair.id, local, remote, { server: 'v2 saved by a colleague', here: 'v2 saved here' });
    } finally {
      await engine.close();
      db.close();
    }
  }

  // Each server with its connector's options and a way to save a.txt behind the connector's back.
  const colleagueServers = {
    'Apache WebDAV': async () => {
      const server = await startApache();
      return { server, service: 'webdav', options: webdavOptions(server), save: (t: string) => server.place('Sync/a.txt', Buffer.from(t)) };
    },
    'OpenSSH SFTP': async () => {
      const server = await startSshd();
      const options = { host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir };
      return { server, service: 'sftp', options, save: (t: string) => writeFileSync(join(server.dataDir, 'Sync', 'a.txt'), t) };
    },
  };

  it.each(Object.keys(colleagueServers) as (keyof typeof colleagueServers)[])('A colleague\'s save that reaches the server while an upload replaces the file is kept (%s): both versions, as a conflict', async (name) => {
    const dir = scratchDir('sync-colleague');
    const { server, service, options, save } = await colleagueServers[name]();
    const remote = await openConnector(service, options, dir);
    try {
      await colleagueSavesDuringUpload(remote, dir, save);
    } finally {
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
