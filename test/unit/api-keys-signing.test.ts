// Webhook signatures (spec 3, JSON webhook): Base64(HMAC-SHA256(API key, body)) with the
// oldest active API key. Keys are kept sealed (migration 0500) so the secret can sign.
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { migrate } from '../../src-main/cache/db';
import { scratchDir } from '../servers/util';

describe('API keys as webhook signing keys', () => {
  it('signs with the oldest active key, skipping revoked ones; none → null', async () => {
    const app = await createApp({ dataDir: scratchDir('sign'), defaultLocalFolder: false });
    expect(app.apiKeys.signingKey()).toBeNull();
    const first = app.apiKeys.create('first');
    const second = app.apiKeys.create('second');
    expect(app.apiKeys.signingKey()).toBe(first.key);
    app.apiKeys.revoke(first.apiKey.id);
    expect(app.apiKeys.signingKey()).toBe(second.key);
    app.apiKeys.ensure(first.key); // revived: the oldest again
    expect(app.apiKeys.signingKey()).toBe(first.key);
    await app.close();
  });

  it('migration 0500 adds the sealed column to an api_keys table that has rows', () => {
    const db = new Database(':memory:');
    migrate(db, 490);
    db.prepare("INSERT INTO api_keys (name, key_hash, prefix, created, modified) VALUES ('old', 'h', 'p', 'c', 'm')").run();
    migrate(db, 500);
    expect(db.prepare('SELECT name, sealed FROM api_keys').all()).toEqual([{ name: 'old', sealed: null }]);
    db.close();
  });
});
