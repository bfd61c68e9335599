import type { Db } from '../db';

/**
 * Activity (spec 3): subscriptions (one per account), the activity log with its per-account
 * retention watermark, follower state (upstream cursor and the polling snapshot, written in the
 * same transaction as the activity they produced), webhooks and every delivery attempt.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE activity_subscriptions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
      subscription_type TEXT NOT NULL CHECK (subscription_type IN ('changes', 'crawl', 'analytics')),
      crawl_type TEXT NOT NULL DEFAULT 'external',
      monitored_resources TEXT NOT NULL DEFAULT '[]',
      active INTEGER NOT NULL DEFAULT 1,
      disable_reason TEXT,
      is_default INTEGER NOT NULL DEFAULT 1,
      expiry TEXT NOT NULL,
      last_cursor TEXT,
      last_cursor_updated_at TEXT,
      inaccessible_since TEXT,
      crawl_done INTEGER NOT NULL DEFAULT 0,
      created TEXT NOT NULL,
      modified TEXT NOT NULL
    ) STRICT;

    CREATE TABLE activity (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      subscription_id INTEGER NOT NULL REFERENCES activity_subscriptions(id) ON DELETE CASCADE,
      type TEXT NOT NULL CHECK (type IN ('add', 'delete', 'update', 'rename', 'move', 'copy', 'restore')),
      api TEXT NOT NULL DEFAULT 'storage',
      kind TEXT NOT NULL,
      path TEXT NOT NULL,
      previous_path TEXT,
      metadata TEXT,
      previous_metadata TEXT,
      upstream_id TEXT,
      occurred_at TEXT,
      recorded_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX activity_by_account ON activity (account_id, seq);
    CREATE INDEX activity_by_subscription ON activity (subscription_id, seq);
    CREATE INDEX activity_by_time ON activity (account_id, recorded_at);

    -- Highest seq removed by retention per account: a cursor below it is stale.
    CREATE TABLE activity_watermarks (
      account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
      purged_through INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE activity_followers (
      subscription_id INTEGER PRIMARY KEY REFERENCES activity_subscriptions(id) ON DELETE CASCADE,
      upstream_cursor TEXT,
      baseline_done INTEGER NOT NULL DEFAULT 0,
      updated_at TEXT NOT NULL
    ) STRICT;

    -- What the polling walker saw last time, one row per entry.
    CREATE TABLE activity_snapshot (
      subscription_id INTEGER NOT NULL REFERENCES activity_subscriptions(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      parent TEXT NOT NULL,
      kind TEXT NOT NULL,
      etag TEXT,
      size INTEGER,
      modified TEXT,
      PRIMARY KEY (subscription_id, path)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX activity_snapshot_by_parent ON activity_snapshot (subscription_id, parent);
    CREATE INDEX activity_snapshot_by_etag ON activity_snapshot (subscription_id, etag);

    CREATE TABLE activity_webhooks (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      url TEXT NOT NULL,
      format TEXT NOT NULL CHECK (format IN ('json', 'form')),
      account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE,
      failing_since TEXT,
      paused INTEGER NOT NULL DEFAULT 0,
      created TEXT NOT NULL
    ) STRICT;

    -- One pending notification per (webhook, subscription); new activity re-arms it.
    CREATE TABLE activity_webhook_queue (
      webhook_id INTEGER NOT NULL REFERENCES activity_webhooks(id) ON DELETE CASCADE,
      account_id INTEGER NOT NULL,
      subscription_id INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at INTEGER NOT NULL,
      PRIMARY KEY (webhook_id, subscription_id)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE activity_webhook_attempts (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      webhook_id INTEGER NOT NULL REFERENCES activity_webhooks(id) ON DELETE CASCADE,
      account_id INTEGER,
      subscription_id INTEGER,
      kind TEXT NOT NULL CHECK (kind IN ('test', 'notify')),
      at TEXT NOT NULL,
      status INTEGER,
      error TEXT,
      ok INTEGER NOT NULL,
      duration_ms INTEGER NOT NULL,
      next_attempt_at TEXT
    ) STRICT;
    CREATE INDEX activity_webhook_attempts_by_hook ON activity_webhook_attempts (webhook_id, id);
  `);
}
