import type { Db } from '../db';

/**
 * Webhook signatures (spec 3, JSON webhook) are HMACs keyed by the oldest active API key, so
 * the key itself must be recoverable: keep it sealed with the keyring beside its hash. Keys
 * created before this step have no sealed copy and cannot sign (they still authenticate).
 */
export function up(db: Db): void {
  db.exec('ALTER TABLE api_keys ADD COLUMN sealed BLOB');
}
