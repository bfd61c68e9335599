import type { Db } from '../db';

/**
 * The client-side uploader's plan: which local file goes where, the file's size and mtime when
 * the plan was made (a changed file is not resumed), and the multipart session holding the
 * confirmed parts. A new process resumes every job still `running`.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE upload_jobs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      parent_id TEXT NOT NULL,
      name TEXT NOT NULL,
      local_path TEXT NOT NULL,
      size INTEGER NOT NULL CHECK (size >= 0),
      mtime_ms INTEGER NOT NULL,
      overwrite INTEGER NOT NULL CHECK (overwrite IN (0, 1)),
      session_id INTEGER,
      state TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'cancelled')),
      result_id TEXT,
      verified TEXT CHECK (verified IS NULL OR verified IN ('size', 'md5', 'multipart-etag')),
      error TEXT,
      created TEXT NOT NULL,
      updated TEXT NOT NULL
    ) STRICT;
    CREATE INDEX upload_jobs_by_state ON upload_jobs (state);
  `);
}
