/**
 * Shared links: a public URL served by Tributary itself (no auth) for one file. A link can be
 * direct (the bytes) or not (a small download page), expire, require a password, or be switched
 * off; once inactive or expired it answers 403, once deleted 404.
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { nowIso, type Db } from '../cache/db';
import { ServiceError } from '../errors';

export interface Link {
  id: string;
  /** Path segment of the public URL (`/l/{token}`). */
  token: string;
  account: number;
  fileId: string;
  direct: boolean;
  active: boolean;
  expiration: string | null;
  hasPassword: boolean;
  created: string;
  modified: string;
}

export interface LinkChanges {
  direct?: boolean;
  active?: boolean;
  /** ISO 8601 timestamp; null removes the expiration. */
  expiration?: string | null;
  /** null or '' removes the password. */
  password?: string | null;
}

interface LinkRow {
  id: string;
  token: string;
  account_id: number;
  file_id: string;
  direct: number;
  active: number;
  expiration: string | null;
  password_hash: string | null;
  created: string;
  modified: string;
}

function hashPassword(password: string): string {
  const salt = randomBytes(16);
  return `${salt.toString('base64url')}.${scryptSync(password, salt, 32).toString('base64url')}`;
}

function checkPassword(stored: string, given: string): boolean {
  const [salt, digest] = stored.split('.');
  const expected = Buffer.from(digest!, 'base64url');
  const actual = scryptSync(given, Buffer.from(salt!, 'base64url'), 32);
  return timingSafeEqual(expected, actual);
}

function normaliseExpiration(value: string | null | undefined): string | null | undefined {
  if (value === undefined || value === null) return value;
  const t = Date.parse(value);
  if (typeof value !== 'string' || Number.isNaN(t)) throw new ServiceError('invalid_parameters', '`expiration` must be an ISO 8601 timestamp.');
  return new Date(t).toISOString();
}

export class LinksService {
  constructor(private readonly db: Db) {}

  create(accountId: number, fileId: string, options: LinkChanges = {}): Link {
    const now = nowIso();
    const id = randomBytes(12).toString('base64url');
    const token = randomBytes(24).toString('base64url');
    this.db
      .prepare(
        `INSERT INTO links (id, token, account_id, file_id, direct, active, expiration, password_hash, created, modified)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        token,
        accountId,
        fileId,
        options.direct ? 1 : 0,
        options.active === false ? 0 : 1,
        normaliseExpiration(options.expiration) ?? null,
        options.password ? hashPassword(options.password) : null,
        now,
        now,
      );
    return this.get(accountId, id);
  }

  list(accountId: number, filter: { active?: boolean }, page: { offset: number; limit: number }): { total: number; links: Link[] } {
    const where = `account_id = ?${filter.active === undefined ? '' : ' AND active = ?'}`;
    const params: unknown[] = filter.active === undefined ? [accountId] : [accountId, filter.active ? 1 : 0];
    const total = (this.db.prepare(`SELECT count(*) AS n FROM links WHERE ${where}`).get(...params) as { n: number }).n;
    const rows = this.db.prepare(`SELECT * FROM links WHERE ${where} ORDER BY created DESC, id LIMIT ? OFFSET ?`).all(...params, page.limit, page.offset) as LinkRow[];
    return { total, links: rows.map(toLink) };
  }

  get(accountId: number, id: string): Link {
    const row = this.db.prepare('SELECT * FROM links WHERE id = ? AND account_id = ?').get(id, accountId) as LinkRow | undefined;
    if (!row) throw new ServiceError('not_found', 'No link has this id in this account.');
    return toLink(row);
  }

  update(accountId: number, id: string, changes: LinkChanges): Link {
    this.get(accountId, id);
    const sets: string[] = [];
    const params: unknown[] = [];
    const set = (column: string, value: unknown) => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (changes.direct !== undefined) set('direct', changes.direct ? 1 : 0);
    if (changes.active !== undefined) set('active', changes.active ? 1 : 0);
    if (changes.expiration !== undefined) set('expiration', normaliseExpiration(changes.expiration));
    if (changes.password !== undefined) set('password_hash', changes.password ? hashPassword(changes.password) : null);
    sets.push('modified = ?');
    params.push(nowIso());
    this.db.prepare(`UPDATE links SET ${sets.join(', ')} WHERE id = ?`).run(...params, id);
    return this.get(accountId, id);
  }

  delete(accountId: number, id: string): void {
    this.get(accountId, id);
    this.db.prepare('DELETE FROM links WHERE id = ?').run(id);
  }

  /**
   * The link behind a public token, if it may be served now: not_found when unknown or deleted,
   * forbidden when inactive, expired, or the password is missing or wrong.
   */
  resolve(token: string, password: string | undefined): Link {
    const row = this.db.prepare('SELECT * FROM links WHERE token = ?').get(token) as LinkRow | undefined;
    if (!row) throw new ServiceError('not_found', 'This link does not exist.');
    if (!row.active) throw new ServiceError('forbidden', 'This link has been deactivated.');
    if (row.expiration && Date.parse(row.expiration) <= Date.now()) throw new ServiceError('forbidden', 'This link has expired.');
    if (row.password_hash && (password === undefined || !checkPassword(row.password_hash, password))) {
      throw new ServiceError('forbidden', 'This link needs the right password (query parameter `password`).');
    }
    return toLink(row);
  }
}

function toLink(row: LinkRow): Link {
  return {
    id: row.id,
    token: row.token,
    account: row.account_id,
    fileId: row.file_id,
    direct: row.direct === 1,
    active: row.active === 1,
    expiration: row.expiration,
    hasPassword: row.password_hash !== null,
    created: row.created,
    modified: row.modified,
  };
}
