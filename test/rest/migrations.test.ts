/** Migrations 0100 (REST credentials) and 0110 (links): tables, constraints, cascades. */
import { describe, expect, it } from 'vitest';
import { migrate, openDb } from '../../src-main/cache/db';

function dbAt(version: number) {
  const db = openDb(':memory:', { upTo: version });
  db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('memory', 'a', x'00', 'now', 'now')").run();
  return db;
}

describe('cache migrations of the REST API', () => {
  it('0100-rest-auth: api_keys and account_tokens, unique hashes, cascade with the account', () => {
    const db = dbAt(99);
    migrate(db, 100);
    expect(db.pragma('user_version', { simple: true })).toBe(100);
    db.prepare("INSERT INTO api_keys (name, key_hash, prefix, created, modified) VALUES ('k', 'h1', 'p', 't', 't')").run();
    expect(() => db.prepare("INSERT INTO api_keys (name, key_hash, prefix, created, modified) VALUES ('k', 'h1', 'p', 't', 't')").run()).toThrow(/UNIQUE/);
    db.prepare("INSERT INTO account_tokens (account_id, kind, token_hash, sealed, created, modified) VALUES (1, 'bearer', 't1', x'00', 't', 't')").run();
    expect(() => db.prepare("INSERT INTO account_tokens (account_id, kind, token_hash, sealed, created, modified) VALUES (1, 'other', 't2', x'00', 't', 't')").run()).toThrow(/CHECK/);
    db.prepare('DELETE FROM accounts WHERE id = 1').run();
    expect(db.prepare('SELECT count(*) AS n FROM account_tokens').get()).toEqual({ n: 0 });
    db.close();
  });

  it('0110-links: links table, unique token, cascade with the account', () => {
    const db = dbAt(100);
    migrate(db, 110);
    expect(db.pragma('user_version', { simple: true })).toBe(110);
    const insert = db.prepare("INSERT INTO links (id, token, account_id, file_id, created, modified) VALUES (?, ?, 1, 'f', 't', 't')");
    insert.run('l1', 'tok');
    expect(() => insert.run('l2', 'tok')).toThrow(/UNIQUE/);
    expect(db.prepare('SELECT direct, active, expiration, password_hash FROM links').get()).toEqual({ direct: 0, active: 1, expiration: null, password_hash: null });
    db.prepare('DELETE FROM accounts WHERE id = 1').run();
    expect(db.prepare('SELECT count(*) AS n FROM links').get()).toEqual({ n: 0 });
    db.close();
  });
});
