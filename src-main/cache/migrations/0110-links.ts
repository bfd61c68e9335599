import type { Db } from '../db';

/**
 * Shared links (spec 1, "Team and links"): a public URL Tributary itself serves for one file,
 * optionally direct, password-protected (scrypt hash), expiring or deactivated.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE links (
      id TEXT PRIMARY KEY,
      token TEXT NOT NULL UNIQUE,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      file_id TEXT NOT NULL,
      direct INTEGER NOT NULL DEFAULT 0,
      active INTEGER NOT NULL DEFAULT 1,
      expiration TEXT,
      password_hash TEXT,
      created TEXT NOT NULL,
      modified TEXT NOT NULL
    ) STRICT;
    CREATE INDEX links_by_account ON links (account_id, created);
  `);
}
