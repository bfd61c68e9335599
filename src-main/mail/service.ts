/**
 * MailService: spec 2 (email) for mail accounts, answered from the local cache that MailSync
 * keeps current. Each spec 2 endpoint is one method here plus one serializer (rest/shapes/mail.ts).
 *
 * Ids are opaque and authenticated (IdCodec, same key as storage ids), each carrying the
 * account and what it names: `f` folder path; `m` folder, UIDVALIDITY and UID of a message;
 * `l` a label (IMAP keyword); `r` the raw message and `a` an attachment (by index) of a
 * message: the last two are the "storage file objects" of spec 2, served by `openFile`.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Db } from '../cache/db';
import type { MailConnector } from '../connectors/imap/connector';
import type { MailFile, MailFolder, MailLabel, MailMessage, MailPage, MailPerson } from '../contract/mail';
import { ServiceError, invalid, notFound } from '../errors';
import { IdCodec } from '../ids';
import type { Keyring } from '../secrets';
import type { AccountsService } from '../services/accounts';
import type { EventBus } from '../services/events';
import { MailStore, keywordsOf, type AttachmentMeta, type BodyRow, type FolderRow, type MessageRow, type Person } from './store';
import { MailSync, messageIds, type SyncStats } from './sync';
import { Tracker, instrumentHtml, type TrackingHit } from './tracking';

export interface MailDeps {
  db: Db;
  accounts: AccountsService;
  events: EventBus;
  keyring: Keyring;
  /** Public base URL of the tracking endpoints (`{base}/t/o/…`, `{base}/t/c/…`); null when unset. */
  trackingBaseUrl?: () => string | null;
  /** IDLE watchers for live updates (default true; off for batch jobs and the benchmark). */
  live?: boolean;
  /**
   * Bodies of the newest messages fetched in the background after each sync, so that their
   * text is searchable before anyone opens them (default 500; 0 = bodies only on demand).
   */
  prefetchBodies?: number;
  /**
   * The activity log's hook (ActivityService.recordMailChanges): per-message changes of each
   * incremental sync step, called inside the transaction that stores them.
   */
  recordChanges?: (account: number, changes: MailChangeRecord[]) => void;
}

/** A message change as the activity engine takes it (src-main/activity MailChange). */
export interface MailChangeRecord {
  type: 'add' | 'update' | 'delete';
  folder: string;
  uid: number;
  id?: string;
  subject?: string;
  size?: number;
  date?: string;
}

/** Messages larger than this are left for on-demand fetching by the background prefetch. */
const PREFETCH_MAX_SIZE = 256 * 1024;
const PREFETCH_CHUNK = 50;

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

export interface SendInput {
  to: MailPerson[] | { email: string; name?: string | null }[];
  subject: string;
  cc?: { email: string; name?: string | null }[];
  bcc?: { email: string; name?: string | null }[];
  text_body?: string;
  body?: string;
  /** Id of the message this one answers (spec 2 `reply_to`). */
  reply_to?: string;
  tracking?: { opens?: boolean; clicks?: boolean; subscription_id?: string };
}

export interface SendAttachment {
  name: string;
  content: Readable | Buffer;
  mimeType?: string;
}

export interface MailFileContent {
  file: MailFile;
  stream: Readable;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_WINDOW_MS = 3 * 24 * 3600 * 1000;

const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;
/** IMAP keyword = atom (RFC 3501): no controls, spaces, or ( ) { % * " \ ]. */
// oxlint-disable-next-line no-control-regex -- excluding control characters is the point
const KEYWORD = /^[^\x00-\x20\x7f(){%*"\\\]]{1,200}$/;
const EMAIL = /^[^\s@<>",;]+@[^\s@<>",;]+$/;

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

const specialOf = (su: string | null, path: string): MailFolder['specialUse'] => {
  if (path.toUpperCase() === 'INBOX') return 'inbox';
  const map: Record<string, MailFolder['specialUse']> = { '\\Sent': 'sent', '\\Trash': 'trash', '\\Drafts': 'drafts', '\\Junk': 'junk', '\\Archive': 'archive', '\\Flagged': 'flagged', '\\All': 'all' };
  return su ? (map[su] ?? null) : null;
};

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
export const wrapText = (text: string) => `<pre>${escapeHtml(text)}</pre>`;

function snippetOf(text: string | null, html: string | null): string {
  const src = text ?? (html ? html.replace(/<(style|script)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ').replace(/&nbsp;/g, ' ') : '');
  return src.replace(/\s+/g, ' ').trim().slice(0, 200);
}

async function readAll(content: Readable | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(content)) return content;
  const chunks: Buffer[] = [];
  for await (const c of content) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
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

interface AccountState {
  connector: MailConnector;
  sync: MailSync;
  started: Promise<void> | null;
}

export class MailService {
  readonly store: MailStore;
  readonly tracker: Tracker;
  private readonly ids: IdCodec;
  private readonly states = new Map<number, Promise<AccountState>>();
  private readonly offAccounts: () => void;

  constructor(private readonly deps: MailDeps) {
    this.store = new MailStore(deps.db);
    this.ids = new IdCodec(deps.keyring.key('ids'));
    this.tracker = new Tracker(deps.db, deps.keyring.key('tracking'), (e) =>
      deps.events.emit('mail.tracked', { id: e.id, account: e.account, messageId: e.messageId, kind: e.kind, url: e.url, text: e.text, subscriptionId: e.subscriptionId, at: e.at }),
    );
    // A changed or removed account gets a new connector: drop our sync state with the old one.
    this.offAccounts = deps.events.on('accounts.changed', () => void this.reconcile());
  }

  // ---- ids ---------------------------------------------------------------------------------

  folderId(account: number, path: string): string {
    return this.ids.encode(account, `f\n${path}`);
  }

  private decode(account: number, id: string, kind: string, what: string): string[] {
    let plain: string;
    try {
      plain = this.ids.decode(account, id);
    } catch {
      throw notFound(what);
    }
    const parts = plain.split('\n');
    if (parts[0] !== kind) throw notFound(what);
    return parts.slice(1);
  }

  private folderPath(account: number, id: string): string {
    const [path] = this.decode(account, id, 'f', 'The folder');
    if (!this.store.folder(account, path!)) throw notFound('The folder');
    return path!;
  }

  private messageRow(account: number, id: string): MessageRow {
    const [folder, uidvalidity, uid] = this.decode(account, id, 'm', 'The message');
    const row = this.store.byUid(account, folder!, Number(uid));
    if (!row || row.uidvalidity !== Number(uidvalidity)) throw notFound('The message');
    return row;
  }

  private messageKey(row: MessageRow): string {
    return `${row.folder}\n${row.uidvalidity}\n${row.uid}`;
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  private state(account: number): Promise<AccountState> {
    let p = this.states.get(account);
    if (!p) {
      p = this.deps.accounts.instance(account, 'mail').then((connector) => ({
        connector,
        sync: new MailSync(
          this.store,
          account,
          connector,
          (c) => {
            const folder = c.folder === null ? null : this.folderId(account, c.folder);
            this.deps.events.emit('mail.changed', { account, folder, kind: c.kind });
            if (c.messages && c.folder !== null && folder) {
              const ids = (uids: number[]) => uids.map((uid) => this.ids.encode(account, `m\n${c.folder}\n${c.messages!.uidvalidity}\n${uid}`));
              this.deps.events.emit('mail.messages', { account, folder, added: ids(c.messages.added), updated: ids(c.messages.updated), removed: ids(c.messages.removed) });
            }
            if (c.kind === 'messages') this.schedulePrefetch(account);
          },
          this.deps.recordChanges
            ? (path, uidvalidity, changes) =>
                this.deps.recordChanges!(account, changes.map((ch) => ({ ...ch, folder: path, id: this.ids.encode(account, `m\n${path}\n${uidvalidity}\n${ch.uid}`) })))
            : undefined,
        ),
        started: null,
      }));
      p.catch(() => this.states.delete(account));
      this.states.set(account, p);
    }
    return p;
  }

  /**
   * The account's sync engine, started on first use (full sync, then IDLE on the inbox).
   * With a cache already there, answers come from it at once while sync catches up.
   */
  private async ready(account: number): Promise<MailSync> {
    const s = await this.state(account);
    if (!s.started) {
      s.started = (async () => {
        await s.sync.syncAll();
        if (this.deps.live !== false) await s.sync.watch({ inbox: this.inboxPath(account) });
      })();
      s.started.catch(() => (s.started = null));
    }
    if (!this.store.folders(account).length) await s.started;
    else s.started.catch(() => {});
    return s.sync;
  }

  private readonly prefetchTimers = new Map<number, NodeJS.Timeout>();
  private readonly prefetching = new Set<number>();

  /** Debounced: a burst of sync steps leads to one prefetch pass. */
  private schedulePrefetch(account: number): void {
    if ((this.deps.prefetchBodies ?? 500) <= 0 || this.prefetchTimers.has(account)) return;
    this.prefetchTimers.set(
      account,
      setTimeout(() => {
        this.prefetchTimers.delete(account);
        void this.prefetch(account).catch(() => {});
      }, 300),
    );
  }

  /**
   * Fetches the bodies of the newest uncached messages (up to `prefetchBodies`, small ones only)
   * in chunks, each its own turn in the account's writer queue so user actions interleave.
   */
  async prefetch(account: number): Promise<number> {
    const limit = this.deps.prefetchBodies ?? 500;
    if (limit <= 0 || this.prefetching.has(account) || !this.states.has(account)) return 0;
    this.prefetching.add(account);
    try {
      const rows = this.deps.db
        .prepare(
          `SELECT m.* FROM mail_messages m WHERE m.account_id = ? AND coalesce(m.size, 0) <= ?
            AND NOT EXISTS (SELECT 1 FROM mail_bodies b WHERE b.message = m.id)
            AND m.id IN (SELECT id FROM mail_messages WHERE account_id = ? ORDER BY date_ms DESC, uid DESC, id DESC LIMIT ?)
            ORDER BY m.date_ms DESC, m.uid DESC, m.id DESC`,
        )
        .all(account, PREFETCH_MAX_SIZE, account, limit) as MessageRow[];
      for (let i = 0; i < rows.length; i += PREFETCH_CHUNK) {
        if (!this.states.has(account)) break;
        await this.ensureBodies(account, rows.slice(i, i + PREFETCH_CHUNK));
      }
      return rows.length;
    } finally {
      this.prefetching.delete(account);
    }
  }

  private inboxPath(account: number): string {
    return this.store.folders(account).find((f) => f.path.toUpperCase() === 'INBOX')?.path ?? 'INBOX';
  }

  /** Syncs now: every folder, or one. Resolves when the cache matches the server. */
  async sync(account: number, folderId?: string): Promise<SyncStats | void> {
    const sync = await this.ready(account);
    const s = await this.state(account);
    await s.started?.catch(() => {});
    if (folderId) return sync.syncFolder(this.folderPath(account, folderId));
    await sync.syncAll();
  }

  /** IDLE follows the folder the user has open, besides the inbox. */
  async openFolder(account: number, folderId: string | null): Promise<void> {
    const sync = await this.ready(account);
    if (this.deps.live === false) return;
    await sync.watch({ inbox: this.inboxPath(account), open: folderId ? this.folderPath(account, folderId) : null });
  }

  /** The folders IDLE currently watches (paths), for diagnostics and tests. */
  async watching(account: number): Promise<string[]> {
    return (await this.ready(account)).watching;
  }

  private async reconcile(): Promise<void> {
    for (const [account, p] of this.states) {
      const s = await p.catch(() => null);
      const current = await this.deps.accounts.instance(account, 'mail').catch(() => null);
      if (!s || current !== s.connector) {
        this.states.delete(account);
        await s?.sync.close();
      }
    }
  }

  async close(): Promise<void> {
    this.offAccounts();
    for (const t of this.prefetchTimers.values()) clearTimeout(t);
    this.prefetchTimers.clear();
    const all = [...this.states.values()];
    this.states.clear();
    await Promise.all(all.map((p) => p.then((s) => s.sync.close()).catch(() => {})));
  }

  // ---- messages ------------------------------------------------------------------------------

  /** spec 2 "List messages": newest first, keyset paging, filters all applied in SQL. */
  async listMessages(account: number, q: ListQuery = {}): Promise<MailPage> {
    const pageSize = parsePageSize(q.page_size);
    const before = parseDate(q.before, 'before') ?? Date.now();
    const after = parseDate(q.after, 'after') ?? before - DEFAULT_WINDOW_MS;
    const labels = q.labels === undefined ? [] : Array.isArray(q.labels) ? q.labels : [q.labels];
    const cursor = this.decodePage(q.page);
    await this.ready(account);
    const where = ['m.account_id = @account', 'm.date_ms >= @after', 'm.date_ms < @before'];
    const params: Record<string, unknown> = { account, after, before, limit: pageSize + 1 };
    if (q.folder_id) {
      where.push('m.folder = @folder');
      params.folder = this.folderPath(account, q.folder_id);
    }
    if (q.thread_id) {
      where.push('m.thread_id = @thread');
      params.thread = q.thread_id;
    }
    labels.forEach((name, i) => {
      where.push(`EXISTS (SELECT 1 FROM mail_keywords k WHERE k.message = m.id AND k.keyword = @l${i})`);
      params[`l${i}`] = name;
    });
    if (cursor) {
      where.push('(m.date_ms, m.uid, m.id) < (@cd, @cu, @ci)');
      params.cd = cursor[0];
      params.cu = cursor[1];
      params.ci = cursor[2];
    }
    const rows = this.deps.db
      .prepare(`SELECT m.* FROM mail_messages m WHERE ${where.join(' AND ')} ORDER BY m.date_ms DESC, m.uid DESC, m.id DESC LIMIT @limit`)
      .all(params) as MessageRow[];
    const more = rows.length > pageSize;
    const page = rows.slice(0, pageSize);
    const last = page[page.length - 1];
    const next = more && last ? Buffer.from(JSON.stringify([last.date_ms, last.uid, last.id])).toString('base64url') : null;
    return { objects: await this.toMessages(account, page, q.bodies ?? true), page: q.page ?? '', nextPage: next };
  }

  private decodePage(page: string | undefined): [number, number, number] | null {
    if (!page) return null;
    try {
      const v = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as unknown;
      if (Array.isArray(v) && v.length === 3 && v.every((x) => Number.isSafeInteger(x))) return v as [number, number, number];
    } catch {
      /* fall through */
    }
    throw invalid('page is not a page identifier returned as next_page.');
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
    if (q.page) {
      if (!/^o\d{1,9}$/.test(q.page)) throw invalid('page is not a page identifier returned as next_page.');
      offset = Number(q.page.slice(1));
    }
    const match = ftsQuery(q.q);
    if (!match) throw invalid('q has no search terms.');
    await this.ready(account);
    const rows = this.searchRows(account, match, pageSize + 1, offset);
    const more = rows.length > pageSize;
    const page = rows.slice(0, pageSize);
    return { objects: await this.toMessages(account, page, q.bodies ?? true), page: q.page ?? '', nextPage: more ? `o${offset + pageSize}` : null };
  }

  /** The FTS query itself (also what the benchmark times). */
  searchRows(account: number, match: string, limit: number, offset = 0): MessageRow[] {
    return this.deps.db
      .prepare(
        `SELECT m.* FROM mail_messages m WHERE m.id IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH ?)
          AND m.account_id = ? ORDER BY m.date_ms DESC, m.uid DESC, m.id DESC LIMIT ? OFFSET ?`,
      )
      .all(match, account, limit, offset) as MessageRow[];
  }

  /** spec 2 "Retrieve a message": with its body (fetched once, then cached). */
  async getMessage(account: number, id: string): Promise<MailMessage> {
    await this.ready(account);
    const row = this.messageRow(account, id);
    return (await this.toMessages(account, [row], true))[0]!;
  }

  /** spec 2 "Update a message": `label_names` replaces the message's IMAP keywords. */
  async updateMessage(account: number, id: string, patch: { label_names?: unknown }): Promise<MailMessage> {
    const sync = await this.ready(account);
    const row = this.messageRow(account, id);
    if (patch.label_names !== undefined) {
      if (!Array.isArray(patch.label_names) || !patch.label_names.every((n) => typeof n === 'string')) throw invalid('label_names must be an array of strings.');
      const wanted = [...new Set(patch.label_names as string[])];
      for (const n of wanted) this.checkLabelName(n);
      const current = keywordsOf(JSON.parse(row.flags) as string[]);
      const add = wanted.filter((k) => !current.includes(k));
      const remove = current.filter((k) => !wanted.includes(k));
      await sync.write(row.folder, async (c) => {
        if (add.length) await c.messageFlagsAdd(String(row.uid), add, { uid: true });
        if (remove.length) await c.messageFlagsRemove(String(row.uid), remove, { uid: true });
      });
    }
    return this.getMessage(account, id);
  }

  /** Marks read/unread and flagged/unflagged (the mailbox UI). */
  async setFlags(account: number, id: string, f: { seen?: boolean; flagged?: boolean }): Promise<MailMessage> {
    const sync = await this.ready(account);
    const row = this.messageRow(account, id);
    await sync.write(row.folder, async (c) => {
      for (const [flag, on] of [['\\Seen', f.seen], ['\\Flagged', f.flagged]] as const) {
        if (on === true) await c.messageFlagsAdd(String(row.uid), [flag], { uid: true });
        if (on === false) await c.messageFlagsRemove(String(row.uid), [flag], { uid: true });
      }
    });
    return this.getMessage(account, id);
  }

  async move(account: number, id: string, folderId: string): Promise<void> {
    const sync = await this.ready(account);
    const row = this.messageRow(account, id);
    const dest = this.folderPath(account, folderId);
    if (dest === row.folder) return;
    await sync.write(row.folder, (c) => c.messageMove(String(row.uid), dest, { uid: true }));
    await sync.syncFolder(dest);
  }

  /** Moves to Trash, or deletes for good when in Trash already (or the account has none). */
  async deleteMessage(account: number, id: string): Promise<void> {
    const sync = await this.ready(account);
    const row = this.messageRow(account, id);
    const trash = this.store.folders(account).find((f) => f.special_use === '\\Trash');
    if (trash && trash.path !== row.folder) return this.move(account, id, this.folderId(account, trash.path));
    await sync.write(row.folder, (c) => c.messageDelete(String(row.uid), { uid: true }));
  }

  /** Address autocomplete from the cache (senders and recipients). */
  contacts(account: number, prefix: string, limit = 10): MailPerson[] {
    const p = prefix.trim().toLowerCase();
    if (!p) return [];
    const rows = this.deps.db
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

  // ---- bodies and files ----------------------------------------------------------------------

  /** Fetches and caches the bodies missing among `rows`: one UID FETCH per folder. */
  private async ensureBodies(account: number, rows: MessageRow[]): Promise<void> {
    if (!rows.length) return;
    const have = new Set(
      this.deps.db
        .prepare(`SELECT message FROM mail_bodies WHERE message IN (${rows.map(() => '?').join(',')})`)
        .pluck()
        .all(...rows.map((r) => r.id)) as number[],
    );
    const missing = rows.filter((r) => !have.has(r.id));
    if (!missing.length) return;
    const byFolder = new Map<string, MessageRow[]>();
    for (const r of missing) byFolder.set(r.folder, [...(byFolder.get(r.folder) ?? []), r]);
    const { sync } = await this.state(account);
    for (const [folder, list] of byFolder) {
      const byUid = new Map(list.map((r) => [r.uid, r]));
      const sources: { row: MessageRow; raw: Buffer }[] = [];
      await sync.command(async (c) => {
        await c.mailboxOpen(folder, { readOnly: true });
        for await (const m of c.fetch(list.map((r) => r.uid).join(','), { uid: true, source: true }, { uid: true })) {
          const row = byUid.get(m.uid);
          if (row && m.source) sources.push({ row, raw: m.source });
        }
      });
      const parsed = await Promise.all(sources.map(async (s) => ({ ...s, body: await parseBody(s.raw) })));
      this.deps.db.transaction(() => {
        for (const p of parsed) if (this.store.get(p.row.id)) this.store.putBody(p.row, { raw: p.raw, ...p.body });
      })();
    }
  }

  private async toMessages(account: number, rows: MessageRow[], withBodies: boolean): Promise<MailMessage[]> {
    if (withBodies) await this.ensureBodies(account, rows);
    return rows.map((r) => this.toMessage(account, this.store.get(r.id) ?? r, withBodies ? this.store.body(r.id) : undefined));
  }

  private toMessage(account: number, r: MessageRow, body: BodyRow | undefined): MailMessage {
    const flags = JSON.parse(r.flags) as string[];
    const key = this.messageKey(r);
    const attachments = body ? (JSON.parse(body.attachments) as AttachmentMeta[]) : null;
    return {
      id: this.ids.encode(account, `m\n${key}`),
      account,
      created: new Date(r.date_ms).toISOString(),
      threadId: r.thread_id,
      folderId: this.folderId(account, r.folder),
      folder: r.folder,
      labels: keywordsOf(flags).map((name) => ({ id: this.labelId(account, name), name })),
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
      rfc822: body ? { id: this.ids.encode(account, `r\n${key}`), name: 'raw_content.rfc822', mimeType: 'message/rfc822', size: body.raw.length } : null,
      attachments: attachments ? attachments.map((a, i) => ({ id: this.ids.encode(account, `a\n${key}\n${i}`), name: a.name, mimeType: a.mimeType, size: a.size })) : null,
      raw: { folder: r.folder, uid: r.uid, uidvalidity: r.uidvalidity, modseq: r.modseq, flags, message_id: r.message_id, in_reply_to: r.in_reply_to, references: r.refs ? r.refs.split(' ') : [] },
    };
  }

  /** True when `fileId` names a file inside a message of this account (rfc822 or attachment). */
  isMailFile(account: number, fileId: string): boolean {
    try {
      const kind = this.ids.decode(account, fileId).split('\n')[0];
      return kind === 'r' || kind === 'a';
    } catch {
      return false;
    }
  }

  /**
   * The raw message or an attachment, by the id in `rfc822` / `attachments`: what the storage
   * download endpoint serves for mail accounts. Attachments are decoded from the cached source,
   * byte for byte what the sender attached.
   */
  async openFile(account: number, fileId: string): Promise<MailFileContent> {
    let parts: string[];
    try {
      parts = this.ids.decode(account, fileId).split('\n');
    } catch {
      throw notFound('The file');
    }
    const [kind, folder, uidvalidity, uid, index] = parts;
    if (kind !== 'r' && kind !== 'a') throw notFound('The file');
    await this.ready(account);
    const row = this.store.byUid(account, folder!, Number(uid));
    if (!row || row.uidvalidity !== Number(uidvalidity)) throw notFound('The file');
    await this.ensureBodies(account, [row]);
    const body = this.store.body(row.id);
    if (!body) throw notFound('The file');
    const { Readable } = await import('node:stream');
    if (kind === 'r') {
      return { file: { id: fileId, name: 'raw_content.rfc822', mimeType: 'message/rfc822', size: body.raw.length }, stream: Readable.from([body.raw]) };
    }
    const parsed = await simpleParser(body.raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
    const a = parsed.attachments[Number(index)];
    if (!a) throw notFound('The file');
    const meta = (JSON.parse(body.attachments) as AttachmentMeta[])[Number(index)];
    return { file: { id: fileId, name: meta?.name ?? a.filename ?? 'attachment', mimeType: a.contentType, size: a.content.length }, stream: Readable.from([a.content]) };
  }

  // ---- sending -------------------------------------------------------------------------------

  /** Validates and builds a message: the bytes for SMTP (no Bcc) and for the mailbox copy. */
  private async compose(account: number, input: SendInput, files: SendAttachment[], opts: { draft: boolean }) {
    const people = (list: unknown, field: string): { name: string; address: string }[] => {
      if (list === undefined || list === null) return [];
      if (!Array.isArray(list)) throw invalid(`${field} must be an array of persons.`);
      return list.map((p) => {
        const email = (p as { email?: unknown })?.email;
        const name = (p as { name?: unknown })?.name;
        if (typeof email !== 'string' || !EMAIL.test(email.trim())) throw invalid(`${field}: every person needs a valid email.`);
        return { name: typeof name === 'string' ? name : '', address: email.trim() };
      });
    };
    if (!input || typeof input !== 'object') throw invalid('The message is missing.');
    const to = people(input.to, 'to');
    if (!to.length && !opts.draft) throw invalid('to must name at least one recipient.');
    if (typeof input.subject !== 'string' && !(opts.draft && input.subject === undefined)) throw invalid('subject is required.');
    const cc = people(input.cc, 'cc');
    const bcc = people(input.bcc, 'bcc');
    if (input.body !== undefined && typeof input.body !== 'string') throw invalid('body must be a string.');
    if (input.text_body !== undefined && typeof input.text_body !== 'string') throw invalid('text_body must be a string.');

    const sync = await this.ready(account);
    const { connector } = await this.state(account);
    let inReplyTo: string | undefined;
    let references: string[] = [];
    let original: MessageRow | undefined;
    if (input.reply_to) {
      original = this.messageRow(account, input.reply_to);
      if (original.message_id) {
        inReplyTo = original.message_id;
        references = [...messageIds(original.refs), original.message_id];
      }
    }
    const domain = connector.address.split('@')[1] || 'tributary.invalid';
    const messageId = `<${randomUUID()}@${domain}>`;

    let html = input.body;
    const text = html === undefined ? (input.text_body ?? '') : undefined;
    const t = input.tracking;
    if (t && (t.opens || t.clicks) && !opts.draft) {
      const base = this.deps.trackingBaseUrl?.() ?? null;
      if (!base) throw invalid('Tracking needs the public base URL of Tributary (setting mail.trackingBaseUrl).');
      const src = html ?? wrapText(text ?? '').replace(/https?:\/\/[^\s<>"']+/g, (u) => `<a href="${u}">${u}</a>`);
      html = instrumentHtml(src, {
        base: base.replace(/\/+$/, ''),
        openToken: t.opens ? this.tracker.token({ account, messageId, kind: 'open', subscriptionId: t.subscription_id }) : undefined,
        clickToken: t.clicks ? (url, text) => this.tracker.token({ account, messageId, kind: 'click', url, text, subscriptionId: t.subscription_id }) : undefined,
      });
    }
    const attachments = await Promise.all(files.map(async (f) => ({ filename: f.name, content: await readAll(f.content), contentType: f.mimeType })));
    const date = new Date();
    const mail = {
      from: connector.address,
      to: to.length ? to : undefined,
      cc: cc.length ? cc : undefined,
      bcc: bcc.length ? bcc : undefined,
      subject: input.subject ?? '',
      messageId,
      date,
      inReplyTo,
      references: references.length ? references.join(' ') : undefined,
      // spec 2: text_body is ignored when body is given.
      ...(html !== undefined ? { html } : { text }),
      attachments,
    };
    // What goes over SMTP has no Bcc header; the mailbox copy keeps it, as mail clients do.
    const wire = opts.draft ? null : await build(mail, false);
    const copy = bcc.length || opts.draft ? await build(mail, true) : wire!;
    return { sync, connector, wire, copy, date, messageId, original, recipients: [...to, ...cc, ...bcc].map((p) => p.address) };
  }

  /** Appends `raw` to the folder of `specialUse` (created as `fallback` if missing) and returns the cached copy. */
  private async file(account: number, sync: MailSync, raw: Buffer, specialUse: string, fallback: string, flags: string[], date: Date, messageId: string): Promise<MessageRow | undefined> {
    let folder = this.store.folders(account).find((f) => f.special_use === specialUse) ?? this.store.folder(account, fallback);
    if (!folder) {
      await sync.command((c) => c.mailboxCreate(fallback));
      await sync.syncFolders();
      folder = this.store.folder(account, fallback)!;
    }
    const path = folder.path;
    // imapflow keeps only flags the selected mailbox's PERMANENTFLAGS allow: select it first.
    const appended = await sync.command(async (c) => {
      await c.mailboxOpen(path);
      return c.append(path, raw, flags, date);
    });
    await sync.syncFolder(path);
    return (
      (appended && appended.uid ? this.store.byUid(account, path, appended.uid) : undefined) ??
      (this.deps.db.prepare('SELECT * FROM mail_messages WHERE account_id = ? AND folder = ? AND message_id = ?').get(account, path, messageId) as MessageRow | undefined)
    );
  }

  /**
   * spec 2 "Send": composes the message, sends it over the account's pooled SMTP transport,
   * appends a copy to Sent (\Seen) and returns that copy. `reply_to` sets In-Reply-To and
   * References from the cached original and marks it \Answered.
   */
  async send(account: number, input: SendInput, files: SendAttachment[] = []): Promise<MailMessage> {
    const m = await this.compose(account, input, files, { draft: false });
    await m.connector.send(m.wire!, { from: m.connector.address, to: m.recipients });
    const row = await this.file(account, m.sync, m.copy, '\\Sent', 'Sent', ['\\Seen'], m.date, m.messageId);
    if (m.original) {
      const o = m.original;
      await m.sync.write(o.folder, (c) => c.messageFlagsAdd(String(o.uid), ['\\Answered'], { uid: true })).catch(() => {});
    }
    if (!row) throw new ServiceError('upstream_error', 'The message was sent, but its copy in Sent could not be read back.');
    return (await this.toMessages(account, [row], true))[0]!;
  }

  /**
   * Saves a draft (the compose window): appended to Drafts with \Draft and \Seen; `replaces`,
   * the id of the previous save of the same draft, is deleted once the new one is stored.
   * Nothing is sent; recipients and subject may still be empty.
   */
  async saveDraft(account: number, input: Partial<SendInput>, files: SendAttachment[] = [], replaces?: string): Promise<MailMessage> {
    const old = replaces ? this.messageRow(account, replaces) : undefined;
    if (old && !(JSON.parse(old.flags) as string[]).includes('\\Draft')) throw invalid('replaces must be the id of a draft.');
    const m = await this.compose(account, input as SendInput, files, { draft: true });
    const row = await this.file(account, m.sync, m.copy, '\\Drafts', 'Drafts', ['\\Draft', '\\Seen'], m.date, m.messageId);
    if (old) await m.sync.write(old.folder, (c) => c.messageDelete(String(old.uid), { uid: true }));
    if (!row) throw new ServiceError('upstream_error', 'The draft was saved, but could not be read back.');
    return (await this.toMessages(account, [row], true))[0]!;
  }

  // ---- labels (IMAP keywords) ----------------------------------------------------------------

  private labelId(account: number, name: string): string {
    return this.ids.encode(account, `l\n${name}`);
  }

  private checkLabelName(name: unknown): asserts name is string {
    if (typeof name !== 'string' || !KEYWORD.test(name) || name.startsWith('\\') || name.startsWith('$')) {
      throw invalid('A label name is an IMAP keyword: 1 to 200 characters without spaces, controls or ( ) { % * " \\ ], not starting with \\ or $.');
    }
  }

  async listLabels(account: number): Promise<MailLabel[]> {
    await this.ready(account);
    return this.store.labels(account).map((name) => ({ id: this.labelId(account, name), name }));
  }

  async getLabel(account: number, id: string): Promise<MailLabel> {
    const [name] = this.decode(account, id, 'l', 'The label');
    await this.ready(account);
    if (!this.store.labels(account).includes(name!)) throw notFound('The label');
    return { id, name: name! };
  }

  /** A label exists before any message carries it: Tributary remembers it locally. */
  async createLabel(account: number, name: unknown): Promise<MailLabel> {
    this.checkLabelName(name);
    await this.ready(account);
    if (this.store.labels(account).includes(name)) {
      throw new ServiceError('naming_conflict', `A label named "${name}" already exists.`, { conflictingResourceId: this.labelId(account, name) });
    }
    this.store.addLabel(account, name);
    return { id: this.labelId(account, name), name };
  }

  /** Renames a keyword on every message carrying it (spec 2 lists this for service A only). */
  async renameLabel(account: number, id: string, name: unknown): Promise<MailLabel> {
    const old = (await this.getLabel(account, id)).name;
    this.checkLabelName(name);
    if (name === old) return { id, name };
    if (this.store.labels(account).includes(name)) throw new ServiceError('naming_conflict', `A label named "${name}" already exists.`, { conflictingResourceId: this.labelId(account, name) });
    await this.retag(account, old, name);
    this.store.addLabel(account, name);
    this.store.dropLabel(account, old);
    return { id: this.labelId(account, name), name };
  }

  /** Removes the keyword from every message, then forgets the label. */
  async deleteLabel(account: number, id: string): Promise<void> {
    const { name } = await this.getLabel(account, id);
    await this.retag(account, name, null);
    this.store.dropLabel(account, name);
  }

  private async retag(account: number, from: string, to: string | null): Promise<void> {
    const sync = await this.ready(account);
    const byFolder = new Map<string, number[]>();
    for (const m of this.store.withKeyword(account, from)) byFolder.set(m.folder, [...(byFolder.get(m.folder) ?? []), m.uid]);
    for (const [folder, uids] of byFolder) {
      await sync.write(folder, async (c) => {
        if (to) await c.messageFlagsAdd(uids.join(','), [to], { uid: true });
        await c.messageFlagsRemove(uids.join(','), [from], { uid: true });
      });
    }
  }

  // ---- folders (IMAP mailboxes) --------------------------------------------------------------

  private toFolder(account: number, f: FolderRow): MailFolder {
    const counts = this.deps.db
      .prepare('SELECT count(*) AS total, coalesce(sum(seen = 0), 0) AS unread FROM mail_messages WHERE account_id = ? AND folder = ?')
      .get(account, f.path) as { total: number; unread: number };
    return {
      id: this.folderId(account, f.path),
      name: f.path,
      leaf: f.name,
      delimiter: f.delimiter,
      specialUse: specialOf(f.special_use, f.path),
      total: counts.total,
      unread: counts.unread,
    };
  }

  async listFolders(account: number): Promise<MailFolder[]> {
    await this.ready(account);
    return this.store
      .folders(account)
      .filter((f) => f.selectable)
      .map((f) => this.toFolder(account, f));
  }

  async getFolder(account: number, id: string): Promise<MailFolder> {
    await this.ready(account);
    const path = this.folderPath(account, id);
    return this.toFolder(account, this.store.folder(account, path)!);
  }

  /** spec 2 Folders: a name the rules above allow may still be one this server refuses. */
  private checkFolderName(name: unknown): asserts name is string {
    // oxlint-disable-next-line no-control-regex -- excluding control characters is the point
    if (typeof name !== 'string' || !name.trim() || name.length > 1000 || /[\x00-\x1f\x7f*%]/.test(name)) {
      throw invalid('A folder name is 1 to 1000 characters without controls, * or %.');
    }
  }

  async createFolder(account: number, name: unknown): Promise<MailFolder> {
    this.checkFolderName(name);
    const sync = await this.ready(account);
    const existing = this.store.folders(account).find((f) => f.path.toLowerCase() === name.toLowerCase());
    if (existing) throw new ServiceError('naming_conflict', `A folder named "${name}" already exists.`, { conflictingResourceId: this.folderId(account, existing.path) });
    const created = await sync.command((c) => c.mailboxCreate(name)).catch(refusedName);
    await sync.syncFolders();
    // imapflow answers undefined when its socket died under the command: then the listing
    // below tells whether the folder exists, and getFolder says not_found if it does not.
    const path = created?.path ?? name;
    await sync.syncFolder(path);
    return this.getFolder(account, this.folderId(account, path));
  }

  async renameFolder(account: number, id: string, name: unknown): Promise<MailFolder> {
    this.checkFolderName(name);
    const sync = await this.ready(account);
    const path = this.folderPath(account, id);
    if (path.toUpperCase() === 'INBOX') throw invalid('The inbox cannot be renamed.');
    if (name === path) return this.getFolder(account, id);
    const clash = this.store.folders(account).find((f) => f.path.toLowerCase() === name.toLowerCase() && f.path !== path);
    if (clash) throw new ServiceError('naming_conflict', `A folder named "${name}" already exists.`, { conflictingResourceId: this.folderId(account, clash.path) });
    const delimiter = this.store.folder(account, path)!.delimiter;
    if (sync.watching.includes(path)) await sync.watch({ inbox: this.inboxPath(account), open: null });
    const renamed = await sync.command(async (c) => {
      if (c.mailbox && c.mailbox.path === path) await c.mailboxOpen('INBOX', { readOnly: true });
      return c.mailboxRename(path, name);
    }).catch(refusedName);
    const to = renamed.newPath ?? name;
    // UIDs and UIDVALIDITY survive a rename on a conforming server: keep the cached messages.
    this.deps.db.transaction(() => this.store.renameFolder(account, path, to, delimiter))();
    await sync.syncFolders();
    await sync.syncFolder(to);
    return this.getFolder(account, this.folderId(account, to));
  }

  async deleteFolder(account: number, id: string): Promise<void> {
    const sync = await this.ready(account);
    const path = this.folderPath(account, id);
    if (path.toUpperCase() === 'INBOX') throw invalid('The inbox cannot be deleted.');
    if (sync.watching.includes(path)) await sync.watch({ inbox: this.inboxPath(account), open: null });
    await sync.command(async (c) => {
      if (c.mailbox && c.mailbox.path === path) await c.mailboxOpen('INBOX', { readOnly: true });
      await c.mailboxDelete(path);
    });
    this.deps.db.transaction(() => this.store.deleteFolder(account, path))();
    await sync.syncFolders();
  }

  // ---- tracking ------------------------------------------------------------------------------

  /** `GET {base}/t/o/:token`: always the pixel; records an open (collapsed within a minute). */
  trackOpen(token: string, hit: TrackingHit = {}) {
    return this.tracker.open(token, hit);
  }

  /** `GET {base}/t/c/:token`: a 302 to the signed URL; not_found for a forged token. */
  trackClick(token: string, hit: TrackingHit = {}): { status: 302; location: string } {
    const r = this.tracker.click(token, hit);
    if (!r) throw notFound('The link');
    return r;
  }
}

async function build(mail: ConstructorParameters<typeof MailComposer>[0], keepBcc: boolean): Promise<Buffer> {
  const node = new MailComposer(mail).compile();
  (node as unknown as { keepBcc: boolean }).keepBcc = keepBcc;
  return node.build();
}

export async function parseBody(raw: Buffer): Promise<{ text: string | null; html: string | null; attachments: AttachmentMeta[]; snippet: string }> {
  const p = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  const text = p.text ?? null;
  const html = typeof p.html === 'string' ? p.html : null;
  return {
    text,
    html,
    attachments: p.attachments.map((a, i) => ({ name: a.filename ?? `attachment-${i + 1}`, mimeType: a.contentType, size: a.size ?? a.content.length })),
    snippet: snippetOf(text, html),
  };
}

/**
 * The server said NO to a folder name (Dovecot: a `/`, `..`, too long): that is the caller's
 * input, so invalid_parameters with the server's words, not an upstream failure.
 */
function refusedName(e: unknown): never {
  const cause = (e as { cause?: { responseStatus?: string; responseText?: string } })?.cause;
  if (e instanceof ServiceError && e.code === 'upstream_error' && cause?.responseStatus === 'NO') {
    throw new ServiceError('invalid_parameters', `The mail server refused this folder name: ${cause.responseText ?? 'no reason given'}.`);
  }
  throw e;
}
