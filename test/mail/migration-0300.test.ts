// Migration 0300-mail: tables, indexes, FTS5 and its delete trigger.
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { MailStore } from '../../src-main/mail/store';

describe('migration 0300-mail', () => {
  it('creates the mail cache and keeps the FTS index in step with messages', () => {
    const before = openDb(':memory:', { upTo: 299 });
    expect(before.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'mail_%'").all()).toEqual([]);
    before.close();
    const db = openDb(':memory:');
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(300);
    const names = (db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'mail_%' AND type IN ('table','trigger')").pluck().all() as string[]).sort();
    expect(names).toEqual(expect.arrayContaining(['mail_bodies', 'mail_folders', 'mail_fts', 'mail_keywords', 'mail_labels', 'mail_messages', 'mail_messages_fts_delete', 'mail_tracking_events']));
    db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('imap', 'a', x'00', 'now', 'now')").run();
    const store = new MailStore(db);
    store.upsertFolder(1, { path: 'INBOX', name: 'INBOX', delimiter: '/', specialUse: null, selectable: true });
    const id = store.upsertHeader(1, 'INBOX', 7, {
      uid: 1, modseq: 3, messageId: '<m@x>', inReplyTo: null, references: [], threadId: 't', subject: 'Hello walrus',
      from: { name: 'Ann', email: 'ann@x.test' }, to: [], cc: [], bcc: [], dateMs: 1000, size: 10, flags: ['\\Seen', 'work'], hasAttachments: false,
    });
    const match = (q: string) => db.prepare('SELECT rowid FROM mail_fts WHERE mail_fts MATCH ?').pluck().all(q);
    expect(match('walrus')).toEqual([id]);
    expect(match('ann')).toEqual([id]);
    expect(store.labels(1)).toEqual(['work']);
    store.deleteUid(1, 'INBOX', 1);
    expect(match('walrus')).toEqual([]);
    expect(db.prepare('SELECT count(*) FROM mail_keywords').pluck().get()).toBe(0);
    db.close();
  });
});
