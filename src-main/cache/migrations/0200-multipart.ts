import type { Db } from '../db';

/**
 * Multipart sessions (spec 1, Multipart upload): one row per open session with the target chosen
 * at init and, for native backends, the connector's JSON writer state (S3 UploadId, ...), so a
 * session survives a restart. Parts are the confirmed ones: the upstream (or the spool folder)
 * holds their bytes.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE multipart_sessions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      parent_path TEXT NOT NULL,
      name TEXT NOT NULL,
      path TEXT NOT NULL,
      overwrite INTEGER NOT NULL CHECK (overwrite IN (0, 1)),
      size INTEGER CHECK (size IS NULL OR size >= 0),
      part_size INTEGER NOT NULL CHECK (part_size > 0),
      parallel INTEGER NOT NULL CHECK (parallel IN (0, 1)),
      mode TEXT NOT NULL CHECK (mode IN ('native', 'spool')),
      writer_state TEXT,
      created TEXT NOT NULL,
      updated TEXT NOT NULL
    ) STRICT;
    CREATE INDEX multipart_sessions_by_updated ON multipart_sessions (updated);

    CREATE TABLE multipart_parts (
      session_id INTEGER NOT NULL REFERENCES multipart_sessions(id) ON DELETE CASCADE,
      part_number INTEGER NOT NULL CHECK (part_number BETWEEN 1 AND 10000),
      size INTEGER NOT NULL CHECK (size >= 0),
      etag TEXT,
      created TEXT NOT NULL,
      PRIMARY KEY (session_id, part_number)
    ) STRICT, WITHOUT ROWID;
  `);
}
