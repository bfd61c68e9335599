// Two-way sync end to end (docs/sync.md) against real servers: local folder ↔ Apache WebDAV
// (mod_dav_fs), ↔ OpenSSH SFTP (internal-sftp), ↔ S3 on moto. Random changes on both sides
// (seeded: SYNC_SEED=<n> replays one, SYNC_SEED=random draws one), and after every run both
// sides must be equal with no version lost (each is on a side, maybe as a conflict copy, or in
// the trash).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Entry, StorageConnector } from '../../src-main/connectors/types';
import { startApache } from '../servers/apache';
import { startMoto } from '../servers/s3';
import { startSshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { localView, openConnector, pairEngine, remoteView, rng, sorted, syncDb, textOf, trashContents, Users } from './scenario';

async function randomScenario(label: string, remote: StorageConnector, dir: string): Promise<void> {
  // A fixed scenario by default (the same every run); SYNC_SEED=<n> plays another, and
  // SYNC_SEED=random draws one (every failure message names it).
  const seed = process.env.SYNC_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.SYNC_SEED ?? 20261124);
  if (!Number.isSafeInteger(seed)) throw new Error(`SYNC_SEED must be a number or "random", not ${process.env.SYNC_SEED}`);
  const localRoot = join(dir, 'local');
  const trash = join(dir, 'trash');
  mkdirSync(localRoot);
  await remote.mkdir('/Sync');
  const db = syncDb();
  const { engine, pair } = await pairEngine(db, remote, localRoot, '/Sync', trash);
  const users = new Users(localRoot, remote, '/Sync', rng(seed));
  let ops = 0;
  try {
    for (let i = 0; i < 8; i++) await users.localStep();
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 3; i++) {
        await users.localStep();
        await users.remoteStep();
      }
      const r = await engine.run(pair.id);
      ops += r.ops;
      expect(r.plan.refused, `seed ${seed}`).toBeUndefined();
      const [l, rv] = [localView(localRoot), await remoteView(remote, '/Sync')];
      // Object stores have no empty folders: compare files, and folders where the backend keeps them.
      const files = (m: Map<string, string>) => sorted(m).filter(([, c]) => c !== '/');
      expect(files(rv), `seed ${seed}, round ${round}`).toEqual(files(l));
      expect(users.lost([l], trashContents(trash)), `seed ${seed}`).toEqual([]);
    }
    expect(engine.store.pair(pair.id).state).toBe('idle');
    expect(ops).toBeGreaterThan(10);
    // A run with nothing changed does nothing.
    expect((await engine.run(pair.id)).ops).toBe(0);
    console.log(`sync ${label} seed ${seed}: ${ops} operations, ${engine.store.conflicts().length} conflicts, ${localView(localRoot).size} entries`);
  } finally {
    await engine.close();
    db.close();
  }
}

describe('sync engine end to end: random scenarios on real servers', () => {
  it('local ↔ Apache WebDAV', async () => {
    const dir = scratchDir('sync-webdav');
    const server = await startApache();
    const remote = await openConnector('webdav', { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password }, dir);
    try {
      await randomScenario('webdav', remote, dir);
    } finally {
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('local ↔ OpenSSH SFTP', async () => {
    const dir = scratchDir('sync-sftp');
    const server = await startSshd();
    const remote = await openConnector('sftp', { host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir, hostKeyFingerprint: server.hostKeyFingerprint }, dir);
    try {
      await randomScenario('sftp', remote, dir);
    } finally {
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('local ↔ S3 on moto', async () => {
    const dir = scratchDir('sync-s3');
    const server = await startMoto();
    const remote = await openConnector('s3', server.options, dir);
    try {
      await randomScenario('s3', remote, dir);
    } finally {
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Waits for the start of the next second (plus a few ms), so that what follows shares one second. */
async function nextSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1010 - (Date.now() % 1000)));
}

// docs/sync.md, "How changes are found": on a backend that keeps whole seconds (SFTP's ETag is
// time and size), a same-size edit in the second Tributary wrote or saw a version must not hide.
describe('sync engine: whole-second times (local ↔ OpenSSH SFTP)', () => {
  it('a same-size remote edit in the second of Tributary\'s own upload is seen; an unchanged one is not copied back', async () => {
    const dir = scratchDir('sync-seconds');
    const server = await startSshd();
    const remote = await openConnector('sftp', { host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir, hostKeyFingerprint: server.hostKeyFingerprint }, dir);
    const localRoot = join(dir, 'local');
    mkdirSync(localRoot);
    await remote.mkdir('/Sync');
    const db = syncDb();
    const { engine, pair } = await pairEngine(db, remote, localRoot, '/Sync', join(dir, 'trash'));
    const put = (p: string, c: string) => remote.write(`/Sync${p}`, Readable.from([Buffer.from(c)]), { size: c.length });
    try {
      // The edit must land in the upload's second (the run waits for that second to end before
      // it looks again); a slow machine may miss it, so a few tries.
      let hidden = 0;
      for (let attempt = 0; attempt < 5 && !hidden; attempt++) {
        const name = `/edit${attempt}.txt`;
        await nextSecond();
        writeFileSync(join(localRoot, name), 'mine');
        const run = engine.run(pair.id);
        let uploaded: Entry | undefined;
        while (!uploaded) uploaded = await remote.stat(`/Sync${name}`).catch(() => undefined);
        const edited = await put(name, 'them');
        await run;
        if (edited.etag !== uploaded.etag) continue;
        hidden++;
        // Same ETag as the upload, other content: only reading it again can tell.
        expect(readFileSync(join(localRoot, name), 'utf8')).toBe('them');
        expect(await textOf(remote, `/Sync${name}`)).toBe('them');
        expect((await engine.run(pair.id)).ops).toBe(0);
      }
      expect(hidden, 'no edit landed in the second of its upload').toBe(1);

      // A version listed within its second and left alone is read to compare, not copied again.
      await nextSecond();
      await put('/seen.txt', 'same');
      expect((await engine.run(pair.id)).ops).toBe(1);
      expect(readFileSync(join(localRoot, 'seen.txt'), 'utf8')).toBe('same');
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(engine.store.conflicts()).toEqual([]);
    } finally {
      await engine.close();
      db.close();
      await remote.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
