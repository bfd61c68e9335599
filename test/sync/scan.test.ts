// The local scanner (docs/sync.md, "How changes are found" and "What is synced"): the case
// "untrustworthy times" on a real file system, and the ignore rules.
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local';
import type { StorageConnector } from '../../src-main/connectors/types';
import type { Tree } from '../../src-main/sync/model';
import { CompactTree } from '../../src-main/sync/compact';
import { ignoreRules, loadIgnore, localUnchanged, md5File, remoteUnchanged, sameScan, scanLocal, scanRemote } from '../../src-main/sync/scan';
import { sameStored } from '../../src-main/sync/model';
import { scratchDir } from '../servers/util';

describe('sync scanner', () => {
  const dir = scratchDir('sync-scan');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a local file\'s version is the MD5 of its whole content, read to its end by the hashing worker', async () => {
    const root = join(dir, 'hashes');
    mkdirSync(root);
    // Empty, below one read, exactly one 1 MiB read, and several reads with a tail.
    for (const size of [0, 5, 1 << 20, 3 * (1 << 20) + 7]) {
      const body = randomBytes(size);
      const f = join(root, `f${size}`);
      writeFileSync(f, body);
      expect(await md5File(f)).toBe(`md5:${createHash('md5').update(body).digest('hex')}`);
    }
    const tree = await scanLocal(root, ignoreRules(undefined));
    expect(tree.get('/f5')!.ver).toBe(await md5File(join(root, 'f5')));
    // A file that cannot be read rejects with the file system's error code, as a read stream does.
    await expect(md5File(join(root, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('Untrustworthy times: an edit with the time set back (1970, the future, the same second) is still a change', async () => {
    const root = join(dir, 'times');
    mkdirSync(root);
    const f = join(root, 'doc.txt');
    const none = ignoreRules(undefined);
    for (const when of [new Date(0), new Date('2100-01-01T00:00:00Z'), new Date('2026-11-24T03:15:00Z')]) {
      writeFileSync(f, 'aaaa');
      utimesSync(f, when, when);
      const before = await scanLocal(root, none);
      writeFileSync(f, 'bbbb'); // same size
      utimesSync(f, when, when); // same time as before
      const after = await scanLocal(root, none, before);
      expect(after.get('/doc.txt')!.ver).not.toBe(before.get('/doc.txt')!.ver);
      // Only the times touched, content unchanged: no change.
      utimesSync(f, new Date(), new Date());
      expect((await scanLocal(root, none, after)).get('/doc.txt')!.ver).toBe(after.get('/doc.txt')!.ver);
    }
  });

  it('leaves out clutter, .tributaryignore patterns and excluded folders', async () => {
    const root = join(dir, 'ignore');
    for (const d of ['build', 'photos/raw', 'docs']) mkdirSync(join(root, d), { recursive: true });
    for (const f of ['.DS_Store', 'Thumbs.db', '~$report.docx', 'notes.txt~', '.notes.txt.swp', 'x.tmp', 'build/out.o', 'photos/raw/1.cr2', 'photos/a.jpg', 'docs/a.log', 'docs/keep.md'])
      writeFileSync(join(root, f), f);
    const rules = ignoreRules('build/\n*.log\n', ['/photos/raw']);
    const tree = await scanLocal(root, rules);
    expect([...tree.keys()].sort()).toEqual(['/docs', '/docs/keep.md', '/photos', '/photos/a.jpg']);
    // Answers are remembered per path and kind: `build/` leaves out a folder, not a file of that name.
    expect(rules('/x/build', 'file')).toBe(false);
    expect(rules('/x/build', 'folder')).toBe(true);
    expect(rules('/x/build', 'file')).toBe(false);
  });

  it('gives the same rules again until .tributaryignore changes, then the new ones', async () => {
    const root = join(dir, 'ignore-file');
    mkdirSync(root);
    writeFileSync(join(root, '.tributaryignore'), '*.log\n');
    const first = await loadIgnore(root, []);
    expect(first('/a.log', 'file')).toBe(true);
    expect(await loadIgnore(root, [])).toBe(first);
    writeFileSync(join(root, '.tributaryignore'), '*.bak\n');
    const second = await loadIgnore(root, []);
    expect([second('/a.log', 'file'), second('/a.bak', 'file')]).toEqual([false, true]);
    // Other excluded folders are other rules too.
    expect((await loadIgnore(root, ['/photos']))('/photos', 'folder')).toBe(true);
    expect(second('/photos', 'folder')).toBe(false);
  });

  // docs/sync.md, "How changes are found": folders the watch saw no change in are not read again.
  it('reads again only the folders said to have changed, and folders it has not seen', async () => {
    const root = join(dir, 'incremental');
    for (const d of ['a/deep', 'b']) mkdirSync(join(root, d), { recursive: true });
    for (const f of ['a/x.txt', 'a/deep/d.txt', 'b/y.txt']) writeFileSync(join(root, f), 'one');
    const none = ignoreRules(undefined);
    const before = await scanLocal(root, none);
    for (const f of ['a/x.txt', 'a/deep/d.txt', 'b/y.txt']) writeFileSync(join(root, f), 'two, longer');
    writeFileSync(join(root, 'b', 'z.txt'), 'new');
    mkdirSync(join(root, 'b', 'new'));
    writeFileSync(join(root, 'b', 'new', 'w.txt'), 'new');
    const after = await scanLocal(root, none, before, (folder) => folder === '/b' || folder === '/a/deep');
    // /a was not read: its file keeps the cached version; its subfolder /a/deep was.
    expect(after.get('/a/x.txt')).toEqual(before.get('/a/x.txt'));
    expect(after.get('/a/deep/d.txt')!.ver).not.toBe(before.get('/a/deep/d.txt')!.ver);
    expect(after.get('/b/y.txt')!.ver).not.toBe(before.get('/b/y.txt')!.ver);
    expect([...after.keys()].sort()).toEqual(['/a', '/a/deep', '/a/deep/d.txt', '/a/x.txt', '/b', '/b/new', '/b/new/w.txt', '/b/y.txt', '/b/z.txt']);
    // Without the hint everything is read.
    expect((await scanLocal(root, none, after)).get('/a/x.txt')!.ver).not.toBe(before.get('/a/x.txt')!.ver);
  });

  it('an unchanged file keeps the previous scan\'s entry (one copy in memory); a changed or moved one gets a new entry', async () => {
    const root = join(dir, 'shared');
    mkdirSync(join(root, 'a'), { recursive: true });
    for (const n of ['a/same.txt', 'a/edited.txt', 'moved.txt']) writeFileSync(join(root, n), n);
    const none = ignoreRules(undefined);
    const before = await scanLocal(root, none);
    writeFileSync(join(root, 'a/edited.txt'), 'edited');
    renameSync(join(root, 'moved.txt'), join(root, 'a/moved.txt'));
    const after = await scanLocal(root, none, before);
    expect(after.get('/a/same.txt')).toBe(before.get('/a/same.txt'));
    expect(after.get('/a/edited.txt')).not.toBe(before.get('/a/edited.txt'));
    expect(after.get('/a/edited.txt')!.ver).not.toBe(before.get('/a/edited.txt')!.ver);
    // Moved: same identity and hash, its own path.
    expect(after.get('/a/moved.txt')).toMatchObject({ path: '/a/moved.txt', id: before.get('/moved.txt')!.id, hash: before.get('/moved.txt')!.hash });
  });

  // docs/sync.md, "How changes are found": a local account's remote side is read from its stat
  // results directly; it must give what the connector's listing gives.
  it('a local account as the remote side: the same tree as through the connector\'s listing', async () => {
    const account = join(dir, 'account');
    const outside = join(dir, 'outside');
    mkdirSync(join(account, 'pair/sub'), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    writeFileSync(join(account, 'pair/a.txt'), 'a');
    writeFileSync(join(account, 'pair/sub/b.bin'), Buffer.alloc(70_000));
    writeFileSync(join(account, 'pair/sub/half.txt'), 'h');
    // Times with a fraction of a millisecond, rounded up and down by a Date.
    utimesSync(join(account, 'pair/a.txt'), 1_700_000_000.0005, 1_700_000_000.0016);
    utimesSync(join(account, 'pair/sub/half.txt'), 1_700_000_000.0004, 1_700_000_000.0004);
    writeFileSync(join(account, 'pair/.tributary-upload-1.tmp'), 'temp');
    symlinkSync(outside, join(account, 'pair/out')); // leads out of the account: not shown
    symlinkSync(join(account, 'pair/sub'), join(account, 'pair/in')); // stays inside: shown
    execFileSync('mkfifo', [join(account, 'pair/sub/fifo')]); // a special file: not shown
    const c = new LocalConnector({ path: account, trashDir: join(dir, 'account-trash') });
    try {
      const none = ignoreRules(undefined);
      const direct = await scanRemote(c, '/pair', none);
      // The same connector seen only through the StorageConnector interface: the listing path.
      const listed = await scanRemote({ list: (p: string) => c.list(p), stat: (p: string) => c.stat(p), features: c.features } as unknown as StorageConnector, '/pair', none);
      const strip = (t: typeof direct) => [...t.values()].map((e) => ({ ...e, seenAt: 0 })).sort((a, b) => (a.path < b.path ? -1 : 1));
      expect(strip(direct)).toEqual(strip(listed));
      expect([...direct.keys()].sort()).toEqual(['/a.txt', '/in', '/in/b.bin', '/in/half.txt', '/sub', '/sub/b.bin', '/sub/half.txt']);
      expect(direct.get('/a.txt')!.modified).toBe(1_700_000_000_002);
      expect(direct.get('/sub/half.txt')!.modified).toBe(1_700_000_000_000);
    } finally {
      await c.close();
    }
  });

  it('a local account as the remote side: an unchanged file keeps its entry; a changed, racy or moved one does not', async () => {
    const account = join(dir, 'account2');
    mkdirSync(join(account, 'd'), { recursive: true });
    for (const n of ['same.txt', 'grown.txt', 'touched.txt', 'future.txt', 'd/moved.txt']) writeFileSync(join(account, n), n);
    const future = new Date(Date.now() + 3_600_000);
    utimesSync(join(account, 'future.txt'), future, future);
    const c = new LocalConnector({ path: account, trashDir: join(dir, 'account2-trash') });
    try {
      const none = ignoreRules(undefined);
      // Seen after their second is over (docs/sync.md, racy versions).
      await new Promise((r) => setTimeout(r, 20));
      const before = await scanRemote(c, '/', none);
      writeFileSync(join(account, 'grown.txt'), 'grown.txt, longer');
      utimesSync(join(account, 'touched.txt'), new Date(1_000_000), new Date(1_000_000));
      renameSync(join(account, 'd/moved.txt'), join(account, 'moved.txt'));
      // Same name, size and time, another inode.
      writeFileSync(join(account, 'd/moved.txt'), 'd/moved.txt');
      const then = new Date(before.get('/d/moved.txt')!.modified!);
      utimesSync(join(account, 'd/moved.txt'), then, then);
      const after = await scanRemote(c, '/', none, 4, before);
      expect(after.get('/same.txt')).toBe(before.get('/same.txt'));
      expect(after.get('/d')).toBe(before.get('/d'));
      for (const p of ['/grown.txt', '/touched.txt', '/d/moved.txt']) {
        expect(after.get(p)).not.toBe(before.get(p));
        expect(after.get(p)!.ver).not.toBe(before.get(p)!.ver);
      }
      // Modified after it was seen: the entry says when it was seen again.
      expect(after.get('/future.txt')).not.toBe(before.get('/future.txt'));
      expect(after.get('/future.txt')!.seenAt).toBeGreaterThanOrEqual(before.get('/future.txt')!.seenAt!);
      // The kept entries are what a scan without the previous one gives, but for when they were seen.
      const fresh = await scanRemote(c, '/', none);
      expect([...after.values()].map((e) => ({ ...e, seenAt: 0 }))).toEqual([...fresh.values()].map((e) => ({ ...e, seenAt: 0 })));
    } finally {
      await c.close();
    }
  });

  // docs/sync.md, "What is synced": a path the last scan held is not asked about again only
  // while the rules are the same ones and it has the same kind.
  it('new rules apply to paths the last scan held; a file that became a folder is asked about again', async () => {
    const account = join(dir, 'account3');
    mkdirSync(join(account, 'keep'), { recursive: true });
    for (const n of ['a.log', 'b.txt', 'build', 'keep/c.txt']) writeFileSync(join(account, n), n);
    const c = new LocalConnector({ path: account, trashDir: join(dir, 'account3-trash') });
    try {
      const all = ignoreRules('build/\n');
      const scans = async (rules: typeof all, previous?: { local: Tree; remote: Tree }) => ({
        local: await scanLocal(account, rules, previous?.local),
        remote: await scanRemote(c, '/', rules, 4, previous?.remote),
      });
      const first = await scans(all);
      for (const t of [first.local, first.remote]) expect([...t.keys()].sort()).toEqual(['/a.log', '/b.txt', '/build', '/keep', '/keep/c.txt']);
      // The file `build` becomes a folder: `build/` now leaves it out.
      rmSync(join(account, 'build'));
      mkdirSync(join(account, 'build'));
      const second = await scans(all, first);
      for (const t of [second.local, second.remote]) expect([...t.keys()].sort()).toEqual(['/a.log', '/b.txt', '/keep', '/keep/c.txt']);
      // Other rules: what the last scan held is asked about again.
      const third = await scans(ignoreRules('build/\n*.log\n', ['/keep']), second);
      for (const t of [third.local, third.remote]) expect([...t.keys()].sort()).toEqual(['/b.txt']);
    } finally {
      await c.close();
    }
  });

  // docs/sync.md, "How changes are found": a pass over a settled pair compares each side with its
  // last scan while reading it. It may answer "unchanged" only where a full scan would store
  // nothing; each change below must be seen.
  it('an unchanged side is told from the last scan without a new tree: every change a full scan would store is seen', async () => {
    const root = join(dir, 'unchanged');
    mkdirSync(join(root, 'a/deep'), { recursive: true });
    for (const n of ['x.txt', 'a/y.txt', 'a/deep/z.txt', 'gone.txt', 'swap']) writeFileSync(join(root, n), n);
    const c = new LocalConnector({ path: root, trashDir: join(dir, 'unchanged-trash') });
    const rules = ignoreRules(undefined);
    // The stored rows a full scan would change, against the last scan.
    const compactCopy = (t: Tree) => {
      const copy = CompactTree.of(t);
      sameScan(t, copy);
      return copy;
    };
    const stores = (fresh: Tree, last: Tree) => fresh.size !== last.size || [...fresh.values()].some((e) => !last.has(e.path) || !sameStored(e, last.get(e.path)!));
    let last = { local: await scanLocal(root, rules), remote: await scanRemote(c, '/', rules) };
    // Seen after their second is over (not racy), so the local account's entries are kept.
    await new Promise((r) => setTimeout(r, 1100));
    last.remote = await scanRemote(c, '/', rules, 4, last.remote);
    const step = async (what: string, change: () => void, expected: boolean, stepRules = rules) => {
      change();
      const answers = { local: await localUnchanged(root, stepRules, last.local), remote: await remoteUnchanged(c, '/', stepRules, last.remote) };
      // The same from the store's compact copies, which compare on their packed numbers.
      const packed = { local: await localUnchanged(root, stepRules, compactCopy(last.local)), remote: await remoteUnchanged(c, '/', stepRules, compactCopy(last.remote)) };
      expect({ what, ...packed }).toEqual({ what, local: expected, remote: expected });
      const fresh = { local: await scanLocal(root, stepRules, last.local), remote: await scanRemote(c, '/', stepRules, 4, last.remote) };
      expect({ what, ...answers }).toEqual({ what, local: expected, remote: expected });
      // "Unchanged" only where a full scan stores nothing.
      expect({ what, local: stores(fresh.local, last.local), remote: stores(fresh.remote, last.remote) }).toEqual({ what, local: !expected, remote: !expected });
      // The steps that must read "unchanged" come first: their entries are not racy.
      last = fresh;
    };
    try {
      await step('nothing', () => {}, true);
      await step('an ignored file added', () => writeFileSync(join(root, 'a/note.tmp'), 't'), true);
      // Leading out of the account: neither side holds it.
      await step('a link added', () => (writeFileSync(join(dir, 'unchanged-outside.txt'), 'o'), symlinkSync(join(dir, 'unchanged-outside.txt'), join(root, 'a/link'))), true);
      await step('a file added deep down', () => writeFileSync(join(root, 'a/deep/new.txt'), 'n'), false);
      await step('a file removed', () => rmSync(join(root, 'gone.txt')), false);
      await step('a file grown', () => writeFileSync(join(root, 'a/deep/z.txt'), 'a/deep/z.txt, longer'), false);
      await step('a file that became a folder', () => (rmSync(join(root, 'swap')), mkdirSync(join(root, 'swap'))), false);
      await step('a folder removed with its file', () => rmSync(join(root, 'a/deep'), { recursive: true }), false);
      await step('rules that leave a stored file out', () => {}, false, ignoreRules('x.txt\n'));
    } finally {
      await c.close();
    }
  });
});
