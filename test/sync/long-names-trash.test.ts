// Two-way sync and a file whose name is too long for its .trashinfo to fit 255 bytes (docs/sync.md,
// "Safety": deletes go to the trash; docs/connectors.md, Trash: such a name is shortened in the
// trash). Deleted in the account, it goes to the trash on this computer, and the pair goes on
// syncing new files instead of failing every run; changed on both sides, its conflict copy's name
// is shortened to fit (docs/sync.md, Conflicts).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseName } from '../../src-main/connectors/shared/paths';
import { scratchDir } from '../servers/util';
import { localEngine, text, trashContents } from './scenario';

describe('sync: a name that fills 255 bytes', () => {
  const dir = scratchDir('sync-long-trash');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('deleted on the remote side, it goes to the local trash and the pair keeps syncing', async () => {
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    mkdirSync(mine);
    mkdirSync(theirs);
    const long = `${'L'.repeat(251)}.txt`;
    const cjk = `${'文'.repeat(83)}.md`;
    writeFileSync(join(mine, long), 'long');
    writeFileSync(join(mine, cjk), 'cjk');
    writeFileSync(join(mine, 'a.txt'), 'a');
    const { db, remote, engine } = localEngine(dir, theirs, { manual: true }, 'sync.db', 'trash');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      expect(text(theirs, long)).toBe('long');
      expect(text(theirs, cjk)).toBe('cjk');

      rmSync(join(theirs, long));
      rmSync(join(theirs, cjk));
      writeFileSync(join(theirs, 'new.txt'), 'new');
      await engine.run(pair.id);
      expect(engine.store.pair(pair.id).error ?? null).toBeNull();
      expect(engine.store.pair(pair.id).state).toBe('idle');
      expect(existsSync(join(mine, long))).toBe(false);
      expect(existsSync(join(mine, cjk))).toBe(false);
      expect(text(mine, 'new.txt')).toBe('new');
      expect(trashContents(join(dir, 'trash')).sort()).toEqual(['cjk', 'long']);
      // Each trashed item's record names where it was, in full.
      const infos = readdirSync(join(dir, 'trash', 'info')).map((n) => readFileSync(join(dir, 'trash', 'info', n), 'utf8'));
      expect(infos.some((i) => i.includes(`Path=${join(mine, long)}\n`))).toBe(true);
      expect(infos.some((i) => i.includes(`Path=${join(mine, encodeURIComponent(cjk))}\n`))).toBe(true);

      writeFileSync(join(theirs, 'later.txt'), 'later');
      await engine.run(pair.id);
      expect(text(mine, 'later.txt')).toBe('later');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      await remote.close();
      db.close();
    }
  });

  it('changed on both sides, its conflict copy has a name shortened to fit, and both versions are kept', async () => {
    const base = join(dir, 'conflict');
    const [mine, theirs] = [join(base, 'mine'), join(base, 'theirs')];
    mkdirSync(mine, { recursive: true });
    mkdirSync(theirs);
    const long = `${'文'.repeat(83)}.md`;
    writeFileSync(join(mine, long), 'first');
    const { db, remote, engine } = localEngine(base, theirs, { manual: true }, 'sync.db', 'trash');
    try {
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await engine.run(pair.id);
      writeFileSync(join(mine, long), 'mine, longer');
      writeFileSync(join(theirs, long), 'theirs, longest of all');
      await engine.run(pair.id);
      expect(engine.store.pair(pair.id).error ?? null).toBeNull();
      const [conflict] = engine.store.conflicts(pair.id);
      expect(conflict).toBeDefined();
      const copy = baseName(conflict!.copyPath);
      expect(copy).toMatch(/^文+ \(conflict \d{4}-\d\d-\d\d \d{6}\)\.md$/);
      expect(Buffer.byteLength(copy)).toBeLessThanOrEqual(255);
      // Both versions, on both sides.
      for (const side of [mine, theirs]) expect([text(side, long), text(side, copy)].sort()).toEqual(['mine, longer', 'theirs, longest of all']);
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      await remote.close();
      db.close();
    }
  });
});
