import type { Db } from '../db';

/**
 * The mail cache: folders with their sync cursors (UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ),
 * message headers (one row per message per folder), raw sources fetched on demand, an FTS5
 * index over subject/from/to/text, labels created before any message carries them, and
 * tracking events of sent mail.
 */
export function up(db: Db): void {
  db.exec(`
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
    -- Newest first; equal arrival times (whole seconds on Maildir) fall back to UID order.
    CREATE INDEX mail_messages_by_date ON mail_messages (account_id, date_ms DESC, uid DESC, id DESC);
    CREATE INDEX mail_messages_by_folder_date ON mail_messages (account_id, folder, date_ms DESC, uid DESC, id DESC);
    CREATE INDEX mail_messages_by_thread ON mail_messages (account_id, thread_id, date_ms DESC);
    CREATE INDEX mail_messages_by_msgid ON mail_messages (account_id, message_id);

    -- Keywords (labels) normalized for the all-must-match filter.
    CREATE TABLE mail_keywords (
      message INTEGER NOT NULL REFERENCES mail_messages(id) ON DELETE CASCADE,
      keyword TEXT NOT NULL,
      PRIMARY KEY (keyword, message)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX mail_keywords_by_message ON mail_keywords (message);

    -- Bodies on demand: the raw source and what was parsed out of it.
    CREATE TABLE mail_bodies (
      message INTEGER PRIMARY KEY REFERENCES mail_messages(id) ON DELETE CASCADE,
      raw BLOB NOT NULL,
      text_body TEXT,
      html_body TEXT,
      attachments TEXT NOT NULL DEFAULT '[]'
    ) STRICT;

    CREATE VIRTUAL TABLE mail_fts USING fts5 (
      subject, sender, recipients, body,
      content = '', contentless_delete = 1,
      tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
    );

    -- The FTS row of a message goes with it (expunge, UIDVALIDITY reset, account removal).
    CREATE TRIGGER mail_messages_fts_delete AFTER DELETE ON mail_messages BEGIN
      DELETE FROM mail_fts WHERE rowid = old.id;
    END;

    CREATE TABLE mail_labels (
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      created TEXT NOT NULL,
      PRIMARY KEY (account_id, name)
    ) STRICT, WITHOUT ROWID;

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
    CREATE INDEX mail_tracking_by_message ON mail_tracking_events (account_id, message_id, kind, at_ms);
  `);
}
