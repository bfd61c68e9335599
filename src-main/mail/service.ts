/**
 * MailService: spec 2 (email) for mail accounts, answered from the local cache that the engine
 * keeps current. One part per idea, each in its own file:
 *   ids.ts       the opaque, authenticated ids of folders, messages, labels and message files
 *   engine.ts    per-account sync (MailSync), live IDLE, body fetching and prefetch
 *   messages.ts  list, search, read, flag, move, delete, address suggestions, message files
 *   outgoing.ts  send and drafts            outbox.ts   the durable outbox (undo, later, retries)
 *   notify.ts    every folder current (NOTIFY, interval pass)
 *   labels.ts    labels as IMAP keywords          folders.ts  folders as IMAP mailboxes
 */
import type { Db } from '../cache/db';
import { notFound } from '../errors';
import { IdCodec } from '../ids';
import type { Keyring } from '../secrets';
import type { AccountsService } from '../services/accounts';
import type { EventBus } from '../services/events';
import { MailEngine, type MailEngineDeps } from './engine';
import { MailFolders } from './folders';
import { MailIds } from './ids';
import { MailLabels } from './labels';
import { MailMessages } from './messages';
import { MailOutgoing } from './outgoing';
import { MailStore } from './store';
import type { SyncStats } from './sync';
import { Tracker, type TrackingHit } from './tracking';

export interface MailDeps extends MailEngineDeps {
  db: Db;
  accounts: AccountsService;
  events: EventBus;
  keyring: Keyring;
  /** Public base URL of the tracking endpoints (`{base}/t/o/…`, `{base}/t/c/…`); null when unset. */
  trackingBaseUrl?: () => string | null;
  /** The undo-send delay in seconds (0-30), read at each send. */
  undoSendSeconds?: () => number;
}

export class MailService {
  readonly store: MailStore;
  readonly tracker: Tracker;
  readonly ids: MailIds;
  readonly messages: MailMessages;
  readonly folders: MailFolders;
  readonly labels: MailLabels;
  readonly outgoing: MailOutgoing;
  private readonly engine: MailEngine;

  constructor(deps: MailDeps) {
    this.store = new MailStore(deps.db);
    this.ids = new MailIds(new IdCodec(deps.keyring.key('ids')), this.store);
    this.tracker = new Tracker(deps.db, deps.keyring.key('tracking'), (e) =>
      deps.events.emit('mail.tracked', { id: e.id, account: e.account, messageId: e.messageId, message: this.trackedMessage(e.account, e.messageId), kind: e.kind, url: e.url, text: e.text, subscriptionId: e.subscriptionId, at: e.at }),
    );
    this.engine = new MailEngine(deps, this.store, this.ids);
    this.messages = new MailMessages(deps.db, this.store, this.ids, this.engine);
    this.folders = new MailFolders(deps.db, this.store, this.ids, this.engine);
    this.labels = new MailLabels(this.store, this.ids, this.engine);
    this.outgoing = new MailOutgoing({
      db: deps.db,
      store: this.store,
      ids: this.ids,
      engine: this.engine,
      messages: this.messages,
      tracker: this.tracker,
      trackingBaseUrl: deps.trackingBaseUrl,
      events: deps.events,
      undoSendSeconds: deps.undoSendSeconds,
    });
  }

  /**
   * Sends what a previous run left in the outbox (now, or at its time). Once per database: the
   * app calls it; a second service on the same database (a benchmark) must not.
   */
  start(): void {
    this.outgoing.outbox.start();
  }

  /** Tributary's id of the sent copy of a tracked message (fetchable on the message routes); null until it is stored. */
  private trackedMessage(account: number, messageId: string): string | null {
    const row = this.store.byMessageId(account, messageId);
    return row ? this.ids.message(account, row) : null;
  }

  /** Syncs now: every folder, or one. Resolves when the cache matches the server. */
  sync(account: number, folderId?: string): Promise<SyncStats | void> {
    return this.engine.sync(account, folderId);
  }

  /** One pass over every folder now (what NOTIFY and the interval run); answers the folders synced. */
  refresh(account: number): Promise<string[]> {
    return this.engine.refresh(account);
  }

  /** IDLE follows the folder the user has open, besides the inbox. */
  openFolder(account: number, folderId: string | null): Promise<void> {
    return this.engine.openFolder(account, folderId);
  }

  /** Whether every folder is followed by NOTIFY (else by the interval pass), for diagnostics and tests. */
  notifying(account: number): Promise<boolean> {
    return this.engine.notifying(account);
  }

  /** The folders IDLE currently watches (paths), for diagnostics and tests. */
  watching(account: number): Promise<string[]> {
    return this.engine.watching(account);
  }

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

  async close(): Promise<void> {
    await this.outgoing.outbox.close();
    await this.engine.close();
  }
}
