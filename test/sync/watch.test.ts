// The engine on its own triggers (docs/sync.md, "Pairs" and "How changes are found"): with the
// local watch ready, a run reads again only the folders the watch saw change; edits deep in the
// tree, new folders and a renamed folder still reach the other side. Both sides are folders on
// this disk (the remote one through the local connector).
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir, until as untilTrue } from '../servers/util';
import { text, localEngine } from './scenario';

describe('sync engine driven by the local watch', () => {
  const dir = scratchDir('sync-watch');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('carries edits, new folders and a folder rename across with incremental local scans', async () => {
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    for (const d of ['a/deep', 'b']) mkdirSync(join(mine, d), { recursive: true });
    mkdirSync(theirs);
    writeFileSync(join(mine, 'a/deep/d.txt'), 'one');
    writeFileSync(join(mine, 'b/y.txt'), 'one');
    const { db, engine } = localEngine(dir, theirs, { pollMs: 0, debounceMs: 50 }, 'sync.db');
    try {
      await engine.start();
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      // A wait that fails says where the pair stood: its state and error, and both stored trees.
      const until = (check: () => boolean) =>
        untilTrue(check).catch((e: Error) => {
          const tree = (side: 'local' | 'remote') => [...engine.store.tree(pair.id, side).keys()].sort().join(' ');
          throw new Error(`${e.message}; pair ${JSON.stringify(engine.store.pair(pair.id))}; local tree ${tree('local')}; remote tree ${tree('remote')}`);
        });
      await until(() => text(theirs, 'a/deep/d.txt') === 'one' && text(theirs, 'b/y.txt') === 'one');

      writeFileSync(join(mine, 'a/deep/d.txt'), 'two, deep');
      await until(() => text(theirs, 'a/deep/d.txt') === 'two, deep');
      mkdirSync(join(mine, 'b/new'));
      writeFileSync(join(mine, 'b/new/w.txt'), 'new');
      await until(() => text(theirs, 'b/new/w.txt') === 'new');
      renameSync(join(mine, 'a'), join(mine, 'renamed'));
      await until(() => text(theirs, 'renamed/deep/d.txt') === 'two, deep' && !existsSync(join(theirs, 'a')));
      writeFileSync(join(mine, 'renamed/deep/d.txt'), 'three, after the rename');
      await until(() => text(theirs, 'renamed/deep/d.txt') === 'three, after the rename');
      await until(() => engine.store.pair(pair.id).state === 'idle');
      // The stored local tree is the folder as it is.
      expect([...engine.store.tree(pair.id, 'local').keys()].sort()).toEqual(['/b', '/b/new', '/b/new/w.txt', '/b/y.txt', '/renamed', '/renamed/deep', '/renamed/deep/d.txt']);
      expect(engine.store.conflicts()).toEqual([]);
    } finally {
      await engine.close();
      db.close();
    }
  });
});
