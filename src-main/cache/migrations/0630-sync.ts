import type { Db } from '../db';

/**
 * Two-way sync (docs/sync.md): pairs of a local folder and a folder of an account; per pair the
 * three trees (what each side held at its last scan, and the synced tree, the merge base); the
 * journal of operations in progress, so a killed process resumes where it stopped; and the
 * conflict copies made, for the conflicts list.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE sync_pairs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      local_path TEXT NOT NULL,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      remote_path TEXT NOT NULL,
      excluded TEXT NOT NULL DEFAULT '[]',
      paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
      allow_deletes INTEGER NOT NULL DEFAULT 0 CHECK (allow_deletes IN (0, 1)),
      state TEXT NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'syncing', 'error', 'held', 'refused')),
      error TEXT,
      last_sync TEXT,
      created TEXT NOT NULL,
      UNIQUE (local_path)
    ) STRICT;

    CREATE TABLE sync_tree (
      pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
      tree TEXT NOT NULL CHECK (tree IN ('local', 'remote', 'synced')),
      path TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('file', 'folder')),
      local_id TEXT,
      local_ver TEXT,
      remote_id TEXT,
      remote_ver TEXT,
      hash TEXT,
      size INTEGER,
      stamp TEXT,
      PRIMARY KEY (pair_id, tree, path)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE sync_journal (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
      op TEXT NOT NULL,
      stage TEXT NOT NULL CHECK (stage IN ('started', 'written')),
      temp TEXT,
      result TEXT,
      created TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sync_journal_by_pair ON sync_journal (pair_id, id);

    CREATE TABLE sync_conflicts (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      copy_path TEXT NOT NULL,
      created TEXT NOT NULL
    ) STRICT;
  `);
}
