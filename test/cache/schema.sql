-- Generated from a fresh migration run (user_version 860); see test/cache/schema.test.ts.
CREATE TABLE account_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bearer', 'account_key')),
  token_hash TEXT NOT NULL UNIQUE,
  sealed BLOB NOT NULL,
  active INTEGER NOT NULL DEFAULT 1,
  expiration TEXT,
  created TEXT NOT NULL,
  modified TEXT NOT NULL
) STRICT;

CREATE TABLE accounts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  service TEXT NOT NULL,
  account TEXT NOT NULL,
  options BLOB NOT NULL,
  active INTEGER NOT NULL DEFAULT 1,
  disable_reason TEXT,
  admin INTEGER NOT NULL DEFAULT 0,
  user_id TEXT,
  token_expiry TEXT,
  refresh_token_expiry TEXT,
  is_default INTEGER NOT NULL DEFAULT 0,
  created TEXT NOT NULL,
  modified TEXT NOT NULL,
  import_credentials BLOB,
  disable_message TEXT,
  unreachable_since TEXT,
  unreachable_last TEXT,
  unreachable_attempts INTEGER NOT NULL DEFAULT 0 CHECK (unreachable_attempts >= 0)
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
  recorded_at TEXT NOT NULL,
  subtype TEXT,
  link TEXT
) STRICT;

CREATE TABLE activity_event_bus_queue (
  bus_id INTEGER NOT NULL REFERENCES activity_event_buses(id) ON DELETE CASCADE,
  account_id INTEGER NOT NULL,
  subscription_id INTEGER NOT NULL,
  -- Activity up to this seq is delivered. delivered_seq INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at INTEGER NOT NULL,
  PRIMARY KEY (bus_id, subscription_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE activity_event_buses (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  -- Only this account's activity; NULL = every account. account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE,
  region TEXT NOT NULL,
  event_bus_name TEXT NOT NULL,
  source TEXT NOT NULL,
  -- A custom endpoint (a VPC endpoint, a local emulator); NULL = the region's AWS endpoint. endpoint TEXT,
  -- Sealed JSON {accessKeyId,
  secretAccessKey}; NULL = the default AWS credential chain. credentials BLOB,
  failing_since TEXT,
  last_error TEXT,
  created TEXT NOT NULL
) STRICT;

CREATE TABLE activity_followers (
  subscription_id INTEGER PRIMARY KEY REFERENCES activity_subscriptions(id) ON DELETE CASCADE,
  upstream_cursor TEXT,
  baseline_done INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
) STRICT;

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

CREATE TABLE activity_watermarks (
  account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
  purged_through INTEGER NOT NULL
) STRICT;

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

CREATE TABLE activity_webhook_queue (
  webhook_id INTEGER NOT NULL REFERENCES activity_webhooks(id) ON DELETE CASCADE,
  account_id INTEGER NOT NULL,
  subscription_id INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  PRIMARY KEY (webhook_id, subscription_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE activity_webhooks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  url TEXT NOT NULL,
  format TEXT NOT NULL CHECK (format IN ('json', 'form')),
  account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE,
  failing_since TEXT,
  paused INTEGER NOT NULL DEFAULT 0,
  created TEXT NOT NULL
) STRICT;

CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT 1,
  created TEXT NOT NULL,
  modified TEXT NOT NULL,
  last_used TEXT,
  sealed BLOB
) STRICT;

CREATE TABLE download_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  file_id TEXT NOT NULL,
  name TEXT NOT NULL,
  target_path TEXT NOT NULL,
  size INTEGER CHECK (size IS NULL OR size >= 0),
  etag TEXT,
  modified TEXT,
  state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'done', 'failed', 'cancelled')),
  error TEXT,
  created TEXT NOT NULL,
  updated TEXT NOT NULL,
  ranges TEXT
) STRICT;

CREATE TABLE entries (
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  parent TEXT NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('file', 'folder')),
  size INTEGER,
  modified TEXT,
  created TEXT,
  etag TEXT,
  mime_type TEXT,
  seen_at TEXT NOT NULL,
  learned_at TEXT,
  PRIMARY KEY (account_id, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE folder_listings (
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  listed_at TEXT NOT NULL,
  PRIMARY KEY (account_id, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE links (
  id TEXT PRIMARY KEY,
  token TEXT NOT NULL UNIQUE,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  file_id TEXT NOT NULL,
  direct INTEGER NOT NULL DEFAULT 0,
  active INTEGER NOT NULL DEFAULT 1,
  expiration TEXT,
  password_hash TEXT,
  created TEXT NOT NULL,
  modified TEXT NOT NULL
) STRICT;

CREATE TABLE mail_bodies (
  message INTEGER PRIMARY KEY REFERENCES mail_messages(id) ON DELETE CASCADE,
  raw BLOB NOT NULL,
  text_body TEXT,
  html_body TEXT,
  attachments TEXT NOT NULL DEFAULT '[]'
) STRICT;

CREATE TABLE mail_folders (
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  name TEXT NOT NULL,
  delimiter TEXT,
  special_use TEXT,
  selectable INTEGER NOT NULL DEFAULT 1,
  uidvalidity INTEGER,
  uidnext INTEGER,
  highestmodseq INTEGER,
  synced_at TEXT,
  PRIMARY KEY (account_id, path)
) STRICT, WITHOUT ROWID;

CREATE VIRTUAL TABLE mail_fts USING fts5 (
  subject,
  sender,
  recipients,
  body,
  content = '',
  contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2',
  prefix = '2 3'
);

CREATE TABLE 'mail_fts_config' (
  k PRIMARY KEY,
  v
) WITHOUT ROWID;

CREATE TABLE 'mail_fts_data' (
  id INTEGER PRIMARY KEY,
  block BLOB
);

CREATE TABLE 'mail_fts_docsize' (
  id INTEGER PRIMARY KEY,
  sz BLOB,
  origin INTEGER
);

CREATE TABLE 'mail_fts_idx' (
  segid,
  term,
  pgno,
  PRIMARY KEY(segid, term)
) WITHOUT ROWID;

CREATE TABLE mail_keywords (
  message INTEGER NOT NULL REFERENCES mail_messages(id) ON DELETE CASCADE,
  keyword TEXT NOT NULL,
  PRIMARY KEY (keyword, message)
) STRICT, WITHOUT ROWID;

CREATE TABLE mail_labels (
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  created TEXT NOT NULL,
  PRIMARY KEY (account_id, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE mail_messages (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  folder TEXT NOT NULL,
  uidvalidity INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  modseq INTEGER,
  message_id TEXT,
  in_reply_to TEXT,
  refs TEXT,
  thread_id TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  from_json TEXT NOT NULL DEFAULT 'null',
  to_json TEXT NOT NULL DEFAULT '[]',
  cc_json TEXT NOT NULL DEFAULT '[]',
  bcc_json TEXT NOT NULL DEFAULT '[]',
  date_ms INTEGER NOT NULL,
  size INTEGER,
  flags TEXT NOT NULL DEFAULT '[]',
  seen INTEGER NOT NULL DEFAULT 0,
  flagged INTEGER NOT NULL DEFAULT 0,
  has_attachments INTEGER NOT NULL DEFAULT 0,
  snippet TEXT,
  UNIQUE (account_id, folder, uid)
) STRICT;

CREATE TABLE mail_outbox (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'cancelled')),
  -- Not sent before this (undo delay, send later); then retried at next_attempt_ms. send_at_ms INTEGER NOT NULL,
  next_attempt_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  message_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  sender TEXT NOT NULL,
  recipients TEXT NOT NULL,
  -- What goes over SMTP (no Bcc header) and the copy filed in Sent. wire BLOB NOT NULL,
  copy BLOB,
  -- The message this one answers (marked \Answered once sent): folder,
  UIDVALIDITY,
  UID. answers TEXT,
  copy_state TEXT NOT NULL DEFAULT 'pending' CHECK (copy_state IN ('pending', 'done', 'failed')),
  copy_attempts INTEGER NOT NULL DEFAULT 0,
  copy_error TEXT,
  -- Where the copy landed in Sent,
  once it did. copy_folder TEXT,
  copy_uidvalidity INTEGER,
  copy_uid INTEGER,
  created TEXT NOT NULL,
  updated TEXT NOT NULL,
  sent_at TEXT
) STRICT;

CREATE TABLE mail_tracking_events (
  id INTEGER PRIMARY KEY,
  account_id INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('email_open', 'email_click')),
  url TEXT,
  subscription_id TEXT,
  recipient TEXT,
  ip TEXT,
  user_agent TEXT,
  at TEXT NOT NULL,
  at_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE multipart_parts (
  session_id INTEGER NOT NULL REFERENCES multipart_sessions(id) ON DELETE CASCADE,
  part_number INTEGER NOT NULL CHECK (part_number BETWEEN 1 AND 10000),
  size INTEGER NOT NULL CHECK (size >= 0),
  etag TEXT,
  created TEXT NOT NULL,
  PRIMARY KEY (session_id, part_number)
) STRICT, WITHOUT ROWID;

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

CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE sync_conflicts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  copy_path TEXT NOT NULL,
  created TEXT NOT NULL
) STRICT;

CREATE TABLE sync_journal (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
  op TEXT NOT NULL,
  stage TEXT NOT NULL CHECK (stage IN ('started', 'written')),
  temp TEXT,
  result TEXT,
  created TEXT NOT NULL
) STRICT;

CREATE TABLE sync_pairs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  local_path TEXT NOT NULL,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  remote_path TEXT NOT NULL,
  excluded TEXT NOT NULL DEFAULT '[]',
  paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  allow_deletes INTEGER NOT NULL DEFAULT 0 CHECK (allow_deletes IN (0, 1)),
  state TEXT NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'syncing', 'error', 'held', 'refused')),
  error TEXT,
  last_sync TEXT,
  created TEXT NOT NULL,
  settled INTEGER NOT NULL DEFAULT 0 CHECK (settled IN (0, 1)),
  UNIQUE (local_path)
) STRICT;

CREATE TABLE sync_tree (
  pair_id INTEGER NOT NULL REFERENCES sync_pairs(id) ON DELETE CASCADE,
  tree TEXT NOT NULL CHECK (tree IN ('local', 'remote', 'synced')),
  path TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('file', 'folder')),
  local_id TEXT,
  local_ver TEXT,
  remote_id TEXT,
  remote_ver TEXT,
  hash TEXT,
  size INTEGER,
  stamp TEXT,
  PRIMARY KEY (pair_id, tree, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE "upload_jobs" (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  parent_id TEXT NOT NULL,
  name TEXT NOT NULL,
  local_path TEXT NOT NULL,
  size INTEGER NOT NULL CHECK (size >= 0),
  mtime_ms INTEGER NOT NULL,
  overwrite INTEGER NOT NULL CHECK (overwrite IN (0, 1)),
  session_id INTEGER,
  state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'done', 'failed', 'cancelled')),
  result_id TEXT,
  verified TEXT CHECK (verified IS NULL OR verified IN ('size', 'md5', 'multipart-etag')),
  error TEXT,
  created TEXT NOT NULL,
  updated TEXT NOT NULL
) STRICT;

CREATE INDEX account_tokens_by_account ON account_tokens (account_id, kind);

CREATE INDEX activity_by_account ON activity (account_id, seq);

CREATE INDEX activity_by_subscription ON activity (subscription_id, seq);

CREATE INDEX activity_by_time ON activity (account_id, recorded_at);

CREATE INDEX activity_snapshot_by_etag ON activity_snapshot (subscription_id, etag);

CREATE INDEX activity_snapshot_by_parent ON activity_snapshot (subscription_id, parent);

CREATE INDEX activity_webhook_attempts_by_hook ON activity_webhook_attempts (webhook_id, id);

CREATE INDEX download_jobs_by_state ON download_jobs (state);

CREATE INDEX entries_by_modified ON entries (account_id, modified);

CREATE INDEX entries_by_parent ON entries (account_id, parent, name);

CREATE INDEX links_by_account ON links (account_id, created);

CREATE INDEX mail_keywords_by_message ON mail_keywords (message);

CREATE INDEX mail_messages_by_date ON mail_messages (account_id, date_ms DESC, uid DESC, id DESC);

CREATE INDEX mail_messages_by_folder_date ON mail_messages (account_id, folder, date_ms DESC, uid DESC, id DESC);

CREATE INDEX mail_messages_by_msgid ON mail_messages (account_id, message_id);

CREATE INDEX mail_messages_by_thread ON mail_messages (account_id, thread_id, date_ms DESC);

CREATE INDEX mail_outbox_by_account ON mail_outbox (account_id, id);

CREATE INDEX mail_outbox_due ON mail_outbox (state, next_attempt_ms);

CREATE INDEX mail_tracking_by_message ON mail_tracking_events (account_id, message_id, kind, at_ms);

CREATE INDEX multipart_sessions_by_updated ON multipart_sessions (updated);

CREATE INDEX sync_journal_by_pair ON sync_journal (pair_id, id);

CREATE INDEX upload_jobs_by_state ON upload_jobs (state);

CREATE TRIGGER mail_messages_fts_delete AFTER DELETE ON mail_messages BEGIN DELETE FROM mail_fts WHERE rowid = old.id; END;

CREATE TRIGGER sync_journal_insert_unsettles AFTER INSERT ON sync_journal WHEN (SELECT settled FROM sync_pairs WHERE id = NEW.pair_id) = 1 BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = NEW.pair_id; END;

CREATE TRIGGER sync_tree_delete_unsettles AFTER DELETE ON sync_tree WHEN (SELECT settled FROM sync_pairs WHERE id = OLD.pair_id) = 1 BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = OLD.pair_id; END;

CREATE TRIGGER sync_tree_insert_unsettles AFTER INSERT ON sync_tree WHEN (SELECT settled FROM sync_pairs WHERE id = NEW.pair_id) = 1 BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = NEW.pair_id; END;

CREATE TRIGGER sync_tree_update_unsettles AFTER UPDATE ON sync_tree WHEN (SELECT settled FROM sync_pairs WHERE id IN (OLD.pair_id, NEW.pair_id) AND settled = 1) = 1 BEGIN UPDATE sync_pairs SET settled = 0 WHERE id IN (OLD.pair_id, NEW.pair_id); END;
