/**
 * The activity backend (spec 3): subscriptions, followers, the activity log and webhooks, wired
 * together over the app's database, settings, accounts and storage. The REST routes
 * (rest/activity.ts) make one service call each and render it with rest/shapes/activity.ts; the
 * dashboard calls the `activity.*` procedures of contract/activity.ts.
 */
import type { Db } from '../cache/db';
import type { SettingsStore } from '../cache/queries/settings';
import type { AccountsService } from '../services/accounts';
import type { EventBus } from '../services/events';
import type { StorageService } from '../services/storage';
import type { MailChange } from '../mail/engine';
import { DEFAULT_FOLLOWER_OPTIONS, type FollowerOptions } from './follower';
import { FollowerManager } from './followers';
import { ActivityLog, RETENTION } from './log';
import type { SerializeContext } from './types';
import { SubscriptionsService } from './subscriptions';
import { systemClock, type Clock } from './types';
import type { Timers } from './delivery-queue';
import { WebhooksService } from './webhooks';
import { EventBusDelivery } from './eventbus';
import type { Keyring } from '../secrets';
import type { ActivityRecord } from './types';

export interface ActivityDeps {
  db: Db;
  settings: SettingsStore;
  events: EventBus;
  accounts: AccountsService;
  storage: StorageService;
  /** Seals event-bus credentials at rest. */
  keyring: Keyring;
}

export interface ActivityOptions {
  /** Oldest active API key, for webhook signatures (services/api-keys.ts). */
  signingKey: () => string | null;
  clock?: Clock;
  followers?: Partial<FollowerOptions> & { perService?: Record<string, Partial<FollowerOptions>> };
  webhookTimers?: Timers;
  /** false: webhooks are delivered only by `webhooks.runDue()` (tests with a fake clock). */
  autoDeliverWebhooks?: boolean;
  retention?: typeof RETENTION;
  /** v1 activity as the API renders it, for messages that carry activity (event bus). */
  renderV1: (ctx: SerializeContext, r: ActivityRecord) => Record<string, unknown>;
  /** false: event buses are delivered only by `eventBuses.runDue()` (tests). */
  autoDeliverEventBuses?: boolean;
  /** Housekeeping (expiry refresh, 90-day removal) interval; default hourly. */
  maintenanceIntervalMs?: number;
}

export class ActivityService {
  readonly log: ActivityLog;
  readonly subscriptions: SubscriptionsService;
  readonly followers: FollowerManager;
  readonly webhooks: WebhooksService;
  readonly eventBuses: EventBusDelivery;
  readonly serializeContext: SerializeContext;
  private readonly offs: (() => void)[] = [];
  private maintenance: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: ActivityDeps,
    private readonly options: ActivityOptions,
  ) {
    const clock = options.clock ?? systemClock;
    this.log = new ActivityLog(deps.db, clock, options.retention ?? RETENTION);
    this.subscriptions = new SubscriptionsService(deps.db, deps.accounts, deps.storage, deps.settings, this.log, clock);
    const bus = deps.events;
    this.followers = new FollowerManager(
      {
        db: deps.db,
        log: this.log,
        subs: this.subscriptions,
        accounts: deps.accounts,
        clock,
        emit: () => bus.emit('activity.followersChanged', { followers: this.followers.status() }),
      },
      { ...DEFAULT_FOLLOWER_OPTIONS, ...options.followers },
    );
    this.webhooks = new WebhooksService(deps.db, this.log, deps.settings, options.signingKey, {
      clock,
      timers: options.webhookTimers,
      autoDeliver: options.autoDeliverWebhooks,
    });
    this.eventBuses = new EventBusDelivery(
      deps.db,
      this.log,
      deps.keyring,
      (r) => options.renderV1(this.serializeContext, r),
      () => `tributary.app/${this.webhooks.applicationId()}/activity`,
      { clock, timers: options.webhookTimers, autoDeliver: options.autoDeliverEventBuses },
    );
    this.serializeContext = {
      toResource: (account, entry) => deps.storage.toResource(account, entry),
      actor: (account) => {
        const a = deps.accounts.row(account);
        return { name: a.account, id: a.user_id, email: a.account.includes('@') ? a.account : null };
      },
    };
    this.offs.push(this.log.onAppended((info) => bus.emit('activity.appended', { account: info.accountId, subscription: info.subscriptionId, count: info.count, cursor: info.cursor })));
    this.offs.push(this.subscriptions.onChange((c) => bus.emit('activity.subscriptionsChanged', { account: c.account })));
    this.offs.push(deps.events.on('mail.tracked', (e) => void this.recordTracking(e)));
    // The accounts.changed payload names no account: subscribe accounts created since last time.
    // Deleted accounts take their subscriptions with them (foreign keys); changed ones get new
    // connector instances: followers are brought in line either way.
    this.offs.push(
      deps.events.on('accounts.changed', () => {
        void this.subscriptions
          .reconcileNewAccounts()
          .catch(() => [])
          .then(() => this.followers.sync());
      }),
    );
  }

  /**
   * Email tracking (spec 2 Send `tracking`, spec 3 email_open / email_click): a recorded open or
   * click becomes activity of the `analytics` subscription the message was sent with, when it
   * still exists, belongs to that account and is active.
   */
  recordTracking(e: { account: number; messageId: string; message?: string | null; kind: 'email_open' | 'email_click'; url: string | null; text: string | null; subscriptionId: string | null; at: string }): number {
    // The subscription the message was sent with; a send without `subscription_id` records on
    // the account's analytics subscription (spec 2, Send `tracking`: opens and clicks become
    // activity of an `analytics` subscription).
    const id = e.subscriptionId === null ? NaN : Number(e.subscriptionId);
    const subs = this.subscriptions.list(e.account);
    const sub = Number.isInteger(id) ? subs.find((s) => s.id === id) : subs.find((s) => s.subscriptionType === 'analytics');
    if (!sub || !sub.active || sub.subscriptionType !== 'analytics') return 0;
    // The target is Tributary's id of the sent copy, so a client can fetch it on the message
    // routes (spec 3: "The full object of a target ... can be fetched with its id"); the RFC
    // Message-ID stays in the raw record. Until the copy is stored, the Message-ID is all there is.
    const meta = { path: e.message ?? e.messageId, name: e.messageId, kind: 'message' as const, size: null, modified: e.at, created: null };
    const link = e.url ? { tag: `<a href="${e.url.replace(/"/g, '&quot;')}">`, link: e.url, text: e.text } : undefined;
    const info = this.log.append(sub.id, e.account, [
      { type: 'update', api: 'email', kind: 'message', path: e.messageId, metadata: meta, subtype: e.kind, link },
    ]);
    return info?.count ?? 0;
  }

  /**
   * The mail sync engine's hook (src-main/mail/sync.ts): call it with the message changes of a
   * sync batch INSIDE the transaction that stores those messages and the new HIGHESTMODSEQ, so
   * activity and upstream checkpoint commit together. Records nothing unless the account has
   * an active subscription whose monitored folders include the message's folder.
   */
  recordMailChanges(accountId: number, changes: MailChange[]): number {
    const sub = this.subscriptions.list(accountId).find((s) => s.active && s.subscriptionType === 'changes');
    if (!sub || !changes.length) return 0;
    // A monitored resource is a folder id (GET /email/folders) or a folder path (INBOX by default).
    const ids = new Set(sub.monitoredResources.map((m) => m.resource));
    const folders = new Set(sub.monitoredResources.map((m) => m.resource.toLowerCase()));
    const wanted = changes.filter((m) => (m.folderId !== undefined && ids.has(m.folderId)) || folders.has(m.folder.toLowerCase()));
    const info = this.log.append(
      sub.id,
      accountId,
      wanted.map((m) => {
        const path = `/${m.folder}/${m.uid}`;
        const meta = { path: m.id ?? path, name: m.subject ?? '', kind: 'message' as const, size: m.size ?? null, modified: m.date ?? null, created: m.date ?? null };
        return { type: m.type, api: 'email' as const, kind: 'message' as const, path, metadata: m.type === 'delete' ? null : meta, previousMetadata: m.type === 'delete' ? meta : null };
      }),
    );
    return info?.count ?? 0;
  }

  /** Starts followers for the active subscriptions and the housekeeping timer. */
  async start(): Promise<void> {
    this.subscriptions.maintain();
    await this.followers.sync();
    this.maintenance = setInterval(() => {
      try {
        this.subscriptions.maintain();
      } catch {
        /* next round */
      }
    }, this.options.maintenanceIntervalMs ?? 3600_000);
    this.maintenance.unref();
  }

  async close(): Promise<void> {
    if (this.maintenance) clearInterval(this.maintenance);
    for (const off of this.offs) off();
    await this.followers.close();
    await this.webhooks.close();
    await this.eventBuses.close();
  }
}
