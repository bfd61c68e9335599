import type { Db } from '../db';

/**
 * Spec 1, Account `active`: an account whose credentials are refused, or that stays
 * unreachable, is deactivated automatically. `disable_message` keeps what the server said;
 * `unreachable_since`, `unreachable_last` and `unreachable_attempts` count the failures in a
 * row since the account was last reached (any answer from the server clears them).
 */
export function up(db: Db): void {
  db.exec(`
    ALTER TABLE accounts ADD COLUMN disable_message TEXT;
    ALTER TABLE accounts ADD COLUMN unreachable_since TEXT;
    ALTER TABLE accounts ADD COLUMN unreachable_last TEXT;
    ALTER TABLE accounts ADD COLUMN unreachable_attempts INTEGER NOT NULL DEFAULT 0 CHECK (unreachable_attempts >= 0);
  `);
}
