// Two-way sync, an operation that keeps failing (docs/sync.md, "Pairs": a run's rounds, and what
// a run that could not do everything shows): a name the server cannot hold, or a file the account
// refuses, is tried in two rounds of a run and then left for the next run; the rest of the work is
// done, the run ends, and the pair is in error naming the file and why. Once the cause is gone
// (the file renamed) the next run syncs it and the error clears.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryConnector } from '../../src-main/connectors/memory';
import { SmbConnector } from '../../src-main/connectors/smb';
import type { Entry, WriteOptions } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { smbOptionsFor, startSamba } from '../servers/samba';
import { scratchDir } from '../servers/util';
import { localView, pairEngine, remoteView, syncDb } from './scenario';

// Without a bound on the failing operation a run goes round 100 times; the timeout only guards a stall.
const timeout = 30_000;

describe('sync: an operation that keeps failing', () => {
  const dir = scratchDir('sync-failing-ops');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('Pairs: a name SMB cannot hold is tried twice, the rest is synced, the pair names the file; renamed, it syncs', { timeout }, async () => {
    const s = await startSamba();
    const remote = new SmbConnector(smbOptionsFor(s));
    const db = syncDb();
    try {
      const local = join(dir, 'smb-local');
      mkdirSync(local);
      await remote.mkdir('/S');
      writeFileSync(join(local, 'notes.txt'), 'n1');
      const { engine, pair } = await pairEngine(db, remote, local, '/S', join(dir, 'smb-trash'));
      await engine.run(pair.id);

      writeFileSync(join(local, 'meeting: agenda.txt'), 'agenda');
      writeFileSync(join(local, 'notes.txt'), 'n2');
      mkdirSync(join(local, 'minutes'));
      writeFileSync(join(local, 'minutes', 'monday.txt'), 'monday');
      const first = await engine.run(pair.id);
      // Two rounds: the failing upload is tried again once on fresh scans, then left.
      expect(first.rounds).toBeLessThanOrEqual(2);
      expect(first.failed).toEqual([{ path: '/meeting: agenda.txt', message: expect.stringContaining('not a valid SMB name') }]);
      expect([...(await remoteView(remote, '/S'))].sort()).toEqual([
        ['/minutes', '/'],
        ['/minutes/monday.txt', 'monday'],
        ['/notes.txt', 'n2'],
      ]);
      const state = engine.store.pair(pair.id);
      expect(state.state).toBe('error');
      expect(state.error).toContain('/meeting: agenda.txt');
      expect(state.error).toContain('not a valid SMB name');

      // The next run tries it once more, and stops there.
      const again = await engine.run(pair.id);
      expect(again).toMatchObject({ rounds: 1, ops: 0 });
      expect(engine.store.pair(pair.id)).toMatchObject({ state: 'error', error: expect.stringContaining('/meeting: agenda.txt') });

      renameSync(join(local, 'meeting: agenda.txt'), join(local, 'meeting - agenda.txt'));
      const fixed = await engine.run(pair.id);
      expect(fixed.failed).toEqual([]);
      expect(engine.store.pair(pair.id)).toMatchObject({ state: 'idle', error: null });
      expect((await remoteView(remote, '/S')).get('/meeting - agenda.txt')).toBe('agenda');
      await engine.close();
    } finally {
      await remote.close();
      db.close();
      await s.stop();
    }
  });

  it('Pairs: an upload the account always refuses (its quota) does not stop a conflict from being carried over, and clears once renamed', { timeout }, async () => {
    let rootListings = 0;
    // The account's quota has no room for this one file.
    class FullAccount extends MemoryConnector {
      override async write(path: string, body: Readable, opts?: WriteOptions): Promise<Entry> {
        if (path.endsWith('/big.bin')) {
          body.resume();
          throw new ServiceError('insufficient_storage', 'The account has no room left for "big.bin".');
        }
        return super.write(path, body, opts);
      }
      override async list(path: string): Promise<Entry[]> {
        if (path === '/P') rootListings++;
        return super.list(path);
      }
    }
    const remote = new FullAccount('sync-failing-quota');
    const db = syncDb();
    const local = join(dir, 'quota-local');
    mkdirSync(local);
    await remote.mkdir('/P');
    writeFileSync(join(local, 'doc.txt'), 'v1');
    const { engine, pair } = await pairEngine(db, remote, local, '/P', join(dir, 'quota-trash'));
    try {
      await engine.run(pair.id);
      // Both sides change doc.txt: a conflict, which takes a round to rename and one to copy.
      writeFileSync(join(local, 'doc.txt'), 'mine');
      await remote.write('/P/doc.txt', Readable.from([Buffer.from('theirs')]), { size: 6 });
      writeFileSync(join(local, 'big.bin'), 'big');
      rootListings = 0;
      const first = await engine.run(pair.id);
      expect(first.failed).toEqual([{ path: '/big.bin', message: 'The account has no room left for "big.bin".' }]);
      expect(rootListings).toBeLessThanOrEqual(4);
      const mine = localView(local);
      const there = await remoteView(remote, '/P');
      expect(there.get('/doc.txt')).toBe('theirs');
      expect([...there.values()].sort()).toEqual(['mine', 'theirs']);
      expect(mine.get('/big.bin')).toBe('big');
      expect(there.has('/big.bin')).toBe(false);
      expect(engine.store.pair(pair.id)).toMatchObject({ state: 'error', error: 'Could not sync /big.bin: The account has no room left for "big.bin".' });

      renameSync(join(local, 'big.bin'), join(local, 'small.bin'));
      await engine.run(pair.id);
      expect(engine.store.pair(pair.id)).toMatchObject({ state: 'idle', error: null });
      expect((await remoteView(remote, '/P')).get('/small.bin')).toBe('big');
    } finally {
      await engine.close();
      db.close();
    }
  });
});
