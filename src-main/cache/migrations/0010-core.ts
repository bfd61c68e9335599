import type { Db } from '../db';

/** Settings, accounts (options sealed: credentials are encrypted at rest), cached listings. */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE settings (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE accounts (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      service TEXT NOT NULL,
      account TEXT NOT NULL,
      options BLOB NOT NULL,
      active INTEGER NOT NULL DEFAULT 1,
      disable_reason TEXT,
      admin INTEGER NOT NULL DEFAULT 0,
      user_id TEXT,
      token_expiry TEXT,
      refresh_token_expiry TEXT,
      is_default INTEGER NOT NULL DEFAULT 0,
      created TEXT NOT NULL,
      modified TEXT NOT NULL
    ) STRICT;

    CREATE TABLE entries (
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      parent TEXT NOT NULL,
      name TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('file', 'folder')),
      size INTEGER,
      modified TEXT,
      created TEXT,
      etag TEXT,
      mime_type TEXT,
      seen_at TEXT NOT NULL,
      PRIMARY KEY (account_id, path)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX entries_by_parent ON entries (account_id, parent, name);
    CREATE INDEX entries_by_modified ON entries (account_id, modified);

    CREATE TABLE folder_listings (
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      listed_at TEXT NOT NULL,
      PRIMARY KEY (account_id, path)
    ) STRICT, WITHOUT ROWID;
  `);
}
