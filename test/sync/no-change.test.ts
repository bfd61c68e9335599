// A pass over a pair where nothing changed (docs/sync.md, "How changes are found"): the scans
// are compared with the stored ones row by row, and when both are as they were when the last
// plan came out empty, the synced tree is not read and nothing is planned. A change made after
// such a pass is still carried over. Both sides are folders on this disk (the remote one through
// the local connector).
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { CompactTree } from '../../src-main/sync/compact';
import { scratchDir, until } from '../servers/util';
import { text, localEngine } from './scenario';

describe('sync: a pass over an unchanged pair', () => {
  const dir = scratchDir('sync-no-change');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes no row and plans nothing, and a later change on either side still crosses', async () => {
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/x.txt'), 'one');
    writeFileSync(join(mine, 'y.txt'), 'one');
    const { db, engine } = localEngine(dir, theirs, { manual: true }, 'sync.db');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      expect((await engine.run(pair.id)).ops).toBeGreaterThan(0);
      expect(readFileSync(join(theirs, 'a/x.txt'), 'utf8')).toBe('one');
      // Between runs both last scans are kept in their compact form (docs/sync.md).
      for (const side of ['local', 'remote'] as const) expect(engine.store.lastScan(pair.id, side)).toBeInstanceOf(CompactTree);

      const synced = vi.spyOn(engine.store, 'synced');
      const saved = vi.spyOn(engine.store, 'saveTree');
      const again = await engine.run(pair.id);
      expect(again.ops).toBe(0);
      // Compared with the last scans while read: no tree is built or stored, and the settled
      // mark (cleared by the database on any tree or journal write) is still there.
      expect(saved).not.toHaveBeenCalled();
      expect(engine.store.settled.has(pair.id)).toBe(true);
      expect(synced).not.toHaveBeenCalled();
      expect(engine.store.pair(pair.id).state).toBe('idle');

      // A remote edit and a local addition after the settled pass are planned and carried over.
      writeFileSync(join(theirs, 'a/x.txt'), 'two, remote');
      writeFileSync(join(mine, 'z.txt'), 'new, local');
      expect((await engine.run(pair.id)).ops).toBeGreaterThan(0);
      expect(synced).toHaveBeenCalled();
      expect(readFileSync(join(mine, 'a/x.txt'), 'utf8')).toBe('two, remote');
      expect(readFileSync(join(theirs, 'z.txt'), 'utf8')).toBe('new, local');
    } finally {
      await engine.close();
      db.close();
    }
  });

  it('with the watch ready and quiet, reads only the remote side; a change on either side still crosses', async () => {
    const [mine, theirs] = [join(dir, 'w-mine'), join(dir, 'w-theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/x.txt'), 'one');
    const { db, engine } = localEngine(dir, theirs, { pollMs: 0, debounceMs: 50 }, 'w-sync.db');
    try {
      await engine.start();
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await until(() => text(theirs, 'a/x.txt') === 'one' && engine.store.pair(pair.id).state === 'idle');
      // Settles (a second pass comes out empty) with the watch ready.
      await until(() => (engine as unknown as { ready: Set<number> }).ready.has(pair.id));
      await engine.run(pair.id);

      const tree = vi.spyOn(engine.store, 'tree');
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(tree).not.toHaveBeenCalled();

      writeFileSync(join(theirs, 'a/x.txt'), 'two, remote');
      expect((await engine.run(pair.id)).ops).toBeGreaterThan(0);
      expect(text(mine, 'a/x.txt')).toBe('two, remote');
      await engine.run(pair.id);
      writeFileSync(join(mine, 'a/y.txt'), 'new, local');
      await until(() => text(theirs, 'a/y.txt') === 'new, local');
    } finally {
      await engine.close();
      db.close();
    }
  });

  // The settled mark is kept in the database (migration 0850): the first pass after a start
  // plans nothing when both scans are as stored, and any write of the trees or the journal
  // since the mark (by whatever code) makes that pass plan again.
  it('after a start: plans nothing over an unchanged settled pair; a tree or journal written since is planned again', async () => {
    const [mine, theirs] = [join(dir, 'r-mine'), join(dir, 'r-theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/x.txt'), 'one');
    writeFileSync(join(mine, 'y.txt'), 'one');
    const start = () => localEngine(dir, theirs, { manual: true }, 'r-sync.db');
    const first = start();
    const pair = await first.engine.create({ localPath: mine, account: 1, remotePath: '/' });
    await first.engine.run(pair.id);
    expect((await first.engine.run(pair.id)).ops).toBe(0);
    await first.engine.close();
    first.db.close();

    // Started again, nothing changed: no synced tree read, nothing planned.
    let { db, engine } = start();
    try {
      const synced = vi.spyOn(engine.store, 'synced');
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(synced).not.toHaveBeenCalled();
      // A synced entry lost behind the engine's back (the scans are unchanged): planned again,
      // and the file is recorded as synced once more.
      engine.store.forgetSynced(pair.id, '/y.txt');
    } finally {
      await engine.close();
      db.close();
    }
    ({ db, engine } = start());
    try {
      const synced = vi.spyOn(engine.store, 'synced');
      await engine.run(pair.id);
      expect(synced).toHaveBeenCalled();
      expect(engine.store.getSynced(pair.id, '/y.txt')).toMatchObject({ path: '/y.txt', kind: 'file' });
      // Settled again; then an operation journaled and never finished (a kill before its write).
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(engine.store.settled.has(pair.id)).toBe(true);
      engine.store.begin(pair.id, { type: 'forget', path: '/gone.txt' });
      expect(engine.store.settled.has(pair.id)).toBe(false);
    } finally {
      await engine.close();
      db.close();
    }
  });

  // After a start, a settled pair's sides are compared with the stored rows (read into their
  // compact form) while they are read: a change made while the engine was stopped is planned.
  it('after a start: changes made while stopped, on either side, are seen and carried over', async () => {
    const [mine, theirs] = [join(dir, 's-mine'), join(dir, 's-theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    for (const n of ['a/x.txt', 'a/y.txt', 'z.txt']) writeFileSync(join(mine, n), 'one');
    const start = () => localEngine(dir, theirs, { manual: true }, 's-sync.db');
    const first = start();
    const pair = await first.engine.create({ localPath: mine, account: 1, remotePath: '/' });
    await first.engine.run(pair.id);
    expect((await first.engine.run(pair.id)).ops).toBe(0);
    expect(first.engine.store.settled.has(pair.id)).toBe(true);
    await first.engine.close();
    first.db.close();

    // Each change alone, made while stopped: the same size on the remote side, a local file gone,
    // a local folder added.
    const changes: [string, () => void, () => void][] = [
      ['a remote edit', () => writeFileSync(join(theirs, 'a/x.txt'), 'two'), () => expect(text(mine, 'a/x.txt')).toBe('two')],
      ['a local delete', () => rmSync(join(mine, 'z.txt')), () => expect(text(theirs, 'z.txt')).toBeUndefined()],
      ['a local folder', () => mkdirSync(join(mine, 'new')), () => expect(statSync(join(theirs, 'new')).isDirectory()).toBe(true)],
    ];
    for (const [what, change, check] of changes) {
      change();
      const { db, engine } = start();
      try {
        expect({ what, ops: (await engine.run(pair.id)).ops }).toEqual({ what, ops: 1 });
        check();
        expect((await engine.run(pair.id)).ops).toBe(0);
      } finally {
        await engine.close();
        db.close();
      }
    }
  });
});
