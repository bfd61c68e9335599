import { nowIso, statement, type Db } from '../db';

export interface AccountRow {
  id: number;
  service: string;
  account: string;
  options: Buffer;
  active: number;
  disable_reason: string | null;
  /** What the server said when the account was deactivated automatically. */
  disable_message: string | null;
  /** When the failed attempts to reach it in a row began, the last one counted, and how many were counted. */
  unreachable_since: string | null;
  unreachable_last: string | null;
  unreachable_attempts: number;
  admin: number;
  user_id: string | null;
  token_expiry: string | null;
  refresh_token_expiry: string | null;
  is_default: number;
  /** Sealed JSON of the import credentials no connector option holds (refresh_token, token_secret). */
  import_credentials: Buffer | null;
  created: string;
  modified: string;
}

export interface AccountFilter {
  active?: boolean;
  admin?: boolean;
  service?: string;
}

/**
 * Rows read by id, per database: every REST request reads its account's row several times.
 * Every write of the table goes through AccountsTable, which forgets the rows it changes.
 */
const rowsByDb = new WeakMap<Db, Map<number, Readonly<AccountRow>>>();

export class AccountsTable {
  private readonly rows: Map<number, Readonly<AccountRow>>;

  constructor(private readonly db: Db) {
    let rows = rowsByDb.get(db);
    if (!rows) rowsByDb.set(db, (rows = new Map()));
    this.rows = rows;
  }

  insert(row: { service: string; account: string; options: Buffer; isDefault?: boolean; tokenExpiry?: string | null; refreshTokenExpiry?: string | null }): AccountRow {
    const now = nowIso();
    const { lastInsertRowid } = this.db
      .prepare(
        `INSERT INTO accounts (service, account, options, is_default, token_expiry, refresh_token_expiry, created, modified)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(row.service, row.account, row.options, row.isDefault ? 1 : 0, row.tokenExpiry ?? null, row.refreshTokenExpiry ?? null, now, now);
    return this.get(Number(lastInsertRowid))!;
  }

  get(id: number): AccountRow | undefined {
    let row = this.rows.get(id);
    if (row === undefined) {
      const read = statement(this.db, 'SELECT * FROM accounts WHERE id = ?').get(id) as AccountRow | undefined;
      if (read === undefined) return undefined;
      row = Object.freeze(read);
      this.rows.set(id, row);
    }
    return row as AccountRow;
  }

  private where(filter: AccountFilter): [string, unknown[]] {
    const clauses: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      clauses.push(clause);
      params.push(value);
    };
    if (filter.active !== undefined) add('active = ?', filter.active ? 1 : 0);
    if (filter.admin !== undefined) add('admin = ?', filter.admin ? 1 : 0);
    if (filter.service !== undefined) add('service = ?', filter.service);
    return [clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params];
  }

  list(filter: AccountFilter = {}, page?: { offset: number; limit: number }): AccountRow[] {
    const [where, params] = this.where(filter);
    const limit = page ? ` LIMIT ${page.limit | 0} OFFSET ${page.offset | 0}` : '';
    return this.db.prepare(`SELECT * FROM accounts ${where} ORDER BY id${limit}`).all(...params) as AccountRow[];
  }

  count(filter: AccountFilter = {}): number {
    const [where, params] = this.where(filter);
    return (this.db.prepare(`SELECT count(*) AS n FROM accounts ${where}`).get(...params) as { n: number }).n;
  }

  update(
    id: number,
    changes: Partial<
      Pick<AccountRow, 'account' | 'options' | 'active' | 'disable_reason' | 'disable_message' | 'unreachable_since' | 'unreachable_last' | 'unreachable_attempts' | 'token_expiry' | 'refresh_token_expiry' | 'import_credentials'>
    >,
  ): void {
    const keys = Object.keys(changes) as (keyof typeof changes)[];
    if (keys.length === 0) return;
    const sets = keys.map((k) => `${k} = @${k}`).join(', ');
    this.rows.delete(id);
    this.db.prepare(`UPDATE accounts SET ${sets}, modified = @modified WHERE id = @id`).run({ ...changes, modified: nowIso(), id });
  }

  delete(id: number): void {
    this.rows.delete(id);
    this.db.prepare('DELETE FROM accounts WHERE id = ?').run(id);
  }
}
