import type { Db } from '../db';

/**
 * A download split into ranges read at once (docs/uploads.md, "Resumable downloads"): each
 * range's start, how far its written run reaches, and its end, as JSON `[[start, done, end], …]`;
 * NULL for a download read from front to back, whose partial file's size is what it has.
 */
export function up(db: Db): void {
  db.exec(`ALTER TABLE download_jobs ADD COLUMN ranges TEXT`);
}
