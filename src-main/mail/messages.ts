/**
 * Messages of spec 2 ("List messages", "Search", "Retrieve/Update a message"), the mailbox UI's
 * flags, moves and deletes, address suggestions, and the message files (the raw message and its
 * attachments) that storage serves. Answered from the cache the engine keeps current.
 */
import { Readable } from 'node:stream';
import type { Db } from '../cache/db';
import type { MailFile, MailMessage, MailPage, MailPerson } from '../contract/mail';
import { invalid, notFound } from '../errors';
import { wrapText } from './body';
import type { MailEngine } from './engine';
import type { MailIds } from './ids';
import { checkLabelName } from './labels';
import { keywordsOf, type AttachmentMeta, type BodyRow, type MailStore, type MessageRow, type Person } from './store';

/** Query of spec 2 "List messages", as the REST layer receives it. */
export interface ListQuery {
  page?: string;
  page_size?: number | string;
  folder_id?: string;
  thread_id?: string;
  labels?: string | string[];
  after?: string;
  before?: string;
  /** Fetch missing bodies of the page (REST: yes, the UI list: no). Default true. */
  bodies?: boolean;
}

export interface SearchQuery {
  q?: string;
  page?: string;
  page_size?: number | string;
  bodies?: boolean;
}

export interface MailFileContent {
  file: MailFile;
  stream: Readable;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_WINDOW_MS = 3 * 24 * 3600 * 1000;

const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

export function parsePageSize(v: unknown): number {
  if (v === undefined || v === null || v === '') return DEFAULT_PAGE_SIZE;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) throw invalid(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}.`);
  return n;
}

export function parseDate(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ms = typeof v === 'string' && ISO.test(v.trim()) ? Date.parse(v.trim()) : NaN;
  if (!Number.isFinite(ms)) throw invalid(`${name} must be an ISO 8601 date or date-time.`);
  return ms;
}

/** Quotes each term for FTS5 (no query syntax injection); `term*` keeps a prefix search. */
export function ftsQuery(q: string): string {
  const terms = q
    .split(/\s+/)
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const prefix = t.endsWith('*');
      const word = (prefix ? t.slice(0, -1) : t).replace(/"/g, '""');
      return word ? `"${word}"${prefix ? '*' : ''}` : '';
    })
    .filter(Boolean);
  return terms.join(' ');
}

export class MailMessages {
  constructor(
    private readonly db: Db,
    private readonly store: MailStore,
    private readonly ids: MailIds,
    private readonly engine: MailEngine,
  ) {}

  /** spec 2 "List messages": newest first, keyset paging, filters all applied in SQL. */
  async list(account: number, q: ListQuery = {}): Promise<MailPage> {
    const pageSize = parsePageSize(q.page_size);
    const before = parseDate(q.before, 'before') ?? Date.now();
    const after = parseDate(q.after, 'after') ?? before - DEFAULT_WINDOW_MS;
    const labels = q.labels === undefined ? [] : Array.isArray(q.labels) ? q.labels : [q.labels];
    const { cursor, offset } = listPage(q.page, pageSize);
    await this.engine.ready(account);
    const where = ['m.account_id = @account', 'm.date_ms >= @after', 'm.date_ms < @before'];
    const params: Record<string, unknown> = { account, after, before, limit: pageSize + 1 };
    if (q.folder_id) {
      where.push('m.folder = @folder');
      params.folder = this.ids.folderPath(account, q.folder_id);
    }
    if (q.thread_id) {
      where.push('m.thread_id = @thread');
      params.thread = q.thread_id;
    }
    labels.forEach((name, i) => {
      where.push(`EXISTS (SELECT 1 FROM mail_keywords k WHERE k.message = m.id AND k.keyword = @l${i})`);
      params[`l${i}`] = name;
    });
    // `total` counts the whole filtered list, so it is taken before the cursor narrows it.
    const { total } = this.db.prepare(`SELECT COUNT(*) AS total FROM mail_messages m WHERE ${where.join(' AND ')}`).get(params) as { total: number };
    params.offset = offset;
    if (cursor) {
      where.push('(m.date_ms, m.uid, m.id) < (@cd, @cu, @ci)');
      params.cd = cursor[0];
      params.cu = cursor[1];
      params.ci = cursor[2];
    }
    const rows = this.db
      .prepare(`SELECT m.* FROM mail_messages m WHERE ${where.join(' AND ')} ORDER BY m.date_ms DESC, m.uid DESC, m.id DESC LIMIT @limit OFFSET @offset`)
      .all(params) as MessageRow[];
    const more = rows.length > pageSize;
    const page = rows.slice(0, pageSize);
    const last = page[page.length - 1];
    const next = more && last ? Buffer.from(JSON.stringify([last.date_ms, last.uid, last.id])).toString('base64url') : null;
    return { objects: await this.toMessages(account, page, q.bodies ?? true), page: q.page ?? '', nextPage: next, total };
  }

  /**
   * spec 2 "Search": the spec says IMAP cannot search; Tributary can, from its local FTS5 index
   * (subject, from, to/cc, and the text of every body fetched so far). Terms are ANDed; `term*`
   * is a prefix. Newest first; `page` is an offset token.
   */
  async search(account: number, q: SearchQuery): Promise<MailPage> {
    if (typeof q.q !== 'string' || !q.q.trim()) throw invalid('q is required.');
    const pageSize = parsePageSize(q.page_size);
    let offset = 0;
    if (q.page && PAGE_NUMBER.test(q.page)) {
      offset = (Number(q.page) - 1) * pageSize;
    } else if (q.page) {
      if (!/^o\d{1,9}$/.test(q.page)) throw invalid('page is not a page identifier returned as next_page.');
      offset = Number(q.page.slice(1));
    }
    const match = ftsQuery(q.q);
    if (!match) throw invalid('q has no search terms.');
    await this.engine.ready(account);
    const rows = this.searchRows(account, match, pageSize + 1, offset);
    const { total } = this.db
      .prepare('SELECT COUNT(*) AS total FROM mail_messages m WHERE m.id IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH ?) AND m.account_id = ?')
      .get(match, account) as { total: number };
    const more = rows.length > pageSize;
    const page = rows.slice(0, pageSize);
    return { objects: await this.toMessages(account, page, q.bodies ?? true), page: q.page ?? '', nextPage: more ? `o${offset + pageSize}` : null, total };
  }

  /** The FTS query itself (also what the benchmark times). */
  searchRows(account: number, match: string, limit: number, offset = 0): MessageRow[] {
    return this.db
      .prepare(
        `SELECT m.* FROM mail_messages m WHERE m.id IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH ?)
          AND m.account_id = ? ORDER BY m.date_ms DESC, m.uid DESC, m.id DESC LIMIT ? OFFSET ?`,
      )
      .all(match, account, limit, offset) as MessageRow[];
  }

  /** spec 2 "Retrieve a message": with its body (fetched once, then cached). */
  async get(account: number, id: string): Promise<MailMessage> {
    await this.engine.ready(account);
    const row = this.ids.messageRow(account, id);
    return (await this.toMessages(account, [row], true))[0]!;
  }

  /** spec 2 "Update a message": `label_names` replaces the message's IMAP keywords. */
  async update(account: number, id: string, patch: { label_names?: unknown }): Promise<MailMessage> {
    const sync = await this.engine.ready(account);
    const row = this.ids.messageRow(account, id);
    if (patch.label_names !== undefined) {
      if (!Array.isArray(patch.label_names) || !patch.label_names.every((n) => typeof n === 'string')) throw invalid('label_names must be an array of strings.');
      const wanted = [...new Set(patch.label_names as string[])];
      for (const n of wanted) checkLabelName(n);
      const current = keywordsOf(JSON.parse(row.flags) as string[]);
      const add = wanted.filter((k) => !current.includes(k));
      const remove = current.filter((k) => !wanted.includes(k));
      await sync.write(row.folder, async (c) => {
        if (add.length) await c.messageFlagsAdd(String(row.uid), add, { uid: true });
        if (remove.length) await c.messageFlagsRemove(String(row.uid), remove, { uid: true });
      });
    }
    return this.get(account, id);
  }

  /** Marks read/unread and flagged/unflagged (the mailbox UI). */
  async setFlags(account: number, id: string, f: { seen?: boolean; flagged?: boolean }): Promise<MailMessage> {
    const sync = await this.engine.ready(account);
    const row = this.ids.messageRow(account, id);
    await sync.write(row.folder, async (c) => {
      for (const [flag, on] of [['\\Seen', f.seen], ['\\Flagged', f.flagged]] as const) {
        if (on === true) await c.messageFlagsAdd(String(row.uid), [flag], { uid: true });
        if (on === false) await c.messageFlagsRemove(String(row.uid), [flag], { uid: true });
      }
    });
    return this.get(account, id);
  }

  async move(account: number, id: string, folderId: string): Promise<void> {
    const sync = await this.engine.ready(account);
    const row = this.ids.messageRow(account, id);
    const dest = this.ids.folderPath(account, folderId);
    if (dest === row.folder) return;
    await sync.write(row.folder, (c) => c.messageMove(String(row.uid), dest, { uid: true }));
    await sync.syncFolder(dest);
  }

  /** Moves to Trash, or deletes for good when in Trash already (or the account has none). */
  async delete(account: number, id: string): Promise<void> {
    const sync = await this.engine.ready(account);
    const row = this.ids.messageRow(account, id);
    const trash = this.store.folders(account).find((f) => f.special_use === '\\Trash');
    if (trash && trash.path !== row.folder) return this.move(account, id, this.ids.folder(account, trash.path));
    await sync.write(row.folder, (c) => c.messageDelete(String(row.uid), { uid: true }));
  }

  /** Address autocomplete from the cache (senders and recipients). */
  contacts(account: number, prefix: string, limit = 10): MailPerson[] {
    const p = prefix.trim().toLowerCase();
    if (!p) return [];
    const rows = this.db
      .prepare(`SELECT from_json, to_json, cc_json FROM mail_messages WHERE account_id = @a AND (lower(from_json) LIKE @p OR lower(to_json) LIKE @p OR lower(cc_json) LIKE @p) ORDER BY date_ms DESC LIMIT 500`)
      .all({ a: account, p: `%${p.replace(/[%_]/g, '')}%` }) as { from_json: string; to_json: string; cc_json: string }[];
    const seen = new Map<string, MailPerson>();
    for (const r of rows) {
      for (const person of [JSON.parse(r.from_json), ...JSON.parse(r.to_json), ...JSON.parse(r.cc_json)] as (Person | null)[]) {
        if (!person) continue;
        const key = person.email.toLowerCase();
        if (!seen.has(key) && (key.startsWith(p) || (person.name ?? '').toLowerCase().split(/\s+/).some((w) => w.startsWith(p)))) seen.set(key, person);
        if (seen.size >= limit) return [...seen.values()];
      }
    }
    return [...seen.values()];
  }

  async toMessages(account: number, rows: MessageRow[], withBodies: boolean): Promise<MailMessage[]> {
    if (withBodies) await this.engine.ensureBodies(account, rows);
    return rows.map((r) => this.toMessage(account, this.store.get(r.id) ?? r, withBodies ? this.store.body(r.id) : undefined));
  }

  private toMessage(account: number, r: MessageRow, body: BodyRow | undefined): MailMessage {
    const flags = JSON.parse(r.flags) as string[];
    const attachments = body ? (JSON.parse(body.attachments) as AttachmentMeta[]) : null;
    return {
      id: this.ids.message(account, r),
      account,
      created: new Date(r.date_ms).toISOString(),
      threadId: r.thread_id,
      folderId: this.ids.folder(account, r.folder),
      folder: r.folder,
      labels: keywordsOf(flags).map((name) => ({ id: this.ids.label(account, name), name })),
      subject: r.subject,
      from: JSON.parse(r.from_json) as Person | null,
      to: JSON.parse(r.to_json) as Person[],
      cc: JSON.parse(r.cc_json) as Person[],
      bcc: JSON.parse(r.bcc_json) as Person[],
      seen: r.seen === 1,
      flagged: r.flagged === 1,
      answered: flags.includes('\\Answered'),
      hasAttachments: attachments ? attachments.length > 0 : r.has_attachments === 1,
      size: r.size,
      messageId: r.message_id,
      snippet: r.snippet,
      textBody: body ? body.text_body : null,
      htmlBody: body ? (body.html_body ?? wrapText(body.text_body ?? '')) : null,
      rfc822: body ? { id: this.ids.raw(account, r), name: 'raw_content.rfc822', mimeType: 'message/rfc822', size: body.raw.length } : null,
      attachments: attachments ? attachments.map((a, i) => ({ id: this.ids.attachment(account, r, i), name: a.name, mimeType: a.mimeType, size: a.size })) : null,
      raw: { folder: r.folder, uid: r.uid, uidvalidity: r.uidvalidity, modseq: r.modseq, flags, message_id: r.message_id, in_reply_to: r.in_reply_to, references: r.refs ? r.refs.split(' ') : [] },
    };
  }

  /** True when `fileId` names a file inside a message of this account (rfc822 or attachment). */
  isMailFile(account: number, fileId: string): boolean {
    return this.ids.file(account, fileId) !== null;
  }

  /**
   * The raw message or an attachment, by the id in `rfc822` / `attachments`: what the storage
   * download endpoint serves for mail accounts. Attachments are decoded from the cached source,
   * byte for byte what the sender attached.
   */
  async openFile(account: number, fileId: string): Promise<MailFileContent> {
    const ref = this.ids.file(account, fileId);
    if (!ref) throw notFound('The file');
    await this.engine.ready(account);
    const row = this.ids.row(account, ref.message);
    if (!row) throw notFound('The file');
    await this.engine.ensureBodies(account, [row]);
    const body = this.store.body(row.id);
    if (!body) throw notFound('The file');
    if (ref.kind === 'r') {
      return { file: { id: fileId, name: 'raw_content.rfc822', mimeType: 'message/rfc822', size: body.raw.length }, stream: Readable.from([body.raw]) };
    }
    const { simpleParser } = await import('mailparser'); // loaded with the first message parsed
    const parsed = await simpleParser(body.raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
    const a = parsed.attachments[ref.index];
    if (!a) throw notFound('The file');
    const meta = (JSON.parse(body.attachments) as AttachmentMeta[])[ref.index];
    return { file: { id: fileId, name: meta?.name ?? a.filename ?? 'attachment', mimeType: a.contentType, size: a.content.length }, stream: Readable.from([a.content]) };
  }
}

/** A page number (`1`, `2`, …) as the other paged lists take it, besides the `next_page` tokens. */
const PAGE_NUMBER = /^[1-9]\d{0,8}$/;

/** `page` of "List messages": a page number (an offset) or a `next_page` token (a keyset cursor). */
function listPage(page: string | undefined, pageSize: number): { cursor: [number, number, number] | null; offset: number } {
  if (page && PAGE_NUMBER.test(page)) return { cursor: null, offset: (Number(page) - 1) * pageSize };
  return { cursor: decodePage(page), offset: 0 };
}

function decodePage(page: string | undefined): [number, number, number] | null {
  if (!page) return null;
  try {
    const v = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && v.every((x) => Number.isSafeInteger(x))) return v as [number, number, number];
  } catch {
    /* fall through */
  }
  throw invalid('page is not a page identifier returned as next_page.');
}
