import type { Db } from '../db';

/**
 * When Tributary learned of each cached entry's current version (spec 1, Recent files): ties of
 * `modified` are broken by it, and backends that keep whole seconds (S3) still answer `after`
 * for files made within one second. Until now a row's `seen_at` is the best there is.
 */
export function up(db: Db): void {
  db.exec(`
    ALTER TABLE entries ADD COLUMN learned_at TEXT;
    UPDATE entries SET learned_at = seen_at;
  `);
}
