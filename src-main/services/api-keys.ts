/**
 * Credentials of the localhost REST API (spec 1, Authentication):
 * - application API keys (`Authorization: APIKey …`): full access; created, listed and revoked
 *   in Settings and by the CLI; `ensure(key)` backs `serve --api-key` / TRIBUTARY_API_KEY;
 * - per-account bearer tokens (`Authorization: Bearer …`): one account each, issued lazily;
 * - deprecated v0 account keys (`Authorization: AccountKey …`).
 * Secrets are looked up by SHA-256 and kept sealed with the keyring so they can be shown again.
 */
import { createHash, randomBytes } from 'node:crypto';
import { nowIso, statement, type Db } from '../cache/db';
import { ServiceError } from '../errors';
import type { Keyring } from '../secrets';

export interface ApiKey {
  id: number;
  name: string;
  /** First characters of the key, enough to recognise it in a list. */
  prefix: string;
  active: boolean;
  created: string;
  modified: string;
  lastUsed: string | null;
}

export interface AccountKey {
  id: number;
  key: string;
  active: boolean;
  account: number;
  expiration: string | null;
  created: string;
  modified: string;
}

interface ApiKeyRow {
  id: number;
  name: string;
  key_hash: string;
  prefix: string;
  active: number;
  created: string;
  modified: string;
  last_used: string | null;
}

interface TokenRow {
  id: number;
  account_id: number;
  kind: 'bearer' | 'account_key';
  token_hash: string;
  sealed: Buffer;
  active: number;
  expiration: string | null;
  created: string;
  modified: string;
}

const hash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');
const newSecret = (prefix: string) => `${prefix}${randomBytes(24).toString('base64url')}`;
/** Key material a user may choose (`serve --api-key`): printable ASCII without spaces or commas. */
const KEY_SHAPE = /^[\x21-\x2b\x2d-\x7e]{16,512}$/;

/** `last_used` is written at most this often per key (a write per request would be wasteful). */
const LAST_USED_EVERY_MS = 60_000;
const MAX_ACTIVE_IDS = 1000;

export class ApiKeysService {
  private readonly lastUsedWritten = new Map<number, number>();
  /** Active keys by hash, as found on requests; forgotten when a key is revoked or deleted. */
  private readonly activeIds = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
  ) {}

  // ---- application API keys -----------------------------------------------------------------

  /** A new random key; the plaintext is returned only here. */
  create(name = 'API key'): { apiKey: ApiKey; key: string } {
    const key = newSecret('trb_');
    return { apiKey: this.insert(name, key), key };
  }

  /** Makes sure `key` exists and is active (CLI `serve --api-key KEY`, TRIBUTARY_API_KEY). */
  ensure(key: string, name = 'Command line'): ApiKey {
    if (!KEY_SHAPE.test(key)) {
      throw new ServiceError('invalid_parameters', 'An API key is 16 to 512 printable characters, without spaces or commas.');
    }
    const row = this.db.prepare('SELECT * FROM api_keys WHERE key_hash = ?').get(hash(key)) as ApiKeyRow | undefined;
    if (!row) return this.insert(name, key);
    if (!row.active) this.db.prepare('UPDATE api_keys SET active = 1, modified = ? WHERE id = ?').run(nowIso(), row.id);
    return this.get(row.id);
  }

  private insert(name: string, key: string): ApiKey {
    const now = nowIso();
    const { lastInsertRowid } = this.db
      .prepare('INSERT INTO api_keys (name, key_hash, prefix, sealed, created, modified) VALUES (?, ?, ?, ?, ?, ?)')
      .run(name.slice(0, 200) || 'API key', hash(key), key.slice(0, 8), this.keyring.seal('credentials', Buffer.from(key)), now, now);
    return this.get(Number(lastInsertRowid));
  }

  /**
   * The secret webhook signatures are computed with (spec 3, JSON webhook: "When the
   * application has several API keys, the oldest active one is used"); null when there is none.
   */
  signingKey(): string | null {
    const row = this.db.prepare('SELECT sealed FROM api_keys WHERE active = 1 AND sealed IS NOT NULL ORDER BY created, id LIMIT 1').get() as
      | { sealed: Buffer }
      | undefined;
    return row ? this.keyring.open('credentials', row.sealed).toString('utf8') : null;
  }

  list(): ApiKey[] {
    return (this.db.prepare('SELECT * FROM api_keys ORDER BY id').all() as ApiKeyRow[]).map(toApiKey);
  }

  get(id: number): ApiKey {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as ApiKeyRow | undefined;
    if (!row) throw new ServiceError('not_found', `API key ${id} was not found.`);
    return toApiKey(row);
  }

  /** Revoked keys stay listed (inactive) and authenticate nothing; `ensure` can revive one. */
  revoke(id: number): ApiKey {
    this.get(id);
    this.activeIds.clear();
    this.db.prepare('UPDATE api_keys SET active = 0, modified = ? WHERE id = ?').run(nowIso(), id);
    return this.get(id);
  }

  delete(id: number): void {
    this.get(id);
    this.activeIds.clear();
    this.db.prepare('DELETE FROM api_keys WHERE id = ?').run(id);
  }

  /** The active key with this secret, or undefined. */
  verify(key: string): ApiKey | undefined {
    const id = this.verifiedId(key);
    return id === undefined ? undefined : this.get(id);
  }

  /** The id of the active key with this secret (every REST request asks), or undefined. */
  verifiedId(key: string): number | undefined {
    const keyHash = hash(key);
    let id = this.activeIds.get(keyHash);
    if (id === undefined) {
      id = (statement(this.db, 'SELECT id FROM api_keys WHERE key_hash = ? AND active = 1').get(keyHash) as { id: number } | undefined)?.id;
      if (id === undefined) return undefined;
      if (this.activeIds.size >= MAX_ACTIVE_IDS) this.activeIds.clear();
      this.activeIds.set(keyHash, id);
    }
    const now = Date.now();
    if (now - (this.lastUsedWritten.get(id) ?? 0) >= LAST_USED_EVERY_MS) {
      this.lastUsedWritten.set(id, now);
      this.db.prepare('UPDATE api_keys SET last_used = ? WHERE id = ?').run(nowIso(), id);
    }
    return id;
  }

  // ---- per-account bearer tokens -------------------------------------------------------------

  /** The account's bearer token, issued on first request (accounts connected before the API). */
  bearerToken(accountId: number): string {
    const row = this.db
      .prepare("SELECT * FROM account_tokens WHERE account_id = ? AND kind = 'bearer' AND active = 1 ORDER BY id LIMIT 1")
      .get(accountId) as TokenRow | undefined;
    if (row) return this.open(row);
    return this.issue(accountId, 'bearer', null).secret;
  }

  /** Issues a bearer token to every account that has none (run when accounts change). */
  issueMissingBearerTokens(): number {
    const ids = this.db
      .prepare("SELECT id FROM accounts WHERE id NOT IN (SELECT account_id FROM account_tokens WHERE kind = 'bearer' AND active = 1)")
      .pluck()
      .all() as number[];
    for (const id of ids) this.issue(id, 'bearer', null);
    return ids.length;
  }

  /** Invalidates the account's bearer tokens; the next `bearerToken` call issues a new one. */
  revokeBearerTokens(accountId: number): void {
    this.db.prepare("DELETE FROM account_tokens WHERE account_id = ? AND kind = 'bearer'").run(accountId);
  }

  /** Account id of an active, unexpired token of `kind`, or undefined. */
  verifyAccountToken(secret: string, kind: 'bearer' | 'account_key'): number | undefined {
    const row = statement(this.db, 'SELECT * FROM account_tokens WHERE token_hash = ? AND kind = ?').get(hash(secret), kind) as TokenRow | undefined;
    if (!row || !row.active || expired(row)) return undefined;
    return row.account_id;
  }

  // ---- deprecated account keys (v0) ----------------------------------------------------------

  createAccountKey(accountId: number, expiration: string | null = null): AccountKey {
    return this.toAccountKey(this.issue(accountId, 'account_key', expiration).row);
  }

  /**
   * Keys of the given accounts, most recently modified first (spec 1, Account keys). Expired keys
   * are left out by the same test that refuses them (`expired`), so a key that authenticates is
   * always listed.
   */
  listAccountKeys(accountIds: number[], page: { offset: number; limit: number }): { total: number; keys: AccountKey[] } {
    const rows = (
      this.db
        .prepare(`SELECT * FROM account_tokens WHERE kind = 'account_key' AND account_id IN (${accountIds.map(() => '?').join(',')}) ORDER BY modified DESC, id DESC`)
        .all(...accountIds) as TokenRow[]
    ).filter((r) => !expired(r));
    return { total: rows.length, keys: rows.slice(page.offset, page.offset + page.limit).map((r) => this.toAccountKey(r)) };
  }

  getAccountKey(accountId: number, id: number): AccountKey {
    const row = this.db
      .prepare("SELECT * FROM account_tokens WHERE id = ? AND account_id = ? AND kind = 'account_key'")
      .get(id, accountId) as TokenRow | undefined;
    // An expired key behaves like a deleted key (spec 1, Account key states).
    if (!row || expired(row)) throw new ServiceError('not_found', `Account key ${id} was not found.`);
    return this.toAccountKey(row);
  }

  deleteAccountKey(accountId: number, id: number): void {
    this.getAccountKey(accountId, id);
    this.db.prepare('DELETE FROM account_tokens WHERE id = ?').run(id);
  }

  private issue(accountId: number, kind: TokenRow['kind'], expiration: string | null): { secret: string; row: TokenRow } {
    const secret = newSecret(kind === 'bearer' ? 'trbt_' : 'trbk_');
    const now = nowIso();
    const { lastInsertRowid } = this.db
      .prepare('INSERT INTO account_tokens (account_id, kind, token_hash, sealed, expiration, created, modified) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(accountId, kind, hash(secret), this.keyring.seal('credentials', Buffer.from(secret, 'utf8')), expiration, now, now);
    const row = this.db.prepare('SELECT * FROM account_tokens WHERE id = ?').get(Number(lastInsertRowid)) as TokenRow;
    return { secret, row };
  }

  private open(row: TokenRow): string {
    return this.keyring.open('credentials', row.sealed).toString('utf8');
  }

  private toAccountKey(row: TokenRow): AccountKey {
    return {
      id: row.id,
      key: this.open(row),
      active: row.active === 1,
      account: row.account_id,
      expiration: row.expiration,
      created: row.created,
      modified: row.modified,
    };
  }
}

/** Whether a token's expiration has passed; the one test of listing, reading and authenticating. */
function expired(row: TokenRow): boolean {
  return row.expiration !== null && !(Date.parse(row.expiration) > Date.now());
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return { id: row.id, name: row.name, prefix: row.prefix, active: row.active === 1, created: row.created, modified: row.modified, lastUsed: row.last_used };
}
