/**
 * The mail engine: one MailSync per account, started on first use (a full sync, then IDLE on
 * the inbox and the open folder, and every folder followed by NOTIFY or an interval pass,
 * notify.ts), the cache's events (`mail.changed`, `mail.messages`, the
 * activity hook), and bodies — fetched on demand, and prefetched in the background so that the
 * newest messages are searchable before anyone opens them.
 */
import type { Db } from '../cache/db';
import type { MailConnector } from '../connectors/imap/connector';
import type { AccountsService } from '../services/accounts';
import type { EventBus } from '../services/events';
import { parseBody } from './body';
import type { MailIds } from './ids';
import type { MailStore, MessageRow } from './store';
import { KEPT_QUIET_MS } from './kept-connection';
import { FolderFollower } from './notify';
import { MailSync, type SyncStats } from './sync';
import { answered } from '../connectors/imap/answered';

/** A message change as the sync engine reports it to the activity log. */
export interface MailChange {
  type: 'add' | 'update' | 'delete';
  /** Mailbox path, e.g. INBOX. */
  folder: string;
  /** The folder's id in the email API (GET /email/folders). */
  folderId?: string;
  uid: number;
  /** Our message id when known (the metadata `id`). */
  id?: string;
  subject?: string;
  size?: number;
  date?: string;
}

export interface MailEngineDeps {
  db: Db;
  accounts: AccountsService;
  events: EventBus;
  /** IDLE watchers for live updates (default true; off for batch jobs and the benchmark). */
  live?: boolean;
  /**
   * With `live`: the pass over every folder (new folders, mail other clients put anywhere) runs
   * this often without NOTIFY (default 30 s), and every `followSafetyMs` with it (default 5 min).
   */
  followIntervalMs?: number;
  followSafetyMs?: number;
  /** Use NOTIFY (RFC 5465) where the server has it (default true; off to test the interval pass). */
  notify?: boolean;
  /**
   * With `live`: silence on an IDLE or NOTIFY connection before it is checked by a NOOP, and
   * closed and reopened when that gets no answer as long again (default 60 s).
   */
  keptQuietMs?: number;
  /**
   * Bodies of the newest messages fetched in the background after each sync, so that their
   * text is searchable before anyone opens them (default 500; 0 = bodies only on demand).
   */
  prefetchBodies?: number;
  /**
   * The activity log's hook (ActivityService.recordMailChanges): per-message changes of each
   * incremental sync step, called inside the transaction that stores them.
   */
  recordChanges?: (account: number, changes: MailChange[]) => void;
}

interface AccountState {
  connector: MailConnector;
  sync: MailSync;
  started: Promise<void> | null;
  follower: FolderFollower | null;
}

/** Messages larger than this are left for on-demand fetching by the background prefetch. */
const PREFETCH_MAX_SIZE = 256 * 1024;
const PREFETCH_CHUNK = 50;

export class MailEngine {
  private readonly states = new Map<number, Promise<AccountState>>();
  private readonly prefetchTimers = new Map<number, NodeJS.Timeout>();
  private readonly prefetching = new Set<number>();
  private readonly offAccounts: () => void;

  constructor(
    private readonly deps: MailEngineDeps,
    private readonly store: MailStore,
    private readonly ids: MailIds,
  ) {
    // A changed or removed account gets a new connector: drop our sync state with the old one.
    this.offAccounts = deps.events.on('accounts.changed', () => void this.reconcile());
  }

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
            const folder = c.folder === null ? null : this.ids.folder(account, c.folder);
            this.deps.events.emit('mail.changed', { account, folder, kind: c.kind });
            if (c.messages && c.folder !== null && folder) {
              const ids = (uids: number[]) => uids.map((uid) => this.ids.message(account, { folder: c.folder!, uidvalidity: c.messages!.uidvalidity, uid }));
              this.deps.events.emit('mail.messages', { account, folder, added: ids(c.messages.added), updated: ids(c.messages.updated), removed: ids(c.messages.removed) });
            }
            if (c.kind === 'messages') this.schedulePrefetch(account);
          },
          this.deps.recordChanges
            ? (path, uidvalidity, changes) =>
                this.deps.recordChanges!(account, changes.map((ch) => ({ ...ch, folder: path, folderId: this.ids.folder(account, path), id: this.ids.message(account, { folder: path, uidvalidity, uid: ch.uid }) })))
            : undefined,
          this.deps.keptQuietMs,
        ),
        started: null,
        follower: null,
      }));
      p.catch(() => this.states.delete(account));
      this.states.set(account, p);
    }
    return p;
  }

  /** The account's live connector (its SMTP side and address, for sending). */
  async connector(account: number): Promise<MailConnector> {
    return (await this.state(account)).connector;
  }

  /**
   * The account's sync engine, started on first use (full sync, then IDLE on the inbox).
   * With a cache already there, answers come from it at once while sync catches up.
   */
  async ready(account: number): Promise<MailSync> {
    const s = await this.state(account);
    if (!s.started) {
      s.started = (async () => {
        await s.sync.syncAll();
        if (this.deps.live === false) return;
        await s.sync.watch({ inbox: this.inboxPath(account) });
        // Closed (or the account changed) meanwhile: no new connection for a state that is gone.
        if (!this.states.has(account)) return;
        if (!s.follower) {
          const sync = s.sync;
          s.follower = new FolderFollower(s.connector, () => sync.refresh(), {
            pollMs: this.deps.followIntervalMs ?? 30_000,
            safetyMs: this.deps.followSafetyMs ?? 300_000,
            notify: this.deps.notify !== false,
            quietMs: this.deps.keptQuietMs ?? KEPT_QUIET_MS,
          });
          await s.follower.start();
        }
      })();
      s.started.catch(() => (s.started = null));
    }
    if (!this.store.folders(account).length) await s.started;
    else s.started.catch(() => {});
    return s.sync;
  }

  inboxPath(account: number): string {
    return this.store.folders(account).find((f) => f.path.toUpperCase() === 'INBOX')?.path ?? 'INBOX';
  }

  /** Syncs now: every folder, or one. Resolves when the cache matches the server. */
  async sync(account: number, folderId?: string): Promise<SyncStats | void> {
    const sync = await this.ready(account);
    const s = await this.state(account);
    await s.started?.catch(() => {});
    if (folderId) return sync.syncFolder(await this.knownFolder(account, folderId, sync));
    await sync.syncAll();
  }

  /**
   * The path of a folder id; a folder the cache does not hold (created since the last pass, or
   * deleted and created again on the server) is looked for in a fresh folder list first.
   */
  private async knownFolder(account: number, folderId: string, sync: MailSync): Promise<string> {
    // Only a well-formed folder id of this account is worth asking the server about.
    const [path] = this.ids.decode(account, folderId, 'f', 'The folder');
    if (!this.store.folder(account, path!)) await sync.syncFolders();
    return this.ids.folderPath(account, folderId);
  }

  /** One pass over every folder now (what NOTIFY and the interval run); answers the folders synced. */
  async refresh(account: number): Promise<string[]> {
    const sync = await this.ready(account);
    await (await this.state(account)).started?.catch(() => {});
    return sync.refresh();
  }

  /** IDLE follows the folder the user has open, besides the inbox. */
  async openFolder(account: number, folderId: string | null): Promise<void> {
    const sync = await this.ready(account);
    if (this.deps.live === false) return;
    await sync.watch({ inbox: this.inboxPath(account), open: folderId ? this.ids.folderPath(account, folderId) : null });
  }

  /** Whether every folder is followed by NOTIFY (else by the interval pass), for diagnostics and tests. */
  async notifying(account: number): Promise<boolean> {
    await this.ready(account);
    const s = await this.state(account);
    await s.started?.catch(() => {});
    return s.follower?.notifying ?? false;
  }

  /** The folders IDLE currently watches (paths), for diagnostics and tests. */
  async watching(account: number): Promise<string[]> {
    return (await this.ready(account)).watching;
  }

  /** Fetches and caches the bodies missing among `rows`: one UID FETCH per folder. */
  async ensureBodies(account: number, rows: MessageRow[]): Promise<void> {
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
        answered(await c.mailboxOpen(folder, { readOnly: true }), `Opening ${folder}`);
        for await (const m of c.fetch(list.map((r) => r.uid).join(','), { uid: true, source: true }, { uid: true })) {
          const row = byUid.get(m.uid);
          if (row && m.source) sources.push({ row, raw: m.source });
        }
      });
      // One message that cannot be parsed must not cost the others their bodies: it is cached
      // with a note saying why (its source kept), and is not tried again.
      const parsed = await Promise.allSettled(sources.map((s) => parseBody(s.raw)));
      this.deps.db.transaction(() => {
        parsed.forEach((p, i) => {
          const { row, raw } = sources[i]!;
          if (!this.store.get(row.id)) return;
          if (p.status === 'fulfilled') this.store.putBody(row, { raw, ...p.value });
          else this.store.putUnreadableBody(row, raw, unreadableNote(p.reason));
        });
      })();
    }
  }

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

  private async reconcile(): Promise<void> {
    for (const [account, p] of this.states) {
      const s = await p.catch(() => null);
      const current = await this.deps.accounts.instance(account, 'mail').catch(() => null);
      if (!s || current !== s.connector) {
        this.states.delete(account);
        if (s) await closeState(s);
      }
    }
  }

  async close(): Promise<void> {
    this.offAccounts();
    for (const t of this.prefetchTimers.values()) clearTimeout(t);
    this.prefetchTimers.clear();
    const all = [...this.states.values()];
    this.states.clear();
    await Promise.all(all.map((p) => p.then(closeState).catch(() => {})));
  }
}

/** What a message that cannot be parsed shows as its text. */
export function unreadableNote(reason: unknown): string {
  const why = (reason instanceof Error ? reason.message : String(reason)).replace(/\s+/g, ' ').trim().slice(0, 300) || 'unknown error';
  return `[This message could not be read: ${why}. Its original source is available as raw_content.rfc822.]`;
}

async function closeState(s: AccountState): Promise<void> {
  await s.follower?.stop();
  await s.sync.close();
}
