/**
 * The sync engine of one mail account: the only writer of its rows in the cache.
 *
 * - Folder list with special-use detection (LIST + SPECIAL-USE).
 * - First sync of a folder: headers newest-first, by descending sequence ranges, one
 *   transaction and one `changed` notification per batch, so the newest mail shows first.
 * - Incremental sync: QRESYNC SELECT (RFC 7162) hands over flag changes and VANISHED UIDs
 *   since the stored HIGHESTMODSEQ; new mail is `UID FETCH uidnext:*`. Without QRESYNC,
 *   CONDSTORE `CHANGEDSINCE` (or a full flags fetch) and a UID diff do the same job.
 * - UIDVALIDITY change: the folder's cache is dropped and synced again from scratch.
 * - A final count check (cached rows vs EXISTS) repairs anything missed with a UID diff.
 * - Live updates: IDLE on the inbox and on the folder the user has open, each on its own
 *   connection; any EXISTS/EXPUNGE/FETCH there schedules an incremental sync.
 */
import { createHash } from 'node:crypto';
import type { FetchMessageObject, FetchQueryObject, ImapFlow, ListResponse, MessageStructureObject } from 'imapflow';
import type { MailConnector } from '../connectors/imap/connector';
import { KEPT_QUIET_MS, KeptConnection } from './kept-connection';
import type { HeaderInput, MailStore, Person } from './store';
import { answered } from '../connectors/imap/answered';

export type ChangeKind = 'messages' | 'folders';
/**
 * After each commit. `messages` lists UIDs added, updated (flags) and removed by an incremental
 * step; it is absent for a first or UIDVALIDITY-reset sync (no per-message activity for those).
 */
export interface Change {
  folder: string | null;
  kind: ChangeKind;
  messages?: { uidvalidity: number; added: number[]; updated: number[]; removed: number[] };
}
export type ChangeListener = (change: Change) => void;

/** One message change of an incremental step, as the activity log records it. */
export interface MessageChange {
  type: 'add' | 'update' | 'delete';
  uid: number;
  subject?: string;
  size?: number;
  date?: string;
}

/**
 * Called INSIDE the transaction that stores the changes and advances the folder's cursor, so a
 * consumer's own rows (the activity log) commit or roll back with them: exactly once.
 */
export type MessageChangeHook = (folder: string, uidvalidity: number, changes: MessageChange[]) => void;

export const FIRST_BATCH = 200;
export const BATCH = 2000;

export function threadIdFor(messageId: string | null, inReplyTo: string | null, references: string[], fallback: string): string {
  // The thread root is the first message the References chain names (RFC 5256 REFERENCES
  // without the subject merge), else the parent, else the message itself.
  const root = references[0] ?? inReplyTo ?? messageId ?? fallback;
  return createHash('sha256').update(root.toLowerCase()).digest('base64url').slice(0, 22);
}

const people = (list: { name?: string; address?: string }[] | undefined): Person[] =>
  (list ?? []).filter((a) => a.address).map((a) => ({ name: a.name || null, email: a.address! }));

export const messageIds = (value: string | null | undefined): string[] => (value ? (value.match(/<[^<>\s]+>/g) ?? []) : []);

function headerValue(headers: Buffer | undefined, name: string): string | null {
  if (!headers) return null;
  const unfolded = headers.toString('utf8').replace(/\r?\n[ \t]+/g, ' ');
  const m = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(unfolded);
  return m ? m[1]!.trim() : null;
}

function hasAttachment(node: MessageStructureObject | undefined): boolean {
  if (!node) return false;
  if (node.childNodes?.length) return node.childNodes.some(hasAttachment);
  if (node.disposition === 'attachment') return true;
  const named = node.dispositionParameters?.filename || node.parameters?.name;
  return Boolean(named) && !node.type.startsWith('text/') && !node.type.startsWith('multipart/');
}

const describe = (row: { subject: string; size: number | null; date_ms: number } | undefined) =>
  row ? { subject: row.subject, size: row.size ?? undefined, date: new Date(row.date_ms).toISOString() } : {};

const timeOf = (v: Date | string | null | undefined): number | null => {
  if (v === undefined || v === null || v === '') return null;
  const ms = (v instanceof Date ? v : new Date(v)).getTime();
  return Number.isFinite(ms) ? ms : null;
};

/**
 * When the message was written (its Date header); else when the server received it (INTERNALDATE);
 * else, when neither parses, the time it is first seen here. Never NaN: the cache needs a date.
 */
export function messageDateMs(sent: Date | string | null | undefined, internalDate: Date | string | null | undefined, firstSeenMs = Date.now()): number {
  return timeOf(sent) ?? timeOf(internalDate) ?? firstSeenMs;
}

export function headerOf(folder: string, msg: FetchMessageObject): HeaderInput {
  const env = msg.envelope ?? {};
  const references = messageIds(headerValue(msg.headers, 'references'));
  const messageId = env.messageId ?? null;
  const inReplyTo = messageIds(env.inReplyTo)[0] ?? null;
  return {
    uid: msg.uid,
    modseq: msg.modseq !== undefined ? Number(msg.modseq) : null,
    messageId,
    inReplyTo,
    references,
    threadId: threadIdFor(messageId, inReplyTo, references, `${folder}/${msg.uid}`),
    subject: env.subject ?? '',
    from: people(env.from)[0] ?? null,
    to: people(env.to),
    cc: people(env.cc),
    bcc: people(env.bcc),
    dateMs: messageDateMs(env.date, msg.internalDate),
    size: msg.size ?? null,
    flags: [...(msg.flags ?? [])],
    hasAttachments: hasAttachment(msg.bodyStructure),
  };
}

const HEADER_QUERY: FetchQueryObject = { uid: true, flags: true, envelope: true, internalDate: true, size: true, bodyStructure: true, headers: ['references'] };
/**
 * The same without BODYSTRUCTURE, for the messages the query above gets no answer for: a body
 * nested deeper than the IMAP response parser goes (about 20 multiparts) makes the whole FETCH
 * response of that message unreadable. Such a message is stored without attachment info;
 * its attachments are known once its body is parsed.
 */
const SHALLOW_HEADER_QUERY: FetchQueryObject = { uid: true, flags: true, envelope: true, internalDate: true, size: true, headers: ['references'] };

export interface SyncStats {
  added: number;
  updated: number;
  removed: number;
  full: boolean;
}

export class MailSync {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly watchers = new Map<string, IdleWatcher>();
  private openFolder: string | null = null;
  private closed = false;

  constructor(
    private readonly store: MailStore,
    readonly account: number,
    private readonly connector: MailConnector,
    private readonly onChange: ChangeListener,
    private readonly hook?: MessageChangeHook,
    /** Silence before an IDLE connection is checked (kept-connection.ts). */
    private readonly quietMs = KEPT_QUIET_MS,
  ) {}

  /** One writer per account: every sync step runs through this queue. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.queue.then(fn, fn);
    this.queue = p.catch(() => {});
    return p;
  }

  /** Refreshes the folder list (special-use included) and drops folders gone upstream. */
  syncFolders(): Promise<void> {
    return this.exclusive(async () => {
      this.storeFolders(await this.connector.withClient((c) => c.list()));
    });
  }

  private storeFolders(list: ListResponse[]): void {
    const seen = new Set<string>();
    const db = this.store.db;
    db.transaction(() => {
      for (const f of list) {
        seen.add(f.path);
        this.store.upsertFolder(this.account, {
          path: f.path,
          name: f.name,
          delimiter: f.delimiter ?? null,
          specialUse: f.specialUse ?? null,
          selectable: !f.flags.has('\\Noselect') && !f.flags.has('\\NonExistent'),
        });
      }
      for (const f of this.store.folders(this.account)) if (!seen.has(f.path)) this.store.deleteFolder(this.account, f.path);
    })();
    this.onChange({ folder: null, kind: 'folders' });
  }

  /**
   * The background pass over every folder: one LIST with STATUS (RFC 5819 LIST-STATUS; imapflow
   * falls back to one STATUS per folder) finds new and removed folders and the folders whose
   * UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ or message count moved; only those are synced
   * (incrementally, by QRESYNC/CONDSTORE). With nothing changed it costs one round trip.
   * Answers the folders it synced.
   */
  async refresh(): Promise<string[]> {
    const stale = await this.exclusive(async () => {
      const list = await this.connector.withClient((c) => c.list({ statusQuery: { messages: true, uidNext: true, uidValidity: true, highestModseq: true } }));
      this.storeFolders(list);
      const counts = new Map(this.store.counts(this.account).map((c) => [c.folder, c.n]));
      const out: string[] = [];
      for (const f of list) {
        const s = f.status;
        const cached = this.store.folder(this.account, f.path);
        if (!cached?.selectable) continue;
        const moved =
          !s ||
          !cached.uidvalidity ||
          cached.uidnext == null ||
          s.uidValidity === undefined ||
          Number(s.uidValidity) !== cached.uidvalidity ||
          s.uidNext !== cached.uidnext ||
          (s.highestModseq !== undefined && Number(s.highestModseq) !== cached.highestmodseq) ||
          s.messages !== (counts.get(f.path) ?? 0);
        if (moved) out.push(f.path);
      }
      return out;
    });
    for (const path of stale) await this.syncFolder(path).catch(() => {});
    return stale;
  }

  /** Folders, then every selectable folder's messages, the inbox first. */
  async syncAll(): Promise<void> {
    await this.syncFolders();
    const folders = this.store.folders(this.account).filter((f) => f.selectable);
    folders.sort((a, b) => Number(b.path.toUpperCase() === 'INBOX') - Number(a.path.toUpperCase() === 'INBOX'));
    for (const f of folders) await this.syncFolder(f.path);
  }

  syncFolder(path: string): Promise<SyncStats> {
    return this.exclusive(() => this.connector.withClient((c) => this.syncOn(c, path)));
  }

  private async syncOn(client: ImapFlow, path: string): Promise<SyncStats> {
    const stats: SyncStats = { added: 0, updated: 0, removed: 0, full: false };
    const cached = this.store.folder(this.account, path);
    const vanished: number[] = [];
    const flagged = new Map<number, { flags: string[]; modseq: number | null }>();
    const onExpunge = (e: { path: string; uid?: number; vanished?: boolean }) => {
      if (e.path === path && e.vanished && e.uid) vanished.push(e.uid);
    };
    const onFlags = (e: { path: string; uid?: number; flags: Set<string>; modseq?: bigint }) => {
      if (e.path === path && e.uid) flagged.set(e.uid, { flags: [...e.flags], modseq: e.modseq !== undefined ? Number(e.modseq) : null });
    };
    client.on('expunge', onExpunge);
    client.on('flags', onFlags);
    try {
      const resume = cached?.uidvalidity && cached.highestmodseq ? { changedSince: BigInt(cached.highestmodseq), uidValidity: BigInt(cached.uidvalidity) } : {};
      const mb = answered(await client.mailboxOpen(path, { readOnly: true, ...resume }), `Opening ${path}`);
      const uidvalidity = Number(mb.uidValidity);
      const highest = mb.highestModseq !== undefined && !mb.noModseq ? Number(mb.highestModseq) : null;
      const db = this.store.db;

      if (!cached?.uidvalidity || cached.uidvalidity !== uidvalidity || cached.uidnext == null) {
        // First sync, or the server renumbered the mailbox: start over, newest first.
        stats.full = true;
        db.transaction(() => this.store.clearFolder(this.account, path))();
        let end = mb.exists;
        let size = FIRST_BATCH;
        while (end >= 1) {
          const start = Math.max(1, end - size + 1);
          stats.added += await this.fetchHeaders(client, path, uidvalidity, `${start}:${end}`, false);
          end = start - 1;
          size = BATCH;
        }
      } else {
        if (!(mb as { qresync?: boolean }).qresync && cached.uidnext > 1) {
          // No QRESYNC: flag changes by CONDSTORE CHANGEDSINCE (or all flags), expunges by UID diff below.
          const opts = highest && cached.highestmodseq ? { uid: true, changedSince: BigInt(cached.highestmodseq) } : { uid: true };
          for await (const m of client.fetch(`1:${cached.uidnext - 1}`, { uid: true, flags: true }, opts)) {
            flagged.set(m.uid, { flags: [...(m.flags ?? [])], modseq: m.modseq !== undefined ? Number(m.modseq) : null });
          }
        }
        if (vanished.length || flagged.size) {
          const removed: number[] = [];
          const updated: number[] = [];
          db.transaction(() => {
            const gone = new Map(vanished.map((uid) => [uid, this.store.byUid(this.account, path, uid)]));
            for (const uid of vanished) if (this.store.deleteUid(this.account, path, uid)) removed.push(uid);
            for (const [uid, f] of flagged) if (this.store.setFlags(this.account, path, uid, f.flags, f.modseq)) updated.push(uid);
            // The modseq these changes bring us to commits with them: a crash replays nothing twice.
            if (highest !== null) this.store.setModseq(this.account, path, highest);
            this.hook?.(path, uidvalidity, [
              ...removed.map((uid) => ({ type: 'delete' as const, uid, ...describe(gone.get(uid)) })),
              ...updated.map((uid) => ({ type: 'update' as const, uid, ...describe(this.store.byUid(this.account, path, uid)) })),
            ]);
          })();
          stats.removed += removed.length;
          stats.updated += updated.length;
          this.onChange({ folder: path, kind: 'messages', messages: { uidvalidity, added: [], updated, removed } });
        }
        if (mb.uidNext > cached.uidnext) stats.added += await this.fetchHeaders(client, path, uidvalidity, `${cached.uidnext}:*`, true, cached.uidnext, true);
      }

      // Safety net: the cache must hold exactly the server's messages.
      const exists = client.mailbox ? client.mailbox.exists : mb.exists;
      if (this.store.count(this.account, path) !== exists) {
        const server = new Set((await client.search({ all: true }, { uid: true })) || []);
        const local = new Set(this.store.uids(this.account, path));
        const gone = [...local].filter((u) => !server.has(u));
        const missing = [...server].filter((u) => !local.has(u)).sort((a, b) => b - a);
        if (gone.length) {
          db.transaction(() => {
            const rows = gone.map((uid) => ({ uid, row: this.store.byUid(this.account, path, uid) }));
            gone.forEach((u) => this.store.deleteUid(this.account, path, u));
            if (!stats.full) this.hook?.(path, uidvalidity, rows.map((r) => ({ type: 'delete' as const, uid: r.uid, ...describe(r.row) })));
          })();
          stats.removed += gone.length;
          this.onChange({ folder: path, kind: 'messages', messages: stats.full ? undefined : { uidvalidity, added: [], updated: [], removed: gone } });
        }
        for (let i = 0; i < missing.length; i += BATCH) {
          stats.added += await this.fetchHeaders(client, path, uidvalidity, missing.slice(i, i + BATCH).join(','), true, 0, !stats.full);
        }
      }
      const uidNext = client.mailbox && client.mailbox.path === path ? client.mailbox.uidNext : mb.uidNext;
      const modseq = client.mailbox && client.mailbox.path === path && client.mailbox.highestModseq !== undefined ? Number(client.mailbox.highestModseq) : highest;
      db.transaction(() => this.store.setCursor(this.account, path, { uidvalidity, uidnext: uidNext, highestmodseq: modseq }))();
      return stats;
    } finally {
      client.off('expunge', onExpunge);
      client.off('flags', onFlags);
    }
  }

  /** Fetches one range of headers and commits it in one transaction; returns the count. */
  private async fetchHeaders(client: ImapFlow, path: string, uidvalidity: number, range: string, byUid: boolean, minUid = 0, report = false): Promise<number> {
    const batch: HeaderInput[] = [];
    for await (const m of client.fetch(range, HEADER_QUERY, { uid: byUid })) {
      if (m.uid >= minUid) batch.push(headerOf(path, m));
    }
    const unanswered = await this.unanswered(client, range, byUid, batch);
    if (unanswered.size) {
      for await (const m of client.fetch([...unanswered].join(','), SHALLOW_HEADER_QUERY, { uid: true })) {
        if (m.uid >= minUid && unanswered.delete(m.uid)) batch.push(headerOf(path, m));
      }
    }
    if (!batch.length) return 0;
    this.store.db.transaction(() => {
      for (const h of batch) this.store.upsertHeader(this.account, path, uidvalidity, h);
      if (report) {
        // New mail moves UIDNEXT in the same transaction, so it is reported once.
        this.store.advanceUidNext(this.account, path, Math.max(...batch.map((h) => h.uid)) + 1);
        this.hook?.(path, uidvalidity, batch.map((h) => ({ type: 'add' as const, uid: h.uid, subject: h.subject, size: h.size ?? undefined, date: new Date(h.dateMs).toISOString() })));
      }
    })();
    this.onChange({ folder: path, kind: 'messages', messages: report ? { uidvalidity, added: batch.map((h) => h.uid), updated: [], removed: [] } : undefined });
    return batch.length;
  }

  /**
   * The UIDs of `range` that exist on the server but got no answer to HEADER_QUERY: for a list of
   * UIDs, those not answered; for a sequence range answered short, the UIDs of the range (one
   * UID-only FETCH) not answered. An open UID range (new mail, `n:*`) is left to the count check,
   * which comes back here with the UIDs it finds missing.
   */
  private async unanswered(client: ImapFlow, range: string, byUid: boolean, got: HeaderInput[]): Promise<Set<number>> {
    const have = new Set(got.map((h) => h.uid));
    const uids = new Set<number>();
    if (byUid) {
      if (/^\d+(,\d+)*$/.test(range)) for (const u of range.split(',').map(Number)) if (!have.has(u)) uids.add(u);
      return uids;
    }
    const seq = /^(\d+):(\d+)$/.exec(range);
    if (!seq || got.length >= Number(seq[2]) - Number(seq[1]) + 1) return uids;
    for await (const m of client.fetch(range, { uid: true }, { uid: false })) if (!have.has(m.uid)) uids.add(m.uid);
    return uids;
  }

  /** Runs `fn` with the given folder opened read-write on the shared connection, then re-syncs it. */
  async write<T>(path: string, fn: (client: ImapFlow) => Promise<T>): Promise<T> {
    return this.exclusive(() =>
      this.connector.withClient(async (c) => {
        answered(await c.mailboxOpen(path), `Opening ${path}`);
        const result = await fn(c);
        await this.syncOn(c, path);
        return result;
      }),
    );
  }

  /** Runs an account-level IMAP command (CREATE, RENAME, DELETE, APPEND) under the writer lock. */
  command<T>(fn: (client: ImapFlow) => Promise<T>): Promise<T> {
    return this.exclusive(() => this.connector.withClient(fn));
  }

  /** IDLE on the inbox, plus on `openFolder` (replacing the previous open folder's watcher). */
  async watch(folders: { inbox: string; open?: string | null }): Promise<void> {
    if (this.closed) return;
    const wanted = new Set([folders.inbox, ...(folders.open ? [folders.open] : [])]);
    this.openFolder = folders.open ?? null;
    for (const [path, w] of this.watchers) {
      if (!wanted.has(path)) {
        this.watchers.delete(path);
        await w.stop();
      }
    }
    const starts: Promise<void>[] = [];
    for (const path of wanted) {
      if (this.watchers.has(path)) continue;
      const w = new IdleWatcher(this.connector, this.quietMs, path, () => {
        this.syncFolder(path).catch(() => {});
      });
      this.watchers.set(path, w);
      starts.push(w.start());
    }
    await Promise.all(starts);
  }

  get watching(): string[] {
    return [...this.watchers.keys()];
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.watchers.values()].map((w) => w.stop()));
    this.watchers.clear();
    await this.queue.catch(() => {});
  }
}

/** One IDLE connection on one folder; reconnects with backoff; debounces bursts of events. */
class IdleWatcher extends KeptConnection {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    connector: MailConnector,
    quietMs: number,
    private readonly path: string,
    private readonly changed: () => void,
  ) {
    super(connector, quietMs);
  }

  protected run(ready: () => void): Promise<void> {
    return this.reconnecting(ready, async (client, connected) => {
      const poke = () => {
        if (this.timer) return;
        this.timer = setTimeout(() => {
          this.timer = null;
          this.changed();
        }, 50);
      };
      client.on('exists', poke);
      client.on('expunge', poke);
      client.on('flags', poke);
      await client.mailboxOpen(this.path, { readOnly: true });
      connected();
      // Changes between the last sync and IDLE would otherwise wait for the next event.
      poke();
      await this.idle(client, ready);
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.closeConnection();
  }
}
