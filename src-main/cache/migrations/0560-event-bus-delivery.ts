import type { Db } from '../db';

/**
 * Event-bus delivery (spec 3, Event-bus event): the AWS EventBridge buses activity is sent to,
 * and per (bus, subscription) the last activity delivered, so a failed or interrupted delivery
 * resumes where it stopped, in order, after a restart too.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE activity_event_buses (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      -- Only this account's activity; NULL = every account.
      account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE,
      region TEXT NOT NULL,
      event_bus_name TEXT NOT NULL,
      source TEXT NOT NULL,
      -- A custom endpoint (a VPC endpoint, a local emulator); NULL = the region's AWS endpoint.
      endpoint TEXT,
      -- Sealed JSON {accessKeyId, secretAccessKey}; NULL = the default AWS credential chain.
      credentials BLOB,
      failing_since TEXT,
      last_error TEXT,
      created TEXT NOT NULL
    ) STRICT;

    CREATE TABLE activity_event_bus_queue (
      bus_id INTEGER NOT NULL REFERENCES activity_event_buses(id) ON DELETE CASCADE,
      account_id INTEGER NOT NULL,
      subscription_id INTEGER NOT NULL,
      -- Activity up to this seq is delivered.
      delivered_seq INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      next_attempt_at INTEGER NOT NULL,
      PRIMARY KEY (bus_id, subscription_id)
    ) STRICT, WITHOUT ROWID;
  `);
}
