// The synced tree in the database (docs/sync.md, "How changes are found": the synced tree).
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
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
