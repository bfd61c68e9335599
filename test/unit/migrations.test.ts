// The migration ladder (src-main/cache/db.ts): each step applies on the database the previous
// steps left, tables are STRICT, and re-opening a migrated database changes nothing.
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate, openDb } from '../../src-main/cache/db';

describe('migrations', () => {
  it('are numbered uniquely in ascending order', () => {
    const versions = MIGRATIONS.map((m) => m.version);
    expect(new Set(versions).size).toBe(versions.length);
    expect([...versions].sort((a, b) => a - b)).toEqual(versions);
    expect(versions[0]).toBe(10);
  });

  it('0010-core creates STRICT tables that reject wrong types', () => {
    const db = openDb(':memory:', { upTo: 10 });
    expect(db.pragma('user_version', { simple: true })).toBe(10);
    const strict = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%STRICT%'").all().map((r: any) => r.name);
    expect(strict).toEqual(expect.arrayContaining(['settings', 'accounts', 'entries', 'folder_listings']));
    expect(() => db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('x', 'y', 'not a blob', 'a', 'b')").run()).toThrow(/cannot store TEXT value in BLOB/);
    db.close();
  });

  it('each step upgrades the previous state and the full ladder is idempotent', () => {
    const db = new Database(':memory:');
    for (const m of MIGRATIONS) {
      migrate(db, m.version);
      expect(db.pragma('user_version', { simple: true })).toBe(m.version);
    }
    const schema = db.prepare('SELECT sql FROM sqlite_schema ORDER BY name').all();
    migrate(db);
    expect(db.prepare('SELECT sql FROM sqlite_schema ORDER BY name').all()).toEqual(schema);
    db.close();
  });

  it('0510-activity-tracking adds subtype and link to existing activity rows', () => {
    const db = new Database(':memory:');
    migrate(db, 500);
    db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('memory', 'm', x'00', 'c', 'm')").run();
    db.prepare("INSERT INTO activity_subscriptions (account_id, subscription_type, expiry, created, modified) VALUES (1, 'changes', 'e', 'c', 'm')").run();
    db.prepare("INSERT INTO activity (account_id, subscription_id, type, kind, path, recorded_at) VALUES (1, 1, 'add', 'file', '/a', 'r')").run();
    migrate(db, 510);
    expect(db.prepare('SELECT path, subtype, link FROM activity').all()).toEqual([{ path: '/a', subtype: null, link: null }]);
    db.close();
  });

  it('0520-pausable-transfers keeps existing upload jobs, admits `paused`, and adds download_jobs', () => {
    const db = new Database(':memory:');
    migrate(db, 510);
    db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('memory', 'm', x'00', 'c', 'm')").run();
    db.prepare(
      "INSERT INTO upload_jobs (account_id, parent_id, name, local_path, size, mtime_ms, overwrite, session_id, state, created, updated) VALUES (1, 'root', 'big.bin', '/tmp/big.bin', 9, 1, 0, 4, 'running', 'c', 'u')",
    ).run();
    expect(() => db.prepare("UPDATE upload_jobs SET state = 'paused'").run()).toThrow(/CHECK/);
    migrate(db, 520);
    expect(db.prepare('SELECT id, name, session_id, state FROM upload_jobs').all()).toEqual([{ id: 1, name: 'big.bin', session_id: 4, state: 'running' }]);
    db.prepare("UPDATE upload_jobs SET state = 'paused'").run();
    expect(() => db.prepare("UPDATE upload_jobs SET state = 'stalled'").run()).toThrow(/CHECK/);
    const download = (state: string) =>
      db.prepare("INSERT INTO download_jobs (account_id, file_id, name, target_path, size, state, created, updated) VALUES (1, 'f', 'n', '/tmp/n', 3, ?, 'c', 'u')").run(state);
    download('paused');
    expect(() => download('stalled')).toThrow(/CHECK/);
    db.prepare('DELETE FROM accounts').run();
    expect(db.prepare('SELECT (SELECT COUNT(*) FROM upload_jobs) + (SELECT COUNT(*) FROM download_jobs) AS n').get()).toEqual({ n: 0 });
    db.close();
  });

  it('uses WAL on a file database', async () => {
    const { scratchDir } = await import('../servers/util');
    const db = openDb(`${scratchDir('wal')}/t.db`);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });
});
