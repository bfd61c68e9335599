// Two-way sync whose remote side is a local account holding links back to their own folder
// (docs/connectors.md, "Confinement": such links are left out of listings; docs/sync.md, "What
// is synced" and "Safety"). The first pass ends with the files once each, makes no nested copies
// on this computer, and deleting a synced file here trashes that file there and nothing else.
// Without the check the pass would go round the loops (a hang): hence the modest timeouts.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';
import { localEngine, localView, sorted, text, trashContents } from './scenario';

const timeout = 20_000;

describe('sync: a remote local account with links back to their own folder', () => {
  const dir = scratchDir('sync-link-loops');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** `theirs` with dir/{f.txt,g.txt} and the given links in dir (name -> target). */
  function pairOf(name: string, links: Record<string, string>) {
    const [mine, theirs] = [join(dir, `${name}-mine`), join(dir, `${name}-theirs`)];
    mkdirSync(mine);
    mkdirSync(join(theirs, 'dir'), { recursive: true });
    writeFileSync(join(theirs, 'dir', 'f.txt'), 'f');
    writeFileSync(join(theirs, 'dir', 'g.txt'), 'g');
    for (const [link, target] of Object.entries(links)) symlinkSync(target, join(theirs, 'dir', link));
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, `${name}.db`, `${name}-trash`);
    return { mine, theirs, trash: join(dir, `${name}-trash`), engine, close: async () => (await engine.close(), await remote.close(), db.close()) };
  }

  it('self -> ., up -> .. and a mutual pair: the first pass ends with each file once', { timeout }, async () => {
    const { mine, theirs, engine, close } = pairOf('many', { self: '.', up: '..' });
    mkdirSync(join(theirs, 'X'));
    mkdirSync(join(theirs, 'Y'));
    writeFileSync(join(theirs, 'X', 'x.txt'), 'x');
    symlinkSync('../Y', join(theirs, 'X', 'toY'));
    symlinkSync('../X', join(theirs, 'Y', 'toX'));
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      // X/toY is Y (not above X): followed, and its link back to X left out; so is Y/toX.
      expect(sorted(localView(mine))).toEqual([
        ['/X', '/'],
        ['/X/toY', '/'],
        ['/X/x.txt', 'x'],
        ['/Y', '/'],
        ['/Y/toX', '/'],
        ['/Y/toX/x.txt', 'x'],
        ['/dir', '/'],
        ['/dir/f.txt', 'f'],
        ['/dir/g.txt', 'g'],
      ]);
      expect(engine.store.pair(pair.id).state).toBe('idle');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await close();
    }
  });

  it('self -> .: no nested copies, and a file deleted here trashes that file there, not another', { timeout }, async () => {
    const { mine, theirs, trash, engine, close } = pairOf('self', { self: '.' });
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      expect(sorted(localView(mine))).toEqual([
        ['/dir', '/'],
        ['/dir/f.txt', 'f'],
        ['/dir/g.txt', 'g'],
      ]);

      rmSync(join(mine, 'dir', 'g.txt'));
      await engine.run(pair.id);
      expect(text(theirs, 'dir', 'g.txt')).toBeUndefined();
      expect(text(theirs, 'dir', 'f.txt')).toBe('f');
      expect(trashContents(trash)).toEqual(['g']);
      expect(sorted(localView(mine))).toEqual([
        ['/dir', '/'],
        ['/dir/f.txt', 'f'],
      ]);
      expect(engine.store.pair(pair.id).state).toBe('idle');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await close();
    }
  });
});
