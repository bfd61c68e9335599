import type { Db } from '../db';

/**
 * REST authentication (spec 1, Authentication): application API keys, and per-account
 * credentials — OAuth-style bearer tokens and the deprecated v0 account keys — in one table.
 * Only a SHA-256 of each secret is searchable; the secret itself is sealed with the keyring so
 * Settings can show it again (bearer tokens are "created or retrieved" by token_from_key).
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE api_keys (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      name TEXT NOT NULL,
      key_hash TEXT NOT NULL UNIQUE,
      prefix TEXT NOT NULL,
      active INTEGER NOT NULL DEFAULT 1,
      created TEXT NOT NULL,
      modified TEXT NOT NULL,
      last_used TEXT
    ) STRICT;

    CREATE TABLE account_tokens (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('bearer', 'account_key')),
      token_hash TEXT NOT NULL UNIQUE,
      sealed BLOB NOT NULL,
      active INTEGER NOT NULL DEFAULT 1,
      expiration TEXT,
      created TEXT NOT NULL,
      modified TEXT NOT NULL
    ) STRICT;
    CREATE INDEX account_tokens_by_account ON account_tokens (account_id, kind);
  `);
}
