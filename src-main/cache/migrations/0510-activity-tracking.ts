import type { Db } from '../db';

/**
 * Email tracking activity (spec 3: email_open / email_click with a Hyperlink object): a v2
 * subtype beside the v1 type, and the clicked link as JSON.
 */
export function up(db: Db): void {
  db.exec(`
    ALTER TABLE activity ADD COLUMN subtype TEXT;
    ALTER TABLE activity ADD COLUMN link TEXT;
  `);
}
