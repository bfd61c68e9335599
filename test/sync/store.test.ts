// The synced tree in the database (docs/sync.md, "How changes are found": the synced tree).
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { CompactTree } from '../../src-main/sync/compact';
import type { BigIntStats, Stats } from 'node:fs';
import { sameStored, type SideEntry, type Tree } from '../../src-main/sync/model';
import { entryWithoutReading, localAccountEntry } from '../../src-main/sync/scan';
import { SyncStore } from '../../src-main/sync/store';

function store() {
  const db = openDb(':memory:');
  db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('memory', 'a', x'00', 'c', 'm')").run();
  const s = new SyncStore(db);
  return { s, pair: s.createPair({ localPath: '/tmp/x', account: 1, remotePath: '/' }).id };
}

describe('sync store: renaming synced entries', () => {
  it('a folder takes everything below it along', () => {
    const { s, pair } = store();
    s.putSynced(pair, { path: '/a', kind: 'folder' });
    s.putSynced(pair, { path: '/a/b', kind: 'file', localVer: '1' });
    s.putSynced(pair, { path: '/ab', kind: 'file', localVer: '2' });
    s.renameSynced(pair, '/a', '/c');
    expect([...s.synced(pair).keys()].sort()).toEqual(['/ab', '/c', '/c/b']);
  });

  it('a file moves alone: a folder recorded below its old name belongs to another node and stays', () => {
    // A folder took the file's name (é) while the file waited to move into it (the planner case
    // "a synced NFD file moved remotely into new NFD/NFC folders that take its name").
    const { s, pair } = store();
    s.putSynced(pair, { path: '/e', kind: 'file', localVer: '1' });
    s.putSynced(pair, { path: '/e/f', kind: 'folder' });
    s.renameSynced(pair, '/e', '/e/f/e');
    const t = s.synced(pair);
    expect([...t.keys()].sort()).toEqual(['/e/f', '/e/f/e']);
    expect(t.get('/e/f')!.kind).toBe('folder');
    expect(t.get('/e/f/e')!.kind).toBe('file');
  });
});

// docs/sync.md, "How changes are found": a pass where nothing changed writes nothing; each scan
// is compared with the last stored one (kept in memory) and only changed rows are written.
describe('sync store: storing a side\'s scan', () => {
  const file = (path: string, ver: string) => ({ path, kind: 'file' as const, id: `1:${path}`, ver, hash: ver, size: 4, stamp: `4:${ver}` });
  const scan = (...entries: ReturnType<typeof file>[]) => new Map(entries.map((e) => [e.path, e]));
  /** The rows as the database holds them, read by a store that has seen no scan. */
  const rows = (s: SyncStore, pair: number) => Object.fromEntries([...new SyncStore(s.db).tree(pair, 'local').values()].map((e) => [e.path, e.ver]));

  it('writes only what changed, and a row written between two scans (an operation\'s result) is put back', () => {
    const { s, pair } = store();
    expect(s.saveTree(pair, 'local', scan(file('/a', 'v1'), file('/b', 'v1')))).toBe(2);
    expect(s.saveTree(pair, 'local', scan(file('/a', 'v1'), file('/b', 'v1')))).toBe(0);
    expect(s.saveTree(pair, 'local', scan(file('/a', 'v2'), file('/c', 'v1')))).toBe(3); // /a changed, /b gone, /c new
    expect(rows(s, pair)).toEqual({ '/a': 'v2', '/c': 'v1' });
    // The executor records a file it wrote; the next scan finds the old version back on disk.
    s.putTreeEntry(pair, 'local', file('/a', 'v3'));
    expect(s.saveTree(pair, 'local', scan(file('/a', 'v2'), file('/c', 'v1')))).toBe(1);
    expect(rows(s, pair)).toEqual({ '/a': 'v2', '/c': 'v1' });
    expect(s.tree(pair, 'local').get('/a')!.ver).toBe('v2');
  });

  it('rows deleted behind its back (the pair removed with its account) are written again', () => {
    const { s, pair } = store();
    const t = scan(file('/a', 'v1'), file('/b', 'v1'));
    s.saveTree(pair, 'local', t);
    s.db.prepare('DELETE FROM sync_tree WHERE pair_id = ?').run(pair);
    expect(s.tree(pair, 'local').size).toBe(0);
    expect(s.saveTree(pair, 'local', t)).toBe(2);
    expect(rows(s, pair)).toEqual({ '/a': 'v1', '/b': 'v1' });
  });
});

// docs/sync.md, "Memory": the store keeps each side's last scan in a compact form; every entry
// looked up in it must be the one stored, whatever did or did not fit its packed forms.
describe('sync store: the compact copy of a scan', () => {
  const md5 = `md5:${'0123456789abcdef'.repeat(2)}`;
  const entries: SideEntry[] = [
    { path: '/a', kind: 'folder', id: '2049:11', ver: 'd' },
    { path: '/a/x.txt', kind: 'file', id: '2049:12', ver: md5, hash: md5, size: 3, stamp: '3:1700000000123456789:1700000000987654321:12', modified: 1_700_000_000_123 },
    // Before 1970; a size of 0.
    { path: '/a/old.txt', kind: 'file', id: '2049:13', ver: md5, hash: md5, size: 0, stamp: '0:-1000000001:5:13', modified: -1000 },
    // An inode past 2^53, a time past 64 bits, a stamp of another inode, a hash in capitals: kept as text.
    { path: '/big', kind: 'file', id: '2049:18446744073709551615', ver: md5, hash: md5, size: 1, stamp: '1:5:5:18446744073709551615' },
    { path: '/far', kind: 'file', id: '1:2', ver: `md5:${'AB'.repeat(16)}`, hash: `md5:${'AB'.repeat(16)}`, size: 7, stamp: '7:99999999999999999999999:1:2' },
    { path: '/moved', kind: 'file', id: '1:3', ver: md5, hash: md5, size: 7, stamp: '7:1:1:4' },
    { path: '/lead', kind: 'file', id: '01:3', ver: md5, hash: md5, size: 7, stamp: '7:1:1:3' },
    // Remote forms: ETag with size as identity and version, a time version, a version of its own.
    { path: '/r/e.bin', kind: 'file', id: '5f3a-10-18c7|16', ver: '5f3a-10-18c7|16', size: 16, modified: 1_700_000_000_002, seenAt: 1_700_000_005_000 },
    { path: '/r/t.bin', kind: 'file', ver: 't:1700000000000|5', size: 5, modified: 1_700_000_000_000, seenAt: 1_700_000_001_000 },
    { path: '/r/v.bin', kind: 'file', id: 'upstream-id', ver: 'v7', hash: 'sha1:abc' },
    { path: '/r', kind: 'folder', ver: 'd' },
  ];

  it('gives back every entry as stored, in the same order, and refuses changes', () => {
    const tree: Tree = new Map(entries.map((e) => [e.path, e]));
    const copy = CompactTree.of(tree);
    expect(copy.size).toBe(entries.length);
    expect([...copy.keys()]).toEqual([...tree.keys()]);
    for (const e of entries) {
      expect(copy.has(e.path)).toBe(true);
      // Field by field: a field packed wrong would differ here (undefined ones included).
      const back = copy.get(e.path)!;
      for (const k of ['path', 'kind', 'id', 'ver', 'hash', 'size', 'stamp', 'modified', 'seenAt'] as const) expect({ path: e.path, k, v: back[k] }).toEqual({ path: e.path, k, v: e[k] });
    }
    expect([...copy.values()]).toEqual(entries);
    expect(new Map(copy)).toEqual(tree);
    expect(copy.get('/nowhere')).toBeUndefined();
    expect(() => copy.set('/a', entries[0])).toThrow();
  });

  it('tells a scan\'s entry stored the same from the packed form exactly as from the entry made again', () => {
    const copy = CompactTree.of(new Map(entries.map((e) => [e.path, e])));
    const fields = ['kind', 'id', 'ver', 'hash', 'size', 'stamp'] as const;
    const other = { kind: 'folder', id: '2049:99', ver: 'v8', hash: `md5:${'f'.repeat(32)}`, size: 8, stamp: '8:1:1:1' } as const;
    let equal = 0;
    for (const e of entries) {
      // The same entry as a new object, each stored field changed, and each dropped.
      const variants: SideEntry[] = [{ ...e }, ...fields.map((k) => ({ ...e, [k]: e[k] === other[k] ? 'x' : other[k] })), ...fields.map((k) => ({ ...e, [k]: undefined }))];
      for (const v of variants) {
        const want = sameStored(v, copy.get(e.path)!);
        if (want) equal++;
        expect({ path: e.path, v, same: copy.storesSame(e.path, v) }).toEqual({ path: e.path, v, same: want });
      }
      expect(copy.storesSame('/nowhere', e)).toBe(false);
    }
    // Not every variant differs (a dropped field the entry did not have): both answers were met.
    expect(equal).toBeGreaterThan(entries.length);
  });

  it('tells a local entry kept as it is from the stat results as the scan does, or leaves it to the scan', () => {
    const copy = CompactTree.of(new Map(entries.map((e) => [e.path, e])));
    // Entries whose numbers all fit the packed form; the others are told by the scan alone.
    const packed = new Set(['/a', '/a/x.txt', '/a/old.txt']);
    /** Stat results agreeing with a local entry's id and stamp (a stamp is `size:mtimeNs:ctimeNs:ino`). */
    const statOf = (e: SideEntry) => {
      const [dev, ino] = e.id!.split(':');
      const [size, mtimeNs, ctimeNs] = (e.stamp ?? '0:0:0').split(':');
      return { dev: BigInt(dev), ino: BigInt(ino), size: BigInt(size), mtimeNs: BigInt(mtimeNs), ctimeNs: BigInt(ctimeNs) };
    };
    const answers = new Set<string>();
    for (const e of entries.filter((x) => x.id?.includes(':'))) {
      const base = statOf(e);
      // The same numbers, and each one changed.
      for (const f of [base, ...(['dev', 'ino', 'size', 'mtimeNs', 'ctimeNs'] as const).map((k) => ({ ...base, [k]: base[k] + 1n }))])
        for (const kind of ['file', 'folder'] as const) {
          const st = { ...f, isDirectory: () => kind === 'folder', isFile: () => kind === 'file' } as unknown as BigIntStats;
          const was = copy.get(e.path)!;
          const scan = entryWithoutReading(e.path, st, `${f.dev}:${f.ino}`, was) === was;
          const fast = copy.keepsLocal(e.path, kind, st);
          expect({ path: e.path, f, kind, fast }).toEqual({ path: e.path, f, kind, fast: packed.has(e.path) && scan });
          answers.add(`${packed.has(e.path)} ${fast}`);
        }
    }
    // Kept and not kept among the packed ones, and unpacked ones met.
    expect([...answers].sort()).toEqual(['false false', 'true false', 'true true']);
  });

  it('tells a local account\'s child stored the same from its stat results as from the entry the scan makes', () => {
    // Children of a local account as the scan stores them: a folder, and files whose ETag (inode, size, time in hex) with the size is identity and version.
    const account: SideEntry[] = [
      { path: '/r', kind: 'folder', ver: 'd' },
      { path: '/r/e.bin', kind: 'file', id: '5f3a-10-18c7|16', ver: '5f3a-10-18c7|16', size: 16, modified: 6343, seenAt: 1_700_000_005_000 },
      { path: '/r/zero.bin', kind: 'file', id: '1-0-0|0', ver: '1-0-0|0', size: 0, modified: 0 },
      // Not of that form (a leading zero, another version): told by the entries alone.
      { path: '/r/odd.bin', kind: 'file', id: '05f3a-10-18c7|16', ver: '05f3a-10-18c7|16', size: 16 },
      { path: '/r/v.bin', kind: 'file', id: '5f3a-10-18c7|16', ver: 'v7', size: 16 },
    ];
    const copy = CompactTree.of(new Map(account.map((e) => [e.path, e])));
    const packed = new Set(['/r', '/r/e.bin', '/r/zero.bin']);
    const statOf = (kind: 'file' | 'folder', ino: number, size: number, mtimeMs: number) => ({ ino, size, mtimeMs, isDirectory: () => kind === 'folder' }) as unknown as Stats;
    const answers = new Set<string>();
    for (const e of account) {
      const [ino, size, time] = e.id ? e.id.split('|')[0].split('-').map((h) => parseInt(h, 16)) : [7, 0, 0];
      for (const kind of ['file', 'folder'] as const)
        for (const [i, s, t] of [[ino, size, time], [ino + 1, size, time], [ino, size + 1, time], [ino, size, time + 1], [ino, size, time + 0.4], [ino, size, time - 0.6]]) {
          const st = statOf(kind, i, s, t);
          const fast = copy.keepsAccountChild(e.path, st);
          const want = packed.has(e.path) && sameStored(localAccountEntry(st, e.path, 0), copy.get(e.path)!);
          expect({ path: e.path, kind, i, s, t, fast }).toEqual({ path: e.path, kind, i, s, t, fast: want });
          answers.add(`${packed.has(e.path)} ${fast}`);
        }
    }
    expect([...answers].sort()).toEqual(['false false', 'true false', 'true true']);
    // The packed id is given back as it was stored.
    for (const e of account) expect(copy.get(e.path)).toEqual(e);
  });

  it('the store compares a later scan with it and writes only the rows that differ', () => {
    const { s, pair } = store();
    const tree: Tree = new Map(entries.map((e) => [e.path, e]));
    expect(s.saveTree(pair, 'local', tree)).toBe(entries.length);
    // As at the end of a run.
    s.compactScans(pair);
    expect(s.lastScan(pair, 'local')).toBeInstanceOf(CompactTree);
    // The same entries as new objects: nothing to write.
    expect(s.saveTree(pair, 'local', new Map(entries.map((e) => [e.path, { ...e }])))).toBe(0);
    // One changed stamp, one file gone.
    const next: Tree = new Map(entries.filter((e) => e.path !== '/moved').map((e) => [e.path, e.path === '/a/x.txt' ? { ...e, stamp: '3:1700000000123456789:1700000000987654322:12' } : e]));
    expect(s.saveTree(pair, 'local', next)).toBe(2);
    s.compactScans(pair);
    expect(s.tree(pair, 'local').get('/a/x.txt')!.stamp).toBe('3:1700000000123456789:1700000000987654322:12');
  });
});
