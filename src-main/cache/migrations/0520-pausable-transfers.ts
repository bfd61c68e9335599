import type { Db } from '../db';

/**
 * Pausable transfers: an upload job may be `paused` (kept, with its multipart session, until the
 * user resumes it, also after a restart), so upload_jobs is rebuilt with the wider state check
 * (SQLite cannot alter a CHECK). Downloads get their own durable rows: the remote file's validators
 * when the download started (a changed file is not continued) and the partial file beside the
 * target that a ranged read continues.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE upload_jobs_new (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      parent_id TEXT NOT NULL,
      name TEXT NOT NULL,
      local_path TEXT NOT NULL,
      size INTEGER NOT NULL CHECK (size >= 0),
      mtime_ms INTEGER NOT NULL,
      overwrite INTEGER NOT NULL CHECK (overwrite IN (0, 1)),
      session_id INTEGER,
      state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'done', 'failed', 'cancelled')),
      result_id TEXT,
      verified TEXT CHECK (verified IS NULL OR verified IN ('size', 'md5', 'multipart-etag')),
      error TEXT,
      created TEXT NOT NULL,
      updated TEXT NOT NULL
    ) STRICT;
    INSERT INTO upload_jobs_new SELECT * FROM upload_jobs;
    DROP TABLE upload_jobs;
    ALTER TABLE upload_jobs_new RENAME TO upload_jobs;
    CREATE INDEX upload_jobs_by_state ON upload_jobs (state);

    CREATE TABLE download_jobs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      file_id TEXT NOT NULL,
      name TEXT NOT NULL,
      target_path TEXT NOT NULL,
      size INTEGER CHECK (size IS NULL OR size >= 0),
      etag TEXT,
      modified TEXT,
      state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'done', 'failed', 'cancelled')),
      error TEXT,
      created TEXT NOT NULL,
      updated TEXT NOT NULL
    ) STRICT;
    CREATE INDEX download_jobs_by_state ON download_jobs (state);
  `);
}
