import type { Db } from '../db';

/**
 * Credentials an import or an update gave that the account's connector has no option for
 * (spec 1, Import an account / Update an account: `refresh_token`, a `token_secret` where the
 * service takes none), sealed like the options, so that `retrieve_tokens` reads back what was set.
 */
export function up(db: Db): void {
  db.exec('ALTER TABLE accounts ADD COLUMN import_credentials BLOB');
}
