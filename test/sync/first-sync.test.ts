// The first sync of a pair (docs/sync.md, "Pairs"): new folders and what is inside them go in one
// round (copies into a folder wait for its mkdir); a round that only made folders and files, all
// of them, plans the next one from its scans and what it made, without scanning both sides again;
// the round that finds nothing left scans them for real.
// Both sides are folders on this disk (the remote one through the local connector).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { scratchDir } from '../servers/util';
import { localEngine } from './scenario';

describe('sync: the first sync of nested new folders', () => {
  const dir = scratchDir('sync-first');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('copies three levels of new folders each way with two scans of both sides, and settles', async () => {
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    mkdirSync(join(mine, 'a/b/c'), { recursive: true });
    mkdirSync(join(theirs, 'r/s/t'), { recursive: true });
    const files: Record<string, string> = { '/top.txt': 'top', '/a/one.txt': '1', '/a/b/two.txt': '2', '/a/b/c/three.txt': '3' };
    const remoteFiles: Record<string, string> = { '/r/one.txt': 'r1', '/r/s/t/three.txt': 'r3' };
    for (const [p, c] of Object.entries(files)) writeFileSync(join(mine, p), c);
    for (const [p, c] of Object.entries(remoteFiles)) writeFileSync(join(theirs, p), c);
    const { db, engine } = localEngine(dir, theirs, { manual: true }, 'sync.db');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      // Each scan of both sides stores two trees.
      const saved = vi.spyOn(engine.store, 'saveTree');
      const run = await engine.run(pair.id);
      // Folders a, a/b, a/b/c, r, r/s, r/s/t and six files, one operation each, in one round:
      // what goes into a new folder is copied once its mkdir is done, not a round later.
      expect(run.ops).toBe(12);
      expect(run.rounds).toBe(1);
      // The first scan and the one that finds nothing left: not one per level of folders.
      expect(saved).toHaveBeenCalledTimes(4);
      for (const [p, c] of Object.entries(files)) expect(readFileSync(join(theirs, p), 'utf8')).toBe(c);
      for (const [p, c] of Object.entries(remoteFiles)) expect(readFileSync(join(mine, p), 'utf8')).toBe(c);
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(engine.store.pair(pair.id).state).toBe('idle');
    } finally {
      await engine.close();
      db.close();
    }
  });

  it('a change made on a side while a run plans from what it made is carried over by that run', async () => {
    const [mine, theirs] = [join(dir, 'c-mine'), join(dir, 'c-theirs')];
    mkdirSync(join(mine, 'a/b'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/b/x.txt'), 'x');
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, 'c-sync.db');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      // Right after the first round (the remote folder a made), a file appears on each side: the
      // rounds planned without a scan do not know them, the scan that ends the run does.
      const mkdir = remote.mkdir.bind(remote);
      let once = false;
      vi.spyOn(remote, 'mkdir').mockImplementation(async (p) => {
        const e = await mkdir(p);
        if (!once) {
          once = true;
          writeFileSync(join(mine, 'late-local.txt'), 'L');
          writeFileSync(join(theirs, 'late-remote.txt'), 'R');
        }
        return e;
      });
      await engine.run(pair.id);
      expect(readFileSync(join(theirs, 'a/b/x.txt'), 'utf8')).toBe('x');
      expect(readFileSync(join(theirs, 'late-local.txt'), 'utf8')).toBe('L');
      expect(readFileSync(join(mine, 'late-remote.txt'), 'utf8')).toBe('R');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
    }
  });

  // docs/sync.md, *Crashes* and "a file changing while it is being uploaded": a file of this
  // computer copied to a local account is looked at after the copy only, against the scan.
  it('a file edited or deleted between the scan and its copy to a local account ends as the disk holds it', async () => {
    const [mine, theirs] = [join(dir, 'e-mine'), join(dir, 'e-theirs')];
    mkdirSync(join(mine, 'a'), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/x.txt'), 'x');
    writeFileSync(join(mine, 'a/y.txt'), 'y');
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, 'e-sync.db');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      // The remote folder a is made in the first round; its files are copied in the next one,
      // planned from the first round's scans: one is edited and one deleted in between.
      const mkdir = remote.mkdir.bind(remote);
      vi.spyOn(remote, 'mkdir').mockImplementation(async (p) => {
        const e = await mkdir(p);
        writeFileSync(join(mine, 'a/x.txt'), 'x, edited after the scan');
        rmSync(join(mine, 'a/y.txt'));
        return e;
      });
      await engine.run(pair.id);
      expect(engine.store.pair(pair.id).state).toBe('idle');
      expect(readFileSync(join(theirs, 'a/x.txt'), 'utf8')).toBe('x, edited after the scan');
      expect(existsSync(join(theirs, 'a/y.txt'))).toBe(false);
      vi.restoreAllMocks();
      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(engine.store.getSynced(pair.id, '/a/x.txt')?.hash).toBe(`md5:${createHash('md5').update('x, edited after the scan').digest('hex')}`);
    } finally {
      await engine.close();
      db.close();
    }
  });

  // docs/sync.md, "Pairs": a new folder and what is inside it go in one round; the copies into
  // it start once its mkdir is done (a slow server here), and none starts before.
  it('copies into a new folder wait for its mkdir, in the same round', async () => {
    const [mine, theirs] = [join(dir, 'm-mine'), join(dir, 'm-theirs')];
    mkdirSync(join(mine, 'n/m'), { recursive: true });
    mkdirSync(theirs);
    for (let i = 0; i < 8; i++) writeFileSync(join(mine, 'n', `x${i}.txt`), `x${i}`);
    writeFileSync(join(mine, 'n/m/y.txt'), 'y');
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, 'm-sync.db');
    const mkdir = remote.mkdir.bind(remote);
    const early: string[] = [];
    remote.mkdir = async (path) => {
      await new Promise((r) => setTimeout(r, 150));
      return mkdir(path);
    };
    const writeFile = remote.features.writeFile!;
    remote.features.writeFile = async (path, file, o) => {
      if (!existsSync(join(theirs, path, '..'))) early.push(path);
      return writeFile(path, file, o);
    };
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      const run = await engine.run(pair.id);
      expect(early).toEqual([]);
      expect(run).toMatchObject({ ops: 11, rounds: 1 });
      expect(readFileSync(join(theirs, 'n/m/y.txt'), 'utf8')).toBe('y');
      expect(readFileSync(join(theirs, 'n/x7.txt'), 'utf8')).toBe('x7');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
    }
  });

  // docs/sync.md, *Measured*: small files, where a copy mostly waits, go four times as many at a
  // time as the pair's concurrency; files from 1 MiB up stay within it (their streams' memory).
  it('copies small files more at a time than the concurrency, large ones never more', async () => {
    const [mine, theirs] = [join(dir, 'w-mine'), join(dir, 'w-theirs')];
    mkdirSync(mine);
    mkdirSync(theirs);
    for (let i = 0; i < 24; i++) writeFileSync(join(mine, `s${i}.txt`), `small ${i}`);
    for (let i = 0; i < 6; i++) writeFileSync(join(mine, `L${i}.bin`), Buffer.alloc((1 << 20) + 1, i));
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true, concurrency: 2 }, 'w-sync.db');
    const writeFile = remote.features.writeFile!;
    const now = { small: 0, large: 0 };
    const most = { small: 0, large: 0 };
    remote.features.writeFile = async (path, file, o) => {
      const k = statSync(file).size >= 1 << 20 ? 'large' : 'small';
      most[k] = Math.max(most[k], ++now[k]);
      // Held a moment, so that copies started together are seen together.
      await new Promise((r) => setTimeout(r, 30));
      try {
        return await writeFile(path, file, o);
      } finally {
        now[k]--;
      }
    };
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      expect((await engine.run(pair.id)).ops).toBe(30);
      expect(most.large).toBeGreaterThan(0);
      expect(most.large).toBeLessThanOrEqual(2);
      expect(most.small).toBeGreaterThan(2);
      expect(readFileSync(join(theirs, 'L5.bin')).equals(Buffer.alloc((1 << 20) + 1, 5))).toBe(true);
      expect(readFileSync(join(theirs, 's23.txt'), 'utf8')).toBe('small 23');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
    }
  });
});
