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
