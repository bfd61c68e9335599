/**
 * Subscriptions (spec 3, Subscription and States and transitions): one per account, the
 * `default` alias, types changes/crawl/analytics, monitored resources validated against the
 * backend's caps and immutable afterwards, the active toggle, expiry refresh, removal after 90
 * days of inaccessibility, and the "track activity" setting.
 */
import type { Db } from '../cache/db';
import type { SettingsStore } from '../cache/queries/settings';
import { connectorDefinition } from '../connectors/registry';
import { ServiceError } from '../errors';
import { isSpecialId, isWellFormedId } from '../ids';
import type { AccountsService } from '../services/accounts';
import type { StorageService } from '../services/storage';
import type { ActivityLog } from './log';
import type { SubscriptionView } from './types';
import { systemClock, type Clock } from './types';

export type SubscriptionType = 'changes' | 'crawl' | 'analytics';
export interface MonitoredResource {
  resource: string;
  user?: string;
}

/** Setting keys (app.settings). */
export const TRACK_ACTIVITY = 'activity.trackActivity';
const AUTO_THROUGH = 'activity.autoSubscribedThrough';

const DAY = 24 * 3600_000;
export const SUBSCRIPTION_LIFETIME_MS = 7 * DAY;
/** Active subscriptions closer than this to expiry are refreshed. */
export const REFRESH_BEFORE_MS = DAY;
export const REMOVE_AFTER_MS = 90 * DAY;

/** Monitored-resource caps per backend kind (spec 3, Monitored Resource). */
export const CAPS = {
  /** Cloud drive, non-admin: up to 4; here a folder id or `root`. */
  storage: { max: 4, default: [{ resource: 'root' }] as MonitoredResource[] },
  /** Mail: mailbox or folder ids; INBOX by default. */
  email: { max: 10, default: [{ resource: 'INBOX' }] as MonitoredResource[] },
};

interface Row {
  id: number;
  account_id: number;
  subscription_type: SubscriptionType;
  crawl_type: string;
  monitored_resources: string;
  active: number;
  disable_reason: string | null;
  is_default: number;
  expiry: string;
  last_cursor: string | null;
  last_cursor_updated_at: string | null;
  inaccessible_since: string | null;
  crawl_done: number;
  created: string;
  modified: string;
}

export interface Subscription extends SubscriptionView {
  inaccessibleSince: string | null;
  crawlDone: boolean;
}

export type SubscriptionChange = { kind: 'created' | 'updated' | 'deleted'; id: number; account: number };

export class SubscriptionsService {
  private readonly listeners = new Set<(c: SubscriptionChange) => void>();
  /**
   * Checks a monitored resource of a mail account: a folder id of `GET /email/folders` or a
   * folder path; throws invalid_parameters for anything else (set by the app once mail exists).
   */
  mailFolder?: (account: number, resource: string) => Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly accounts: AccountsService,
    private readonly storage: StorageService,
    private readonly settings: SettingsStore,
    private readonly log: ActivityLog,
    private readonly clock: Clock = systemClock,
  ) {}

  onChange(listener: (c: SubscriptionChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(c: SubscriptionChange): void {
    for (const l of this.listeners) l(c);
  }

  private now(): string {
    return new Date(this.clock()).toISOString();
  }

  /** `storage` or `email`, from the account's connector. */
  apiOf(accountId: number): 'storage' | 'email' {
    const def = connectorDefinition(this.accounts.row(accountId).service);
    return def.group === 'email' || (def.kind as string) === 'mail' ? 'email' : 'storage';
  }

  list(accountId: number): Subscription[] {
    this.accounts.row(accountId);
    const rows = this.db.prepare('SELECT * FROM activity_subscriptions WHERE account_id = ? ORDER BY id').all(accountId) as Row[];
    return rows.map((r) => this.view(r));
  }

  all(): Subscription[] {
    return (this.db.prepare('SELECT * FROM activity_subscriptions ORDER BY id').all() as Row[]).map((r) => this.view(r));
  }

  /** One subscription by id or the alias `default`. */
  get(accountId: number, idOrAlias: number | string): Subscription {
    this.accounts.row(accountId);
    let row: Row | undefined;
    if (idOrAlias === 'default') {
      // The subscription whose `default` is true; an account has at most one subscription, so
      // without a default the alias names that one (clients written for the alias keep working).
      row = this.db.prepare('SELECT * FROM activity_subscriptions WHERE account_id = ? ORDER BY is_default DESC, id LIMIT 1').get(accountId) as Row | undefined;
    } else {
      const id = typeof idOrAlias === 'number' ? idOrAlias : /^\d+$/.test(idOrAlias) ? Number(idOrAlias) : NaN;
      row = Number.isSafeInteger(id) ? (this.db.prepare('SELECT * FROM activity_subscriptions WHERE account_id = ? AND id = ?').get(accountId, id) as Row | undefined) : undefined;
    }
    if (!row) throw new ServiceError('not_found', `Subscription ${idOrAlias} was not found for account ${accountId}.`);
    return this.view(row);
  }

  byId(id: number): Subscription | undefined {
    const row = this.db.prepare('SELECT * FROM activity_subscriptions WHERE id = ?').get(id) as Row | undefined;
    return row && this.view(row);
  }

  /** POST subscriptions (spec 3): at most one per account. */
  async create(
    accountId: number,
    input: { active?: boolean; subscriptionType?: SubscriptionType; monitoredResources?: MonitoredResource[]; internalState?: string; isDefault?: boolean } = {},
  ): Promise<Subscription> {
    this.accounts.row(accountId);
    const api = this.apiOf(accountId);
    const type = input.subscriptionType ?? 'changes';
    if ((type as string) === 'sync') throw new ServiceError('not_implemented', '`sync` subscriptions are planned but not implemented.');
    if (!['changes', 'crawl', 'analytics'].includes(type)) {
      throw new ServiceError('invalid_parameters', '`subscription_type` must be `changes`, `crawl` or `analytics`.');
    }
    if (type === 'crawl' && api !== 'storage') throw new ServiceError('invalid_parameters', '`crawl` subscriptions exist only for storage accounts.');
    if (type === 'analytics' && api !== 'email') throw new ServiceError('invalid_parameters', '`analytics` subscriptions exist only for mail accounts.');
    if (input.active !== undefined && typeof input.active !== 'boolean') throw new ServiceError('invalid_parameters', '`active` must be a boolean.');
    if (input.isDefault !== undefined && typeof input.isDefault !== 'boolean') throw new ServiceError('invalid_parameters', '`default` must be a boolean.');
    const resources = await this.validateResources(accountId, api, input.monitoredResources);
    const now = this.now();
    const expiry = new Date(this.clock() + SUBSCRIPTION_LIFETIME_MS).toISOString();
    const id = this.db.transaction(() => {
      if (this.db.prepare('SELECT 1 FROM activity_subscriptions WHERE account_id = ?').get(accountId)) {
        throw new ServiceError('conflict', `Account ${accountId} already has a subscription; only one subscription per account is possible. Delete it first to create another.`);
      }
      const active = input.active ?? true;
      const r = this.db
        .prepare(
          `INSERT INTO activity_subscriptions (account_id, subscription_type, monitored_resources, active, disable_reason, is_default, expiry, created, modified)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        // spec 3, Subscription `default`: false unless asked for.
        .run(accountId, type, JSON.stringify(resources), active ? 1 : 0, active ? null : 'deactivated_by_user', input.isDefault ? 1 : 0, expiry, now, now);
      const sid = Number(r.lastInsertRowid);
      if (input.internalState !== undefined) this.importState(sid, input.internalState);
      return sid;
    })();
    this.changed({ kind: 'created', id, account: accountId });
    return this.get(accountId, id);
  }

  /** PATCH (spec 3): only `active` (and `internal_state` when importing); monitored resources are immutable. */
  update(accountId: number, idOrAlias: number | string, input: { active?: boolean; internalState?: string; monitoredResources?: unknown; subscriptionType?: unknown }): Subscription {
    const sub = this.get(accountId, idOrAlias);
    if (input.monitoredResources !== undefined) {
      throw new ServiceError('invalid_parameters', '`monitored_resources` cannot be changed after creation; delete and recreate the subscription to change it.');
    }
    if (input.subscriptionType !== undefined && input.subscriptionType !== sub.subscriptionType) {
      throw new ServiceError('invalid_parameters', '`subscription_type` cannot be changed after creation; delete and recreate the subscription.');
    }
    if (input.active !== undefined && typeof input.active !== 'boolean') throw new ServiceError('invalid_parameters', '`active` must be a boolean.');
    this.db.transaction(() => {
      if (input.active !== undefined) {
        this.db
          .prepare('UPDATE activity_subscriptions SET active = ?, disable_reason = ?, modified = ? WHERE id = ?')
          .run(input.active ? 1 : 0, input.active ? null : 'deactivated_by_user', this.now(), sub.id);
        // Nothing is monitored while inactive: on resume the follower takes a new baseline
        // instead of reporting what changed during the pause.
        if (input.active && !sub.active) this.db.prepare('UPDATE activity_followers SET baseline_done = 0 WHERE subscription_id = ?').run(sub.id);
      }
      if (input.internalState !== undefined) this.importState(sub.id, input.internalState);
    })();
    this.changed({ kind: 'updated', id: sub.id, account: accountId });
    return this.get(accountId, sub.id);
  }

  /** DELETE (spec 3): the subscription and all its activity. */
  delete(accountId: number, idOrAlias: number | string): void {
    const sub = this.get(accountId, idOrAlias);
    this.removeNow(sub);
  }

  private removeNow(sub: Subscription): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM activity_subscriptions WHERE id = ?').run(sub.id);
      this.log.forgetAccount(sub.account);
    })();
    this.changed({ kind: 'deleted', id: sub.id, account: sub.account });
  }

  /** The follower's upstream checkpoint (v2 `upstream_checkpoint`, legacy `upstream_cursor`). */
  upstreamCheckpoint(subscriptionId: number): string | null {
    const row = this.db.prepare('SELECT upstream_cursor FROM activity_followers WHERE subscription_id = ?').get(subscriptionId) as { upstream_cursor: string | null } | undefined;
    return row?.upstream_cursor ?? null;
  }

  /** `internal_state` of an import: the upstream checkpoint a follower resumes from. */
  private importState(subscriptionId: number, state: string): void {
    if (typeof state !== 'string' || state.length > 65536) throw new ServiceError('invalid_parameters', '`internal_state` must be a string.');
    this.db
      .prepare(
        `INSERT INTO activity_followers (subscription_id, upstream_cursor, baseline_done, updated_at) VALUES (?, ?, 0, ?)
         ON CONFLICT (subscription_id) DO UPDATE SET upstream_cursor = excluded.upstream_cursor, updated_at = excluded.updated_at`,
      )
      .run(subscriptionId, state, this.now());
  }

  private async validateResources(accountId: number, api: 'storage' | 'email', input: MonitoredResource[] | undefined): Promise<MonitoredResource[]> {
    const cap = CAPS[api];
    if (input === undefined || (Array.isArray(input) && input.length === 0)) return cap.default;
    if (!Array.isArray(input)) throw new ServiceError('invalid_parameters', '`monitored_resources` must be an array of {resource, user} objects.');
    if (input.length > cap.max) throw new ServiceError('invalid_parameters', `At most ${cap.max} monitored resources are supported for this account.`);
    const out: MonitoredResource[] = [];
    for (const m of input) {
      // v1 accepted plain strings; v2 uses objects.
      const item = typeof m === 'string' ? { resource: m } : m;
      if (!item || typeof item !== 'object' || typeof item.resource !== 'string' || !item.resource) {
        throw new ServiceError('invalid_parameters', 'Each monitored resource needs a `resource` string.');
      }
      if (item.user !== undefined && typeof item.user !== 'string') throw new ServiceError('invalid_parameters', '`user` of a monitored resource must be a string.');
      if (item.user !== undefined) throw new ServiceError('invalid_parameters', '`user` applies only to multi-user (admin) accounts; this account has one user.');
      if (api === 'storage') {
        // A folder id or `root` (docs/rest.md, Activity): anything that cannot be an id at all is
        // a bad parameter; a well-formed id that names nothing is not_found, as elsewhere in a body.
        if (item.resource === 'trash') throw new ServiceError('invalid_parameters', 'The trash cannot be monitored.');
        if (item.resource !== 'root' && (isSpecialId(item.resource) || !isWellFormedId(item.resource))) {
          throw new ServiceError('invalid_parameters', `Monitored resource "${item.resource.slice(0, 100)}" is not a folder id (or \`root\`).`);
        }
        const loc = await this.storage.locate(accountId, item.resource);
        const e = loc.path === '/' ? null : await loc.connector.stat(loc.path);
        if (e && e.kind !== 'folder') throw new ServiceError('invalid_parameters', `Monitored resource "${item.resource}" is not a folder.`);
      }
      if (api === 'email') await this.mailFolder?.(accountId, item.resource);
      out.push({ resource: item.resource });
    }
    return out;
  }

  /** Upstream paths a storage subscription watches ('/' for root). */
  async monitoredPaths(sub: Subscription): Promise<string[]> {
    const paths = new Set<string>();
    for (const m of sub.monitoredResources) paths.add((await this.storage.locate(sub.account, m.resource)).path);
    return [...paths];
  }

  // ---- follower bookkeeping -----------------------------------------------------------------

  markAccessible(id: number, ok: boolean): void {
    if (ok) this.db.prepare('UPDATE activity_subscriptions SET inaccessible_since = NULL WHERE id = ? AND inaccessible_since IS NOT NULL').run(id);
    else this.db.prepare('UPDATE activity_subscriptions SET inaccessible_since = ? WHERE id = ? AND inaccessible_since IS NULL').run(this.now(), id);
  }

  markCrawlDone(id: number): void {
    this.db.prepare('UPDATE activity_subscriptions SET crawl_done = 1, modified = ? WHERE id = ?').run(this.now(), id);
  }

  /**
   * Periodic housekeeping: refreshes active subscriptions close to expiry when their account is
   * usable, and removes those inaccessible (or not renewable) for 90 days, activity included.
   */
  maintain(): { refreshed: number[]; removed: number[] } {
    const now = this.clock();
    const refreshed: number[] = [];
    const removed: number[] = [];
    for (const sub of this.all()) {
      const goneSince = Math.min(sub.inaccessibleSince ? Date.parse(sub.inaccessibleSince) : Infinity, Date.parse(sub.expiry) < now ? Date.parse(sub.expiry) : Infinity);
      if (now - goneSince >= REMOVE_AFTER_MS) {
        this.removeNow(sub);
        removed.push(sub.id);
        continue;
      }
      const accountUsable = this.accounts.row(sub.account).active === 1 && !sub.inaccessibleSince;
      if (sub.active && accountUsable && Date.parse(sub.expiry) - now < REFRESH_BEFORE_MS) {
        this.db.prepare('UPDATE activity_subscriptions SET expiry = ?, modified = ? WHERE id = ?').run(new Date(now + SUBSCRIPTION_LIFETIME_MS).toISOString(), new Date(now).toISOString(), sub.id);
        refreshed.push(sub.id);
      }
    }
    return { refreshed, removed };
  }

  // ---- the "track activity" setting ---------------------------------------------------------

  trackActivity(): boolean {
    return this.settings.get(TRACK_ACTIVITY, false);
  }

  /** Turns the setting on or off; only accounts connected afterwards get a default subscription. */
  setTrackActivity(on: boolean): void {
    this.settings.set(TRACK_ACTIVITY, on);
    if (on) this.settings.set(AUTO_THROUGH, this.maxAccountId());
  }

  private maxAccountId(): number {
    return (this.db.prepare('SELECT COALESCE(MAX(id), 0) AS m FROM accounts').get() as { m: number }).m;
  }

  /**
   * The legacy events endpoints' implicit subscription (spec 3: "one implicit subscription per
   * account"): the account's subscription, created as its default `changes` one when missing.
   */
  async implicit(accountId: number): Promise<Subscription> {
    return this.list(accountId)[0] ?? (await this.createDefault(accountId)) ?? this.list(accountId)[0]!; // last: created meanwhile
  }

  /**
   * Hook for account connection and reconnection (AccountsService.connect / update with new
   * options): with the setting on, the account gets a default subscription if it has none.
   */
  async accountConnected(accountId: number): Promise<Subscription | null> {
    if (!this.trackActivity() || this.list(accountId).length) return null;
    return this.createDefault(accountId);
  }

  /** The account's default `changes` subscription, or null when another call made one first. */
  private async createDefault(accountId: number): Promise<Subscription | null> {
    try {
      return await this.create(accountId, { isDefault: true });
    } catch (e) {
      if (e instanceof ServiceError && e.code === 'conflict') return null;
      throw e;
    }
  }

  /**
   * For the app's `accounts.changed` event (its payload names no account): subscribes every
   * account created since the last call, once.
   */
  async reconcileNewAccounts(): Promise<number[]> {
    if (!this.trackActivity()) return [];
    const through = this.settings.get(AUTO_THROUGH, 0);
    const ids = (this.db.prepare('SELECT id FROM accounts WHERE id > ? ORDER BY id').all(through) as { id: number }[]).map((r) => r.id);
    const created: number[] = [];
    for (const id of ids) {
      this.settings.set(AUTO_THROUGH, id);
      const sub = await this.accountConnected(id).catch(() => null);
      if (sub) created.push(sub.id);
    }
    return created;
  }

  private view(r: Row): Subscription {
    return {
      id: r.id,
      account: r.account_id,
      subscriptionType: r.subscription_type,
      crawlType: r.crawl_type,
      monitoredResources: JSON.parse(r.monitored_resources) as MonitoredResource[],
      active: r.active === 1,
      disableReason: r.disable_reason,
      isDefault: r.is_default === 1,
      expiry: r.expiry,
      lastCursor: r.last_cursor,
      lastCursorUpdatedAt: r.last_cursor_updated_at,
      upstreamCheckpoint: this.upstreamCheckpoint(r.id),
      inaccessibleSince: r.inaccessible_since,
      crawlDone: r.crawl_done === 1,
      created: r.created,
      modified: r.modified,
      api: this.apiOf(r.account_id),
    };
  }
}
