import type { Db } from '../db';

/**
 * The outbox: every message leaves through a row here, so that a send survives a restart and an
 * SMTP outage (retried with backoff), can wait (undo send, send later) and be cancelled, and a
 * message SMTP accepted stays "sent" while its copy to Sent is retried on its own.
 */
export function up(db: Db): void {
  db.exec(`
    CREATE TABLE mail_outbox (
      id INTEGER PRIMARY KEY,
      account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'cancelled')),
      -- Not sent before this (undo delay, send later); then retried at next_attempt_ms.
      send_at_ms INTEGER NOT NULL,
      next_attempt_ms INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      error TEXT,
      message_id TEXT NOT NULL,
      subject TEXT NOT NULL,
      sender TEXT NOT NULL,
      recipients TEXT NOT NULL,
      -- What goes over SMTP (no Bcc header) and the copy filed in Sent.
      wire BLOB NOT NULL,
      copy BLOB,
      -- The message this one answers (marked \\Answered once sent): folder, UIDVALIDITY, UID.
      answers TEXT,
      copy_state TEXT NOT NULL DEFAULT 'pending' CHECK (copy_state IN ('pending', 'done', 'failed')),
      copy_attempts INTEGER NOT NULL DEFAULT 0,
      copy_error TEXT,
      -- Where the copy landed in Sent, once it did.
      copy_folder TEXT,
      copy_uidvalidity INTEGER,
      copy_uid INTEGER,
      created TEXT NOT NULL,
      updated TEXT NOT NULL,
      sent_at TEXT
    ) STRICT;
    CREATE INDEX mail_outbox_due ON mail_outbox (state, next_attempt_ms);
    CREATE INDEX mail_outbox_by_account ON mail_outbox (account_id, id);
  `);
}
