// Two-way sync, the safety rails end to end (docs/sync.md, "Safety": a vanished root, an empty
// listing from a failing server or an unmounted disk never reads as "delete everything"; a lost
// state database means a careful resync, the union with conflicts kept, not deletes). The
// planner's own tests (planner.cases.test.ts) give it the trees; these go through the engine,
// its checks of both roots and its scans, on folders of this disk (the remote one a local account).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local';
import { ServiceError } from '../../src-main/errors';
import { SyncEngine } from '../../src-main/sync/engine';
import { scratchDir } from '../servers/util';
import { syncDb, trashContents } from './scenario';

describe('sync safety rails through the engine', () => {
  const dir = scratchDir('sync-safety');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const FILES = { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' };

  /** A pair of `mine` ↔ a local account over `theirs`, synced once with FILES on both sides. */
  async function syncedPair(name: string, db = syncDb()) {
    const [mine, theirs] = [join(dir, `${name}-mine`), join(dir, `${name}-theirs`)];
    const trash = { local: join(dir, `${name}-trash-local`), remote: join(dir, `${name}-trash-remote`) };
    mkdirSync(mine);
    mkdirSync(theirs);
    for (const [n, c] of Object.entries(FILES)) writeFileSync(join(mine, n), c);
    const remote = new LocalConnector({ path: theirs, trashDir: trash.remote });
    const engine = new SyncEngine(db, async () => remote, { manual: true, trashDir: trash.local });
    const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
    await engine.run(pair.id);
    expect(readdirSync(theirs).sort()).toEqual(Object.keys(FILES));
    const state = () => engine.store.pair(pair.id);
    return { mine, theirs, trash, remote, engine, pair, state, close: async () => (await engine.close(), await remote.close(), db.close()) };
  }

  const holds = (folder: string) => Object.fromEntries(readdirSync(folder).sort().map((n) => [n, readFileSync(join(folder, n), 'utf8')]));

  it('Vanished root: a local folder that went away (an unmounted disk) refuses the pair; nothing is deleted, and it syncs again once back', async () => {
    const { mine, theirs, trash, engine, pair, state, close } = await syncedPair('vanished');
    try {
      renameSync(mine, `${mine}-away`);
      const r = await engine.run(pair.id);
      expect(r.plan.refused).toEqual({ reason: 'root-missing', side: 'local' });
      expect(state()).toMatchObject({ state: 'refused', error: expect.stringContaining('missing') });
      expect(holds(theirs)).toEqual(FILES);
      expect(trashContents(trash.remote)).toEqual([]);

      renameSync(`${mine}-away`, mine);
      writeFileSync(join(mine, 'new.txt'), 'new');
      expect((await engine.run(pair.id)).plan.refused).toBeUndefined();
      expect(state().state).toBe('idle');
      expect(holds(theirs)).toEqual({ ...FILES, 'new.txt': 'new' });
    } finally {
      await close();
    }
  });

  it('Empty listing: an empty local folder (the mount point of an unmounted disk) or an empty answer from the server waits for the user; confirmed, the deletes go to the trash', async () => {
    const { mine, theirs, trash, remote, engine, pair, state, close } = await syncedPair('empty');
    try {
      // The local side reads empty while the remote one is not.
      renameSync(mine, `${mine}-away`);
      mkdirSync(mine);
      let r = await engine.run(pair.id);
      expect(r.plan.refused).toEqual({ reason: 'empty-side', side: 'local' });
      expect(state()).toMatchObject({ state: 'refused', error: expect.stringContaining('confirm') });
      expect(holds(theirs)).toEqual(FILES);
      rmSync(mine, { recursive: true });
      renameSync(`${mine}-away`, mine);

      // The server answers an empty listing of the pair's folder.
      const listStats = remote.listStats.bind(remote);
      remote.listStats = async (path) => (path === '/' ? [] : listStats(path));
      r = await engine.run(pair.id);
      expect(r.plan.refused).toEqual({ reason: 'empty-side', side: 'remote' });
      expect(holds(mine)).toEqual(FILES);
      expect(trashContents(trash.local)).toEqual([]);
      remote.listStats = listStats;
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(state().state).toBe('idle');

      // Really emptied on purpose: the user confirms, and the files go to the trash.
      for (const n of Object.keys(FILES)) rmSync(join(mine, n));
      expect((await engine.run(pair.id)).plan.refused).toMatchObject({ side: 'local' });
      expect(holds(theirs)).toEqual(FILES);
      await engine.confirm(pair.id);
      expect(readdirSync(theirs)).toEqual([]);
      expect(trashContents(trash.remote).sort()).toEqual(Object.values(FILES));
      // The confirmation is used up: it allows nothing later.
      expect(state()).toMatchObject({ state: 'idle', allowDeletes: false });
    } finally {
      await close();
    }
  });

  it('A failing server: a listing that fails is an error of the run, never an empty side', async () => {
    const { mine, theirs, remote, engine, pair, state, close } = await syncedPair('failing');
    try {
      const listStats = remote.listStats.bind(remote);
      remote.listStats = async () => {
        throw new ServiceError('service_not_available', 'The server is down.');
      };
      rmSync(join(theirs, 'a.txt'));
      await expect(engine.run(pair.id)).rejects.toMatchObject({ code: 'service_not_available' });
      expect(state()).toMatchObject({ state: 'error', error: expect.stringContaining('The server is down.') });
      expect(holds(mine)).toEqual(FILES);
      remote.listStats = listStats;
      // Back: one file deleted there (one of three, below the share that asks) is deleted here.
      await engine.run(pair.id);
      expect(holds(mine)).toEqual({ 'b.txt': 'b', 'c.txt': 'c' });
    } finally {
      await close();
    }
  });

  it('A lost state database: the pair made again over both folders is a careful resync, the union with conflicts kept and nothing deleted', async () => {
    const first = await syncedPair('lost');
    const { mine, theirs, trash } = first;
    await first.close();
    // Changes while no database knows the pair: deletes and edits on both sides.
    rmSync(join(mine, 'a.txt'));
    rmSync(join(theirs, 'b.txt'));
    writeFileSync(join(mine, 'c.txt'), 'c, mine');
    writeFileSync(join(theirs, 'c.txt'), 'c, theirs');
    writeFileSync(join(theirs, 'same.txt'), 'same');
    writeFileSync(join(mine, 'same.txt'), 'same');

    const db = syncDb();
    const remote = new LocalConnector({ path: theirs, trashDir: trash.remote });
    const engine = new SyncEngine(db, async () => remote, { manual: true, trashDir: trash.local });
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      const r = await engine.run(pair.id);
      expect(r.plan.refused).toBeUndefined();
      expect(engine.store.pair(pair.id).state).toBe('idle');
      // Nothing deleted: what one side lost comes back from the other; equal files are no conflict.
      const [conflict, ...more] = engine.store.conflicts();
      expect(more).toEqual([]);
      expect(conflict).toMatchObject({ path: '/c.txt', copyPath: expect.stringMatching(/^\/c \(conflict \d{4}-\d\d-\d\d \d{6}\)\.txt$/) });
      const copy = conflict.copyPath.slice(1);
      const union = { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c, theirs', [copy]: 'c, mine', 'same.txt': 'same' };
      expect(holds(mine)).toEqual(union);
      expect(holds(theirs)).toEqual(union);
      expect([trashContents(trash.local), trashContents(trash.remote)]).toEqual([[], []]);
      expect(existsSync(join(mine, copy))).toBe(true);
    } finally {
      await engine.close();
      await remote.close();
      db.close();
    }
  });
});
