// Two-way sync through the engine: renames and moves are found by identity on both sides and
// carried over as server-side moves, not as a delete and a new copy (docs/sync.md, "How changes
// are found"). Both sides are folders on this disk (the remote one a local account, whose move is
// a rename on the server's side): a file that kept its inode on the other side was moved there.
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';
import { localEngine, trashContents } from './scenario';

describe('sync: renames and moves are carried over as moves', () => {
  const dir = scratchDir('sync-moves');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a folder renamed on either side is moved on the other, its files not copied again', async () => {
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    mkdirSync(join(mine, 'photos'), { recursive: true });
    mkdirSync(join(mine, 'docs'));
    mkdirSync(theirs);
    for (let i = 0; i < 5; i++) writeFileSync(join(mine, 'photos', `${i}.jpg`), `photo ${i}`);
    writeFileSync(join(mine, 'docs', 'a.txt'), 'a');
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, 'moves.db');
    const ino = (...p: string[]) => statSync(join(...p)).ino;
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      const before = { theirs: ino(theirs, 'photos', '3.jpg'), mine: ino(mine, 'docs', 'a.txt') };

      // Renamed here: one move there.
      renameSync(join(mine, 'photos'), join(mine, 'Pictures'));
      let r = await engine.run(pair.id);
      expect(r.ops).toBe(1);
      expect(readFileSync(join(theirs, 'Pictures', '3.jpg'), 'utf8')).toBe('photo 3');
      expect(ino(theirs, 'Pictures', '3.jpg')).toBe(before.theirs);

      // Renamed and moved there: one move here.
      mkdirSync(join(theirs, 'archive'));
      await engine.run(pair.id);
      renameSync(join(theirs, 'docs'), join(theirs, 'archive', 'papers'));
      r = await engine.run(pair.id);
      expect(r.ops).toBe(1);
      expect(readFileSync(join(mine, 'archive', 'papers', 'a.txt'), 'utf8')).toBe('a');
      expect(ino(mine, 'archive', 'papers', 'a.txt')).toBe(before.mine);

      expect((await engine.run(pair.id)).ops).toBe(0);
      expect(trashContents(join(dir, 'trash'))).toEqual([]);
      expect(engine.store.conflicts()).toEqual([]);
    } finally {
      await engine.close();
      await remote.close();
      db.close();
    }
  });
});
