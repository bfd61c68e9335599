/**
 * The watch of a local folder tree (src-main/connectors/local/tree-watch.ts) behind the local
 * account's watch and a sync pair's local folder (docs/connectors.md, "Watch"; docs/sync.md, "How
 * changes are found"). Both implementations must report the same events: what changed after
 * ready, an atomic replace as a change, a deleted name with what it was (inode and size: renames
 * are paired by them), a new folder with what was written into it at once, a moved folder and
 * its contents, a deleted root watched again once it is back. On Linux the folder watches cost
 * one inotify watch per folder, where chokidar took one per file as well.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchTree, type TreeEvent, type TreeWatch } from '../../src-main/connectors/local/tree-watch';
import { scratchDir, until } from '../servers/util';
import { text, localEngine } from '../sync/scenario';

/** inotify watches this process holds, from /proc/self/fdinfo (one `inotify wd:` line each). */
function inotifyWatches(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fdinfo')) {
    try {
      n += (readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').match(/^inotify wd:/gm) ?? []).length;
    } catch {
      // the descriptor closed meanwhile
    }
  }
  return n;
}

/** `folders` folders of `files` files each below `root` (which is made too). */
function makeTree(root: string, folders: number, files: number) {
  for (let d = 0; d < folders; d++) {
    mkdirSync(join(root, `d${d}`), { recursive: true });
    for (let f = 0; f < files; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}`);
  }
}

const open: TreeWatch[] = [];
afterEach(async () => {
  for (const w of open.splice(0)) await w.close();
});

describe.each(['folders', 'chokidar'] as const)('tree watch through %s: events keep their meaning (docs/connectors.md, Watch)', (using) => {
  async function start(root: string) {
    const events: TreeEvent[] = [];
    const errors: Error[] = [];
    const w = watchTree(root, (e) => events.push(e), (e) => errors.push(e), { using, ignored: (p) => p.includes('.tmp-') });
    open.push(w);
    await w.ready;
    const seen = (type: TreeEvent['type'], path: string) => events.find((e) => e.type === type && e.path === path);
    const waitFor = (type: TreeEvent['type'], path: string) => until(() => seen(type, path), 10_000, `${type} ${path} (got ${events.map((e) => `${e.type} ${e.path}`).join(', ')})`);
    return { events, errors, seen, waitFor };
  }

  it('files: what was there is not reported; add, edit, atomic replace and delete are', async () => {
    const root = scratchDir(`tree-${using}-files`);
    makeTree(root, 2, 3);
    const { events, errors, seen, waitFor } = await start(root);
    const a = join(root, 'd0', 'a.txt');
    writeFileSync(a, 'one');
    const add = await waitFor('add', a);
    expect(add.stats?.ino).toBe(statSync(a).ino);
    // Nothing of the tree as it was at the start.
    expect(events.filter((e) => e.path.includes('f0.txt') || e.path.endsWith('d1'))).toEqual([]);

    appendFileSync(join(root, 'd1', 'f2.txt'), ' more');
    const edit = await waitFor('change', join(root, 'd1', 'f2.txt'));
    expect(edit.stats?.size).toBe(statSync(join(root, 'd1', 'f2.txt')).size);

    // An editor's save: a temporary name (ignored) renamed over the file.
    events.length = 0;
    writeFileSync(join(root, 'd0', '.tmp-save'), 'replaced, longer');
    renameSync(join(root, 'd0', '.tmp-save'), a);
    await waitFor('change', a);
    const ino = statSync(a).ino;
    expect(events.filter((e) => e.path.includes('.tmp-'))).toEqual([]);
    expect(seen('unlink', a)).toBeUndefined();

    rmSync(a);
    const gone = await waitFor('unlink', a);
    expect(gone.was).toMatchObject({ kind: 'file', ino, size: 'replaced, longer'.length });
    expect(errors).toEqual([]);
  });

  it('folders: a new one with files written at once, moved with its contents, then deleted', async () => {
    const root = scratchDir(`tree-${using}-folders`);
    makeTree(root, 1, 1);
    const { errors, waitFor, events } = await start(root);
    const n = join(root, 'new');
    mkdirSync(join(n, 'inner'), { recursive: true });
    for (const f of ['1', '2', 'inner/3']) writeFileSync(join(n, f), f);
    await waitFor('addDir', n);
    for (const f of ['1', '2', 'inner/3']) await waitFor('add', join(n, f));
    const ino = statSync(n).ino;

    const m = join(root, 'd0', 'moved');
    renameSync(n, m);
    const from = await waitFor('unlinkDir', n);
    const to = await waitFor('addDir', m);
    expect(from.was?.ino).toBe(ino);
    expect(to.stats?.ino).toBe(ino);
    const old3 = await waitFor('unlink', join(n, 'inner/3'));
    const new3 = await waitFor('add', join(m, 'inner/3'));
    expect(old3.was?.ino).toBe(new3.stats?.ino);

    // The moved folder is watched at its new place.
    appendFileSync(join(m, 'inner/3'), '!');
    await waitFor('change', join(m, 'inner/3'));

    events.length = 0;
    rmSync(m, { recursive: true });
    for (const f of ['1', '2', 'inner/3']) await waitFor('unlink', join(m, f));
    await waitFor('unlinkDir', join(m, 'inner'));
    await waitFor('unlinkDir', m);
    expect(errors).toEqual([]);
  });

  it('a burst of 300 new files in one folder: each is one add, none lost', async () => {
    const root = scratchDir(`tree-${using}-burst`);
    makeTree(root, 1, 1);
    const { events, waitFor } = await start(root);
    for (let i = 0; i < 300; i++) writeFileSync(join(root, 'd0', `b${i}.txt`), `${i}`);
    for (let i = 0; i < 300; i++) await waitFor('add', join(root, 'd0', `b${i}.txt`));
    const adds = events.filter((e) => e.type === 'add').map((e) => e.path);
    expect(new Set(adds).size).toBe(300);
    expect(adds.length).toBe(300);
  });

  it('a root reached through a symbolic link, holding a name like its own, stays watched', async () => {
    const dir = scratchDir(`tree-${using}-link`);
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'box'));
    const root = join(dir, 'box');
    const { waitFor, seen } = await start(root);
    // The root's own events come with its name: this one is a child's.
    writeFileSync(join(root, 'box'), 'a file named like the root');
    await waitFor('add', join(root, 'box'));
    writeFileSync(join(root, 'after.txt'), 'x');
    await waitFor('add', join(root, 'after.txt'));
    expect(seen('unlinkDir', root)).toBeUndefined();
  });

  it('the root deleted and made again: what is written into it is reported', async () => {
    const root = scratchDir(`tree-${using}-root`);
    makeTree(root, 1, 2);
    const { waitFor } = await start(root);
    rmSync(root, { recursive: true });
    await waitFor('unlink', join(root, 'd0', 'f1.txt'));
    await waitFor('unlinkDir', root);
    mkdirSync(root);
    // Written while the watch may still be looking for the root: reported either way.
    writeFileSync(join(root, 'early.txt'), 'x');
    await waitFor('add', join(root, 'early.txt'));
    await new Promise((r) => setTimeout(r, 100));
    writeFileSync(join(root, 'later.txt'), 'y');
    await waitFor('add', join(root, 'later.txt'));
  });
});

describe.runIf(process.platform === 'linux')('tree watch on Linux: one inotify watch per folder, not per file', () => {
  it('a tree of 10 folders × 30 files holds 11 watches, and none once closed', async () => {
    const root = scratchDir('tree-inotify');
    makeTree(root, 10, 30);
    const before = inotifyWatches();
    const w = watchTree(root, () => {}, () => {});
    await w.ready;
    // chokidar held 311 here: one per file as well.
    expect(inotifyWatches() - before).toBe(11);
    mkdirSync(join(root, 'd10'));
    writeFileSync(join(root, 'd10', 'x.txt'), 'x');
    await until(() => inotifyWatches() - before === 12, 10_000, 'the new folder watched');
    rmSync(join(root, 'd0'), { recursive: true });
    await until(() => inotifyWatches() - before === 11, 10_000, 'the deleted folder not watched');
    await w.close();
    expect(inotifyWatches()).toBe(before);
  });

  it('a sync pair in watch mode (docs/sync.md): one watch per folder of each side', async () => {
    const dir = scratchDir('tree-inotify-sync');
    const [mine, theirs] = [join(dir, 'mine'), join(dir, 'theirs')];
    makeTree(mine, 3, 20);
    mkdirSync(theirs);
    const before = inotifyWatches();
    const { db, engine } = localEngine(dir, theirs, { pollMs: 0, debounceMs: 50 }, 'sync.db');
    try {
      await engine.start();
      const pair = await engine.create({ localPath: mine, account: 1, remotePath: '/' });
      await until(() => text(theirs, 'd2/f19.txt') === '2/19' && engine.store.pair(pair.id).state === 'idle', 20_000, 'first sync');
      // The account's watch of the other folder is up once the pair says it learns by it.
      await until(() => engine.remoteModes()[pair.id] === 'watch', 10_000, 'the remote side watched');
      await until(() => (engine as unknown as { ready: Set<number> }).ready.has(pair.id), 10_000, 'the local watch ready');
      // The local folder's watch and the account's watch of the other folder: 4 folders each
      // (chokidar: 64 each).
      expect(inotifyWatches() - before).toBe(8);
    } finally {
      await engine.close();
      db.close();
    }
    expect(inotifyWatches()).toBe(before);
  });
});

describe('tree watch through folders: paths as path.join gives them', () => {
  it('a root named with a trailing separator and a `.` still reports and ignores by the joined path', async () => {
    const root = scratchDir('tree-paths');
    makeTree(root, 1, 2);
    const asked: string[] = [];
    const events: TreeEvent[] = [];
    const w = watchTree(`${root}/./`, (e) => events.push(e), (e) => expect.fail(e.message), {
      using: 'folders',
      ignored: (p) => (asked.push(p), false),
    });
    open.push(w);
    await w.ready;
    expect(asked.sort()).toEqual([join(root, 'd0'), join(root, 'd0', 'f0.txt'), join(root, 'd0', 'f1.txt')]);
    writeFileSync(join(root, 'd0', 'new.txt'), 'x');
    await until(() => events.find((e) => e.type === 'add' && e.path === join(root, 'd0', 'new.txt')), 10_000, 'add d0/new.txt');
    rmSync(join(root, 'd0'), { recursive: true });
    await until(() => events.find((e) => e.type === 'unlinkDir' && e.path === join(root, 'd0')), 10_000, 'unlinkDir d0');
    expect(events.map((e) => e.path).filter((p) => p.includes('/./') || p.includes('//'))).toEqual([]);
  });
});
