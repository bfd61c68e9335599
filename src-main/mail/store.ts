/**
 * SQL of the mail cache (tables of migration 0300). Every write method is synchronous and meant
 * to run inside one transaction of the account's single writer (MailSync).
 */
import type { Db } from '../cache/db';

export interface Person {
  name: string | null;
  email: string;
}

export interface FolderRow {
  account_id: number;
  path: string;
  name: string;
  delimiter: string | null;
  special_use: string | null;
  selectable: number;
  uidvalidity: number | null;
  uidnext: number | null;
  highestmodseq: number | null;
  synced_at: string | null;
}

export interface MessageRow {
  id: number;
  account_id: number;
  folder: string;
  uidvalidity: number;
  uid: number;
  modseq: number | null;
  message_id: string | null;
  in_reply_to: string | null;
  refs: string | null;
  thread_id: string;
  subject: string;
  from_json: string;
  to_json: string;
  cc_json: string;
  bcc_json: string;
  date_ms: number;
  size: number | null;
  flags: string;
  seen: number;
  flagged: number;
  has_attachments: number;
  snippet: string | null;
}

export interface AttachmentMeta {
  name: string;
  mimeType: string;
  size: number;
}

export interface BodyRow {
  message: number;
  raw: Buffer;
  text_body: string | null;
  html_body: string | null;
  attachments: string;
}

/** A message header as the sync engine hands it over. */
export interface HeaderInput {
  uid: number;
  modseq: number | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  threadId: string;
  subject: string;
  from: Person | null;
  to: Person[];
  cc: Person[];
  bcc: Person[];
  dateMs: number;
  size: number | null;
  flags: string[];
  hasAttachments: boolean;
}

export const SYSTEM_FLAGS = new Set(['\\Seen', '\\Answered', '\\Flagged', '\\Deleted', '\\Draft', '\\Recent']);
export const keywordsOf = (flags: string[]) => flags.filter((f) => !f.startsWith('\\'));
const personText = (p: Person[]) => p.map((x) => (x.name ? `${x.name} ${x.email}` : x.email)).join(' ');

export class MailStore {
  private readonly s;

  constructor(readonly db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      folders: p('SELECT * FROM mail_folders WHERE account_id = ? ORDER BY path'),
      folder: p('SELECT * FROM mail_folders WHERE account_id = ? AND path = ?'),
      upsertFolder: p(`INSERT INTO mail_folders (account_id, path, name, delimiter, special_use, selectable) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (account_id, path) DO UPDATE SET name = excluded.name, delimiter = excluded.delimiter, special_use = excluded.special_use, selectable = excluded.selectable`),
      deleteFolder: p('DELETE FROM mail_folders WHERE account_id = ? AND path = ?'),
      cursor: p('UPDATE mail_folders SET uidvalidity = ?, uidnext = ?, highestmodseq = ?, synced_at = ? WHERE account_id = ? AND path = ?'),
      clearFolder: p('DELETE FROM mail_messages WHERE account_id = ? AND folder = ?'),
      upsert: p(`INSERT INTO mail_messages (account_id, folder, uidvalidity, uid, modseq, message_id, in_reply_to, refs, thread_id, subject,
          from_json, to_json, cc_json, bcc_json, date_ms, size, flags, seen, flagged, has_attachments)
        VALUES (@account, @folder, @uidvalidity, @uid, @modseq, @messageId, @inReplyTo, @refs, @threadId, @subject,
          @from, @to, @cc, @bcc, @dateMs, @size, @flags, @seen, @flagged, @hasAttachments)
        ON CONFLICT (account_id, folder, uid) DO UPDATE SET modseq = excluded.modseq, flags = excluded.flags, seen = excluded.seen, flagged = excluded.flagged
        RETURNING id, (SELECT count(*) FROM mail_keywords WHERE message = mail_messages.id) AS kw`),
      ftsInsert: p('INSERT INTO mail_fts (rowid, subject, sender, recipients, body) VALUES (?, ?, ?, ?, ?)'),
      ftsDelete: p('DELETE FROM mail_fts WHERE rowid = ?'),
      kwDelete: p('DELETE FROM mail_keywords WHERE message = ?'),
      kwInsert: p('INSERT OR IGNORE INTO mail_keywords (message, keyword) VALUES (?, ?)'),
      byUid: p('SELECT * FROM mail_messages WHERE account_id = ? AND folder = ? AND uid = ?'),
      setFlags: p('UPDATE mail_messages SET flags = ?, seen = ?, flagged = ?, modseq = coalesce(?, modseq) WHERE id = ?'),
      deleteUid: p('DELETE FROM mail_messages WHERE account_id = ? AND folder = ? AND uid = ?'),
      uids: p('SELECT uid FROM mail_messages WHERE account_id = ? AND folder = ?').pluck(),
      count: p('SELECT count(*) FROM mail_messages WHERE account_id = ? AND folder = ?').pluck(),
      get: p('SELECT * FROM mail_messages WHERE id = ?'),
      body: p('SELECT * FROM mail_bodies WHERE message = ?'),
      putBody: p('INSERT OR REPLACE INTO mail_bodies (message, raw, text_body, html_body, attachments) VALUES (?, ?, ?, ?, ?)'),
      snippet: p('UPDATE mail_messages SET snippet = ? WHERE id = ?'),
      labels: p(`SELECT name FROM mail_labels WHERE account_id = @a UNION
        SELECT DISTINCT k.keyword FROM mail_keywords k JOIN mail_messages m ON m.id = k.message WHERE m.account_id = @a ORDER BY 1`).pluck(),
      addLabel: p('INSERT OR IGNORE INTO mail_labels (account_id, name, created) VALUES (?, ?, ?)'),
      dropLabel: p('DELETE FROM mail_labels WHERE account_id = ? AND name = ?'),
      withKeyword: p(`SELECT m.folder, m.uid FROM mail_keywords k JOIN mail_messages m ON m.id = k.message WHERE m.account_id = ? AND k.keyword = ?`),
      renameFolderRows: p(`UPDATE mail_messages SET folder = @to || substr(folder, length(@from) + 1) WHERE account_id = @a AND (folder = @from OR folder LIKE @like ESCAPE '\\')`),
      renameFolders: p(`UPDATE mail_folders SET path = @to || substr(path, length(@from) + 1) WHERE account_id = @a AND (path = @from OR path LIKE @like ESCAPE '\\')`),
    };
  }

  folders(account: number): FolderRow[] {
    return this.s.folders.all(account) as FolderRow[];
  }

  folder(account: number, path: string): FolderRow | undefined {
    return this.s.folder.get(account, path) as FolderRow | undefined;
  }

  upsertFolder(account: number, f: { path: string; name: string; delimiter: string | null; specialUse: string | null; selectable: boolean }): void {
    this.s.upsertFolder.run(account, f.path, f.name, f.delimiter, f.specialUse, f.selectable ? 1 : 0);
  }

  deleteFolder(account: number, path: string): void {
    this.s.clearFolder.run(account, path);
    this.s.deleteFolder.run(account, path);
  }

  /** Moves cached rows and cursors of a renamed mailbox (and its children) to the new path. */
  renameFolder(account: number, from: string, to: string, delimiter: string | null): void {
    const like = `${(from + (delimiter ?? '/')).replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    this.s.renameFolderRows.run({ a: account, from, to, like });
    this.s.renameFolders.run({ a: account, from, to, like });
  }

  /** Moves UIDNEXT forward (never back) in the transaction that stored those messages. */
  advanceUidNext(account: number, path: string, uidnext: number): void {
    this.db.prepare('UPDATE mail_folders SET uidnext = max(coalesce(uidnext, 0), ?) WHERE account_id = ? AND path = ?').run(uidnext, account, path);
  }

  /** Records the HIGHESTMODSEQ whose changes were just applied, in the same transaction. */
  setModseq(account: number, path: string, highestmodseq: number | null): void {
    this.db.prepare('UPDATE mail_folders SET highestmodseq = ? WHERE account_id = ? AND path = ?').run(highestmodseq, account, path);
  }

  setCursor(account: number, path: string, c: { uidvalidity: number; uidnext: number; highestmodseq: number | null }): void {
    this.s.cursor.run(c.uidvalidity, c.uidnext, c.highestmodseq, new Date().toISOString(), account, path);
  }

  clearFolder(account: number, path: string): void {
    this.s.clearFolder.run(account, path);
  }

  /** Inserts or (for a known UID) refreshes the flags of one header; keeps the FTS row in step. */
  upsertHeader(account: number, folder: string, uidvalidity: number, h: HeaderInput): number {
    const row = this.s.upsert.get({
      account,
      folder,
      uidvalidity,
      uid: h.uid,
      modseq: h.modseq,
      messageId: h.messageId,
      inReplyTo: h.inReplyTo,
      refs: h.references.length ? h.references.join(' ') : null,
      threadId: h.threadId,
      subject: h.subject,
      from: JSON.stringify(h.from),
      to: JSON.stringify(h.to),
      cc: JSON.stringify(h.cc),
      bcc: JSON.stringify(h.bcc),
      dateMs: h.dateMs,
      size: h.size,
      flags: JSON.stringify(h.flags),
      seen: h.flags.includes('\\Seen') ? 1 : 0,
      flagged: h.flags.includes('\\Flagged') ? 1 : 0,
      hasAttachments: h.hasAttachments ? 1 : 0,
    }) as { id: number; kw: number };
    const kws = keywordsOf(h.flags);
    if (row.kw || kws.length) this.writeKeywords(row.id, kws);
    this.s.ftsDelete.run(row.id);
    this.s.ftsInsert.run(row.id, h.subject, h.from ? personText([h.from]) : '', personText([...h.to, ...h.cc]), '');
    return row.id;
  }

  private writeKeywords(id: number, kws: string[]): void {
    this.s.kwDelete.run(id);
    for (const k of kws) this.s.kwInsert.run(id, k);
  }

  /** Applies a flag change by UID; false when the message is not cached. */
  setFlags(account: number, folder: string, uid: number, flags: string[], modseq: number | null): boolean {
    const row = this.byUid(account, folder, uid);
    if (!row) return false;
    this.s.setFlags.run(JSON.stringify(flags), flags.includes('\\Seen') ? 1 : 0, flags.includes('\\Flagged') ? 1 : 0, modseq, row.id);
    this.writeKeywords(row.id, keywordsOf(flags));
    return true;
  }

  deleteUid(account: number, folder: string, uid: number): boolean {
    return this.s.deleteUid.run(account, folder, uid).changes > 0;
  }

  uids(account: number, folder: string): number[] {
    return this.s.uids.all(account, folder) as number[];
  }

  count(account: number, folder: string): number {
    return this.s.count.get(account, folder) as number;
  }

  /** Cached messages per folder of an account, in one query (the pass over every folder). */
  counts(account: number): { folder: string; n: number }[] {
    return this.db.prepare('SELECT folder, count(*) AS n FROM mail_messages WHERE account_id = ? GROUP BY folder').all(account) as { folder: string; n: number }[];
  }

  byUid(account: number, folder: string, uid: number): MessageRow | undefined {
    return this.s.byUid.get(account, folder, uid) as MessageRow | undefined;
  }

  get(id: number): MessageRow | undefined {
    return this.s.get.get(id) as MessageRow | undefined;
  }

  /** A stored copy of the message with this Message-ID header, the one in Sent first. */
  byMessageId(account: number, messageId: string): MessageRow | undefined {
    return this.db
      .prepare(
        `SELECT m.* FROM mail_messages m LEFT JOIN mail_folders f ON f.account_id = m.account_id AND f.path = m.folder
          WHERE m.account_id = ? AND m.message_id = ? ORDER BY (f.special_use = '\\Sent') DESC, m.id LIMIT 1`,
      )
      .get(account, messageId) as MessageRow | undefined;
  }

  body(id: number): BodyRow | undefined {
    return this.s.body.get(id) as BodyRow | undefined;
  }

  /** Caches a parsed body and adds its text to the search index. */
  putBody(row: MessageRow, b: { raw: Buffer; text: string | null; html: string | null; attachments: AttachmentMeta[]; snippet: string }): void {
    this.s.putBody.run(row.id, b.raw, b.text, b.html, JSON.stringify(b.attachments));
    this.s.snippet.run(b.snippet, row.id);
    const from = JSON.parse(row.from_json) as Person | null;
    this.s.ftsDelete.run(row.id);
    this.s.ftsInsert.run(row.id, row.subject, from ? personText([from]) : '', personText([...JSON.parse(row.to_json), ...JSON.parse(row.cc_json)]), b.text ?? '');
  }

  /**
   * Caches the source of a message that cannot be parsed: `note` (why) stands in for its text,
   * it has no attachments, and its search row keeps the headers only. Being cached, it is not
   * fetched again by the background prefetch.
   */
  putUnreadableBody(row: MessageRow, raw: Buffer, note: string): void {
    this.s.putBody.run(row.id, raw, note, null, '[]');
    this.s.snippet.run(note.slice(0, 200), row.id);
  }

  /** Where the Sent copy of outbox entry `id` landed, once it did. */
  outboxCopy(account: number, id: number): { folder: string; uidvalidity: number; uid: number } | undefined {
    const r = this.db
      .prepare('SELECT copy_folder AS folder, copy_uidvalidity AS uidvalidity, copy_uid AS uid FROM mail_outbox WHERE id = ? AND account_id = ? AND copy_uid IS NOT NULL')
      .get(id, account) as { folder: string; uidvalidity: number; uid: number } | undefined;
    return r;
  }

  labels(account: number): string[] {
    return this.s.labels.all({ a: account }) as string[];
  }

  addLabel(account: number, name: string): void {
    this.s.addLabel.run(account, name, new Date().toISOString());
  }

  dropLabel(account: number, name: string): void {
    this.s.dropLabel.run(account, name);
  }

  withKeyword(account: number, keyword: string): { folder: string; uid: number }[] {
    return this.s.withKeyword.all(account, keyword) as { folder: string; uid: number }[];
  }
}
