// Two-way sync, what a user sees of a pair's work (docs/sync.md, "Pairs" and "Safety"): a delete
// carried over goes to the trash of the side it deletes on where that side has one, and a pair
// at work says how many operations it has left ("syncing N files"), which the Sync view shows.
// Both sides are folders on this disk (the remote one a local account, which has a trash).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local';
import { SyncEngine, type PairStatus } from '../../src-main/sync/engine';
import { scratchDir, until } from '../servers/util';
import { localEngine, syncDb, text, trashContents } from './scenario';

// The renderer's own module, loaded at run time: it belongs to the web TypeScript project, and a
// static import would pull it into the node project (TS6307).
type Words = {
  stateText(p: Pick<PairStatus, 'paused' | 'state' | 'pending' | 'error'>): string;
  conflictsText(n: number): string;
};
const RENDERER_WORDS = '../../src-renderer/src/features/sync/state-text.ts';
let stateText: Words['stateText'];
let conflictsText: Words['conflictsText'];

describe('sync: deletes go to the trash, and the pair says what it is doing', () => {
  const dir = scratchDir('sync-trash-state');
  beforeAll(async () => {
    ({ stateText, conflictsText } = (await import(/* @vite-ignore */ RENDERER_WORDS)) as Words);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A pair of `mine` and a local account over `theirs`, each side with its own trash. */
  function pairOf(name: string) {
    const [mine, theirs] = [join(dir, `${name}-mine`), join(dir, `${name}-theirs`)];
    const trash = { local: join(dir, `${name}-trash-local`), remote: join(dir, `${name}-trash-remote`) };
    mkdirSync(mine);
    mkdirSync(theirs);
    const db = syncDb();
    const remote = new LocalConnector({ path: theirs, trashDir: trash.remote });
    const engine = new SyncEngine(db, async () => remote, { manual: true, trashDir: trash.local });
    return { mine, theirs, trash, engine, close: async () => (await engine.close(), await remote.close(), db.close()) };
  }

  // docs/sync.md, "Safety": deletes go to the trash where the backend has one.
  it('a file deleted on one side goes to the trash of the other, both ways', async () => {
    const { mine, theirs, trash, engine, close } = pairOf('trash');
    try {
      writeFileSync(join(mine, 'gone-here.txt'), 'deleted on this computer');
      writeFileSync(join(mine, 'gone-there.txt'), 'deleted in the account');
      writeFileSync(join(mine, 'kept.txt'), 'kept');
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      expect(existsSync(join(theirs, 'gone-here.txt')) && existsSync(join(theirs, 'gone-there.txt'))).toBe(true);

      rmSync(join(mine, 'gone-here.txt'));
      rmSync(join(theirs, 'gone-there.txt'));
      const r = await engine.run(pair.id);
      expect(r.plan.heldDeletes).toBeUndefined();
      expect(existsSync(join(theirs, 'gone-here.txt'))).toBe(false);
      expect(existsSync(join(mine, 'gone-there.txt'))).toBe(false);
      // Each in the trash of the side sync deleted it on, nothing else in either.
      expect(trashContents(trash.remote)).toEqual(['deleted on this computer']);
      expect(trashContents(trash.local)).toEqual(['deleted in the account']);
      expect(engine.store.pair(pair.id).state).toBe('idle');
    } finally {
      await close();
    }
  });

  // docs/sync.md, "Pairs": a pair's state (up to date / syncing N files / paused / error / N conflicts).
  it('while it copies, the pair is "syncing" with the operations left; then up to date with none', async () => {
    const { mine, theirs, engine, close } = pairOf('state');
    try {
      for (let i = 0; i < 5; i++) writeFileSync(join(mine, `f${i}.txt`), `file ${i}`);
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      const seen: Pick<PairStatus, 'state' | 'pending'>[] = [];
      engine.onChange(() => {
        const s = engine.status().find((p) => p.id === pair.id)!;
        seen.push({ state: s.state, pending: s.pending });
      });
      await engine.run(pair.id);
      for (let i = 0; i < 5; i++) expect(existsSync(join(theirs, `f${i}.txt`))).toBe(true);
      // The batch of five copies is announced before any of them starts.
      const busy = seen.filter((s) => s.state === 'syncing' && s.pending > 0);
      expect(busy[0]).toEqual({ state: 'syncing', pending: 5 });
      expect(stateText({ ...engine.status()[0], ...busy[0] })).toBe('Syncing 5 files');
      const end = engine.status()[0];
      expect(end).toMatchObject({ state: 'idle', pending: 0, conflicts: 0, paused: false });
      expect(stateText(end)).toBe('Up to date');
    } finally {
      await close();
    }
  });

  // docs/sync.md, "Pairs": a full rescan at start and on demand (**Sync now**).
  it('Sync now reads every local folder again, even one the watch said nothing about', async () => {
    const [mine, theirs] = [join(dir, 'rescan-mine'), join(dir, 'rescan-theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/x.txt'), 'x');
    // The watch's own runs wait an hour: only the calls below run the pair.
    const { db, remote, engine } = localEngine(dir, theirs, { pollMs: 0, debounceMs: 3_600_000 }, 'rescan.db', 'rescan-trash');
    const internals = engine as unknown as { ready: Set<number>; dirty: Map<number, Set<string>>; running: Map<number, unknown> };
    try {
      await engine.start();
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      // No run in flight (the one `create` starts, and any it asked for), so none reads what follows.
      const quiet = () => until(() => !internals.running.has(pair.id));
      await until(() => internals.ready.has(pair.id) && text(theirs, 'a/x.txt') === 'x');
      await quiet();
      // Settled with the watch ready: the next pass trusts it.
      await engine.run(pair.id);

      // A change whose event is lost: the watch saw it, then forgot it (as after an overflow it did not notice).
      writeFileSync(join(mine, 'a/y.txt'), 'y');
      await until(() => !!internals.dirty.get(pair.id)?.has('/a'));
      internals.dirty.set(pair.id, new Set());
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(text(theirs, 'a/y.txt')).toBeUndefined();
      await quiet();
      // Sync now: every folder is read.
      expect((await engine.rescan(pair.id)).ops).toBe(1);
      expect(text(theirs, 'a/y.txt')).toBe('y');
    } finally {
      await engine.close();
      await remote.close();
      db.close();
    }
  });

  it('the Sync view\'s words for each state', () => {
    const base = { paused: false, pending: 0, error: null } as const;
    expect(stateText({ ...base, state: 'syncing', pending: 1 })).toBe('Syncing 1 file');
    expect(stateText({ ...base, state: 'syncing', pending: 0 })).toBe('Syncing…');
    expect(stateText({ ...base, state: 'idle', paused: true })).toBe('Paused');
    expect(stateText({ ...base, state: 'error', error: 'The server is down.' })).toBe('Error: The server is down.');
    expect(stateText({ ...base, state: 'held', error: '12 of 20 files would be deleted.' })).toBe('Waiting for you: 12 of 20 files would be deleted.');
    expect(stateText({ ...base, state: 'idle' })).toBe('Up to date');
    expect([conflictsText(1), conflictsText(3)]).toEqual(['1 conflict', '3 conflicts']);
  });
});
