import type { Db } from '../db';

/**
 * An activity's time is when Tributary learned of the change (spec 3: activity is returned in
 * the order the service learned of it; `from`/`until` select by that time), held in
 * `recorded_at`. The file modification time that `occurred_at` held is in the metadata already.
 */
export function up(db: Db): void {
  db.exec('ALTER TABLE activity DROP COLUMN occurred_at');
}
