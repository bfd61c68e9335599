/**
 * Accounts: connect (after proving the connection works), list, rename, enable/disable, delete,
 * quota. Options, credentials included, are sealed with the keyring before they touch the disk.
 * Live connector instances are pooled per account and closed when the account changes.
 */
import { z } from 'zod';
import { AccountsTable, type AccountFilter, type AccountRow } from '../cache/queries/accounts';
import { allConnectors, connectorDefinition, locationChanges, parseOptions, secretFields } from '../connectors/registry';
import type { ConnectorKinds, StorageConnector } from '../connectors/types';
import type { Account, ConnectorInfo } from '../contract';
import type { Db } from '../cache/db';
import { ServiceError, toServiceError } from '../errors';
import type { Keyring } from '../secrets';
import type { EventBus } from './events';

export class AccountsService {
  private readonly table: AccountsTable;
  private readonly live = new Map<number, Promise<unknown>>();

  constructor(
    db: Db,
    private readonly keyring: Keyring,
    private readonly events: EventBus,
    private readonly dataDir: string,
  ) {
    this.table = new AccountsTable(db);
  }

  connectors(): ConnectorInfo[] {
    return allConnectors().map((def) => ({
      id: def.id,
      name: def.name,
      group: def.group,
      kind: def.kind,
      form: z.toJSONSchema(def.options, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
    }));
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

  async test(service: string, options: unknown): Promise<void> {
    const { instance } = await this.verified(service, options, 0);
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
    }
    if (changes.account !== undefined) {
      const name = changes.account.trim();
      if (!name) throw new ServiceError('invalid_parameters', 'The account name cannot be empty.');
      patch.account = name;
    }
    if (changes.active !== undefined) {
      patch.active = changes.active ? 1 : 0;
      patch.disable_reason = changes.active ? null : 'deactivated_by_user';
    }
    if (changes.tokenExpiry !== undefined) patch.token_expiry = changes.tokenExpiry;
    if (changes.refreshTokenExpiry !== undefined) patch.refresh_token_expiry = changes.refreshTokenExpiry;
    this.table.update(id, patch);
    await this.release(id);
    this.events.emit('accounts.changed', {});
    return this.get(id);
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
    if (!row.active) throw new ServiceError('forbidden', `Account ${id} is disabled; enable it to use it.`);
    let p = this.live.get(id);
    if (!p) {
      p = Promise.resolve().then(() => def.create(parseOptions(def, this.options(id)), { dataDir: this.dataDir, accountId: id }));
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
