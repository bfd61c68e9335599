/**
 * Accounts: connect (after proving the connection works), list, rename, enable/disable, delete,
 * quota. Options, credentials included, are sealed with the keyring before they touch the disk.
 * Live connector instances are pooled per account and closed when the account changes.
 *
 * Spec 1, Account `active`: every call on a live connector is watched. Credentials the server
 * refuses (confirmed by a fresh connection) deactivate the account at once; an account that
 * could not be reached on every attempt for `unreachableAfterMs` (in at least
 * `unreachableAttempts` separate attempts) is deactivated too. Either way only reconnecting (credentials
 * that connect, or a retry that connects) makes it active again.
 */
import { z } from 'zod';
import { AccountsTable, type AccountFilter, type AccountRow } from '../cache/queries/accounts';
import { allConnectors, connectorDefinition, internalFields, locationChanges, offeredToUsers, parseOptions, secretFields } from '../connectors/registry';
import type { ConnectorKinds, ServerIdentity, StorageConnector } from '../connectors/types';
import type { Account, ConnectorInfo } from '../contract';
import type { Db } from '../cache/db';
import { ServiceError, toServiceError } from '../errors';
import type { Keyring } from '../secrets';
import type { EventBus } from './events';

/** Why an account is inactive (`disable_reason` / v1 `deactivation_code`). */
export const DISABLE_REASONS = {
  byUser: 'deactivated_by_user',
  credentialsRefused: 'credentials_refused',
  unreachable: 'unreachable',
} as const;

/** When an unreachable account is deactivated. */
export interface HealthPolicy {
  /** How long the failures in a row must have lasted. */
  unreachableAfterMs: number;
  /** In how many separate attempts at least: failures closer than `attemptGapMs` to the last one counted count once. */
  unreachableAttempts: number;
  attemptGapMs: number;
  now(): number;
}

/**
 * A week of failures in a row, seen in three attempts an hour or more apart: long enough that
 * a laptop away from its network for a weekend or a server down for maintenance keeps its
 * accounts, and a laptop opened after a week away is not judged on its first minute online;
 * short enough that a server that is gone stops being tried.
 */
export const DEFAULT_HEALTH: HealthPolicy = { unreachableAfterMs: 7 * 24 * 3600_000, unreachableAttempts: 3, attemptGapMs: 3600_000, now: Date.now };

/** Error codes that mean the server was not reached at all (anything else is an answer). */
const UNREACHABLE_CODES = new Set(['service_not_available', 'request_timeout']);

export class AccountsService {
  private readonly table: AccountsTable;
  private readonly live = new Map<number, Promise<unknown>>();
  /** Accounts with failures counted, so that a success clears them without a write each time. */
  private readonly failing = new Set<number>();
  /** A refused-credentials check in progress per account. */
  private readonly confirming = new Map<number, Promise<void>>();

  constructor(
    db: Db,
    private readonly keyring: Keyring,
    private readonly events: EventBus,
    private readonly dataDir: string,
    private readonly health: HealthPolicy = DEFAULT_HEALTH,
  ) {
    this.table = new AccountsTable(db);
    for (const row of this.table.list()) if (row.unreachable_attempts > 0) this.failing.add(row.id);
  }

  connectors(): ConnectorInfo[] {
    return allConnectors().map((def) => ({
      id: def.id,
      name: def.name,
      group: def.group,
      kind: def.kind,
      form: formSchema(def),
      offered: offeredToUsers(def),
    }));
  }

  /** The server identity to confirm before a first connection (connect form), or null. */
  async identity(service: string, rawOptions: unknown): Promise<ServerIdentity | null> {
    const def = connectorDefinition(service);
    if (!def.unconfirmedIdentity) return null;
    try {
      return await def.unconfirmedIdentity(parseOptions(def, rawOptions), { dataDir: this.dataDir, accountId: 0 });
    } catch (e) {
      const err = toServiceError(e);
      throw new ServiceError(err.code === 'internal_error' ? 'service_not_available' : err.code, `Could not reach ${def.name}: ${err.message}`, err.details, { cause: e });
    }
  }

  list(filter: AccountFilter = {}, page?: { offset: number; limit: number }): Account[] {
    return this.table.list(filter, page).map((r) => this.toAccount(r));
  }

  count(filter: AccountFilter = {}): number {
    return this.table.count(filter);
  }

  get(id: number): Account {
    return this.toAccount(this.row(id));
  }

  row(id: number): AccountRow {
    const row = Number.isSafeInteger(id) ? this.table.get(id) : undefined;
    if (!row) throw new ServiceError('not_found', `Account ${id} was not found.`);
    return row;
  }

  /** The decrypted options of an account (credentials included): main process only. */
  options(id: number): Record<string, unknown> {
    return JSON.parse(this.keyring.open('credentials', this.row(id).options).toString('utf8'));
  }

  /** Builds an instance from options and proves it works; closes it again unless kept. */
  private async verified(service: string, rawOptions: unknown, accountId: number) {
    const def = connectorDefinition(service);
    const options = parseOptions(def, rawOptions);
    const instance = (await def.create(options, { dataDir: this.dataDir, accountId })) as ConnectorKinds[keyof ConnectorKinds];
    try {
      if (def.verify) await def.verify(instance as never);
      else await (instance as StorageConnector).list('/');
    } catch (e) {
      await (instance as { close(): Promise<void> }).close().catch(() => {});
      const err = toServiceError(e);
      throw new ServiceError(
        err.code === 'internal_error' ? 'service_not_available' : err.code,
        `Could not connect to ${def.name}: ${err.message}`,
        err.details,
        { cause: e },
      );
    }
    return { def, options, instance };
  }

  /** Tests options; with `accountId`, they are changes to that account's saved options (of the same service). */
  async test(service: string, options: Record<string, unknown>, accountId?: number): Promise<void> {
    if (accountId !== undefined && this.row(accountId).service !== service) throw new ServiceError('invalid_parameters', `Account ${accountId} is not a ${service} account.`);
    const merged = accountId === undefined ? options : { ...this.options(accountId), ...options };
    const { instance } = await this.verified(service, merged, accountId ?? 0);
    await (instance as { close(): Promise<void> }).close();
  }

  /** Connects a new account; nothing is stored unless the connection works. */
  async connect(input: { service: string; options: unknown; account?: string; isDefault?: boolean; tokenExpiry?: string | null; refreshTokenExpiry?: string | null }): Promise<Account> {
    const { def, options, instance } = await this.verified(input.service, input.options, 0);
    await (instance as { close(): Promise<void> }).close();
    const row = this.table.insert({
      service: def.id,
      account: input.account?.trim() || def.describe(options),
      options: this.keyring.seal('credentials', Buffer.from(JSON.stringify(options))),
      isDefault: input.isDefault,
      tokenExpiry: input.tokenExpiry,
      refreshTokenExpiry: input.refreshTokenExpiry,
    });
    this.events.emit('accounts.changed', {});
    return this.toAccount(row);
  }

  /**
   * Renames, enables/disables, or replaces the connection options (re-verified first).
   * `credentialsOnly` (an account's own bearer token or key): options may change only where
   * they are credentials; anything that moves the account elsewhere is refused before any
   * connection is made.
   */
  async update(
    id: number,
    changes: { account?: string; active?: boolean; options?: Record<string, unknown>; tokenExpiry?: string | null; refreshTokenExpiry?: string | null },
    scope: { credentialsOnly?: boolean } = {},
  ): Promise<Account> {
    const row = this.row(id);
    const patch: Parameters<AccountsTable['update']>[1] = {};
    const automatic = !row.active && row.disable_reason !== null && row.disable_reason !== DISABLE_REASONS.byUser;
    // Spec 1, Account states: after an automatic deactivation only reconnecting reactivates.
    if (automatic && changes.active === true && !changes.options) {
      throw new ServiceError(
        'conflict',
        `Account ${id} was deactivated because ${this.reasonText(row)}; setting active alone cannot fix that. Reconnect it: update its credentials, or retry with the current ones.`,
      );
    }
    if (changes.options) {
      const current = this.options(id);
      const merged = { ...current, ...changes.options };
      if (scope.credentialsOnly) {
        const def = connectorDefinition(row.service);
        const parsed = def.options.safeParse(merged);
        const moved = locationChanges(def, current, (parsed.success ? parsed.data : merged) as Record<string, unknown>);
        if (moved.length) {
          throw new ServiceError(
            'forbidden',
            `An account's own token may change only its credentials; changing ${moved.map((k) => `\`${k}\``).join(', ')} needs an API key.`,
          );
        }
      }
      const { options, instance } = await this.verified(row.service, merged, id);
      await (instance as { close(): Promise<void> }).close();
      patch.options = this.keyring.seal('credentials', Buffer.from(JSON.stringify(options)));
      // Credentials that connect are a reconnection (spec 1): an automatically deactivated account is active again.
      if (automatic && changes.active !== false) Object.assign(patch, this.healthy());
    }
    if (changes.account !== undefined) {
      const name = changes.account.trim();
      if (!name) throw new ServiceError('invalid_parameters', 'The account name cannot be empty.');
      patch.account = name;
    }
    if (changes.active === false) Object.assign(patch, { active: 0, disable_reason: DISABLE_REASONS.byUser, disable_message: null });
    else if (changes.active === true && !automatic) Object.assign(patch, this.healthy());
    if (changes.tokenExpiry !== undefined) patch.token_expiry = changes.tokenExpiry;
    if (changes.refreshTokenExpiry !== undefined) patch.refresh_token_expiry = changes.refreshTokenExpiry;
    this.table.update(id, patch);
    await this.release(id);
    this.events.emit('accounts.changed', {});
    return this.get(id);
  }

  /**
   * Reconnects an account (the UI's Reconnect and Retry): the given credentials, or the stored
   * ones, must connect; then they are kept and the account is active again, whatever deactivated it.
   */
  async reconnect(id: number, options?: Record<string, unknown>): Promise<Account> {
    const row = this.row(id);
    const { options: parsed, instance } = await this.verified(row.service, { ...this.options(id), ...options }, id);
    await (instance as { close(): Promise<void> }).close();
    this.table.update(id, { ...(options ? { options: this.keyring.seal('credentials', Buffer.from(JSON.stringify(parsed))) } : {}), ...this.healthy() });
    this.failing.delete(id);
    await this.release(id);
    this.events.emit('accounts.changed', {});
    return this.get(id);
  }

  private healthy() {
    return { active: 1, disable_reason: null, disable_message: null, unreachable_since: null, unreachable_last: null, unreachable_attempts: 0 };
  }

  /** Why an inactive account is inactive, in words. */
  private reasonText(row: AccountRow): string {
    const said = row.disable_message ? ` (${row.disable_message})` : '';
    if (row.disable_reason === DISABLE_REASONS.credentialsRefused) return `the server refused its credentials${said}`;
    if (row.disable_reason === DISABLE_REASONS.unreachable) return `its server could not be reached since ${row.unreachable_since ?? 'a long time'}${said}`;
    return 'it was deactivated';
  }

  /** `observed`, safe for a call that ends after the app closed its database. */
  private note(id: number, error?: unknown): void {
    try {
      this.observed(id, error);
    } catch (e) {
      healthNotRecorded(id, e);
    }
  }

  /** Records what a call on the live connector of account `id` told about the account's health. */
  private observed(id: number, error?: unknown): void {
    const code = error === undefined ? null : toServiceError(error).code;
    if (code === 'upstream_auth_failed') return void this.confirmRefused(id, (error as Error).message);
    if (code !== null && UNREACHABLE_CODES.has(code)) return this.unreachable(id, toServiceError(error).message);
    // Any other answer, an error such as not_found included, came from the server.
    if (this.failing.delete(id)) this.table.update(id, { unreachable_since: null, unreachable_last: null, unreachable_attempts: 0 });
  }

  private unreachable(id: number, message: string): void {
    const row = this.table.get(id);
    if (!row?.active) return;
    const now = this.health.now();
    const at = new Date(now).toISOString();
    this.failing.add(id);
    if (row.unreachable_last && now - Date.parse(row.unreachable_last) < this.health.attemptGapMs) return;
    const since = row.unreachable_since ?? at;
    const attempts = row.unreachable_attempts + 1;
    this.table.update(id, { unreachable_since: since, unreachable_last: at, unreachable_attempts: attempts });
    if (attempts >= this.health.unreachableAttempts && now - Date.parse(since) >= this.health.unreachableAfterMs) {
      void this.deactivate(id, DISABLE_REASONS.unreachable, message);
    }
  }

  /**
   * A refusal on one call could be about one object (a permission), so a fresh connection with
   * the stored credentials decides: refused again, the account is deactivated.
   */
  private confirmRefused(id: number, message: string): Promise<void> {
    const running = this.confirming.get(id);
    if (running) return running;
    const check = (async () => {
      const row = this.table.get(id);
      if (!row?.active) return;
      try {
        const { instance } = await this.verified(row.service, this.options(id), id);
        await (instance as { close(): Promise<void> }).close();
      } catch (e) {
        if (toServiceError(e).code === 'upstream_auth_failed') await this.deactivate(id, DISABLE_REASONS.credentialsRefused, message);
      }
    })()
      .catch((e: unknown) => healthNotRecorded(id, e))
      .finally(() => this.confirming.delete(id));
    this.confirming.set(id, check);
    return check;
  }

  private async deactivate(id: number, reason: string, message: string): Promise<void> {
    const row = this.table.get(id);
    if (!row?.active) return;
    this.table.update(id, { active: 0, disable_reason: reason, disable_message: message });
    await this.release(id);
    this.events.emit('accounts.changed', {});
  }

  /** Waits for refused-credentials checks in progress (tests, and before reporting an account). */
  async settled(): Promise<void> {
    await Promise.all(this.confirming.values());
  }

  /**
   * The connector with every call watched (`observed`): promise-returning methods, its own and
   * those of its `features`, report success or failure. Methods run on the real object, so
   * private fields keep working.
   */
  private watched<T extends object>(id: number, target: T, nested = false): T {
    let features: { of: object; proxy: object } | undefined;
    return new Proxy(target, {
      get: (t, prop) => {
        const value: unknown = Reflect.get(t, prop, t);
        if (prop === 'features' && !nested && value && typeof value === 'object') {
          if (features?.of !== value) features = { of: value, proxy: this.watched(id, value, true) };
          return features.proxy;
        }
        if (typeof value !== 'function' || prop === 'constructor') return value;
        if (prop === 'close') return (value as () => unknown).bind(t);
        return (...args: unknown[]) => {
          const result: unknown = (value as (...a: unknown[]) => unknown).apply(t, args);
          if (result instanceof Promise) result.then(() => this.note(id), (e: unknown) => this.note(id, e));
          return result;
        };
      },
    });
  }

  /** The import credentials kept beside the options (`refresh_token`, a `token_secret` no option holds). */
  importCredentials(id: number): { refresh_token?: string; token_secret?: string } {
    const sealed = this.row(id).import_credentials;
    return sealed ? JSON.parse(this.keyring.open('credentials', sealed).toString('utf8')) : {};
  }

  /** Keeps import credentials no connector option holds, sealed like the options. */
  setImportCredentials(id: number, changes: { refresh_token?: string; token_secret?: string }): void {
    const merged = { ...this.importCredentials(id), ...changes };
    this.table.update(id, { import_credentials: this.keyring.seal('credentials', Buffer.from(JSON.stringify(merged))) });
  }

  async delete(id: number): Promise<void> {
    this.row(id);
    await this.release(id);
    this.table.delete(id);
    this.events.emit('accounts.changed', {});
  }

  /** The live connector of an active account, created on first use. */
  async instance<K extends keyof ConnectorKinds>(id: number, kind: K): Promise<ConnectorKinds[K]> {
    const row = this.row(id);
    const def = connectorDefinition(row.service);
    if (def.kind !== kind) throw new ServiceError('not_implemented', `${def.name} accounts do not support ${kind}.`);
    if (!row.active) {
      if (row.disable_reason === null || row.disable_reason === DISABLE_REASONS.byUser) throw new ServiceError('forbidden', `Account ${id} is disabled; enable it to use it.`);
      throw new ServiceError('forbidden', `Account ${id} was deactivated because ${this.reasonText(row)}. Reconnect it to use it again.`);
    }
    let p = this.live.get(id);
    if (!p) {
      // `create` may answer a promise (a connector loaded on first use): the connector it
      // resolves to is the one watched, not the promise.
      p = Promise.resolve()
        .then(() => def.create(parseOptions(def, this.options(id)), { dataDir: this.dataDir, accountId: id }))
        .then((connector) => this.watched(id, connector as object));
      p.catch(() => this.live.delete(id));
      this.live.set(id, p);
    }
    return p as Promise<ConnectorKinds[K]>;
  }

  storage(id: number): Promise<StorageConnector> {
    return this.instance(id, 'storage');
  }

  async quota(id: number): Promise<{ used: number | null; total: number | null } | null> {
    const row = this.row(id);
    if (connectorDefinition(row.service).kind !== 'storage') return null;
    const c = await this.storage(id);
    return c.features.quota ? c.features.quota() : null;
  }

  private async release(id: number): Promise<void> {
    const p = this.live.get(id);
    this.live.delete(id);
    if (p) await p.then((c) => (c as { close(): Promise<void> }).close()).catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([...this.live.keys()].map((id) => this.release(id)));
  }

  toAccount(row: AccountRow): Account {
    const def = connectorDefinition(row.service);
    const options = JSON.parse(this.keyring.open('credentials', row.options).toString('utf8')) as Record<string, unknown>;
    for (const key of secretFields(def)) delete options[key];
    return {
      id: row.id,
      service: row.service,
      serviceName: def.name,
      account: row.account,
      active: row.active === 1,
      disableReason: row.disable_reason,
      disableMessage: row.active ? null : row.disable_message,
      unreachableSince: row.unreachable_since,
      admin: row.admin === 1,
      isDefault: row.is_default === 1,
      userId: row.user_id,
      tokenExpiry: row.token_expiry,
      refreshTokenExpiry: row.refresh_token_expiry,
      created: row.created,
      modified: row.modified,
      settings: options,
    };
  }
}

/** A health record that failed; after the app closed its database there is nothing to record. */
function healthNotRecorded(id: number, e: unknown): void {
  if (!/database connection is not open/i.test((e as Error)?.message ?? '')) console.error(`Account ${id}: recording its health failed:`, e);
}

/** The connect form's JSON Schema of a connector's options, without its `internal` fields. */
function formSchema(def: ReturnType<typeof connectorDefinition>): Record<string, unknown> {
  const schema = z.toJSONSchema(def.options, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const hidden = internalFields(def);
  if (!hidden.length) return schema;
  const properties = { ...(schema.properties as Record<string, unknown>) };
  for (const key of hidden) delete properties[key];
  const required = (schema.required as string[] | undefined)?.filter((k) => !hidden.includes(k));
  return { ...schema, properties, ...(required ? { required } : {}) };
}
