/**
 * Shared links: a public URL served by Tributary itself (no auth) for one file. A link can be
 * direct (the bytes) or not (a small download page), expire, require a password, or be switched
 * off; once inactive or expired it answers 403, once deleted 404.
 */
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
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

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

// scrypt runs on libuv's thread pool: a client hammering a link's password must not stall
// every other request of the server, as the synchronous hash on the main thread did.
async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `${salt.toString('base64url')}.${(await scryptAsync(password, salt, 32)).toString('base64url')}`;
}

async function checkPassword(stored: string, given: string): Promise<boolean> {
  const [salt, digest] = stored.split('.');
  const expected = Buffer.from(digest!, 'base64url');
  const actual = await scryptAsync(given, Buffer.from(salt!, 'base64url'), 32);
  return timingSafeEqual(expected, actual);
}

/** Wrong passwords a link accepts per window before it answers 429 until the window ends. */
export const PASSWORD_TRIES = 5;
export const PASSWORD_WINDOW_MS = 60_000;
const PASSWORD_REMEMBER_MS = 10 * 60_000;

function normaliseExpiration(value: string | null | undefined): string | null | undefined {
  if (value === undefined || value === null) return value;
  const t = Date.parse(value);
  if (typeof value !== 'string' || Number.isNaN(t)) throw new ServiceError('invalid_parameters', '`expiration` must be an ISO 8601 timestamp.');
  return new Date(t).toISOString();
}

export class LinksService {
  /** Wrong password tries per link id in the current window. */
  private readonly tries = new Map<string, { wrong: number; until: number }>();
  /**
   * The SHA-256 of the last right password per link, for PASSWORD_REMEMBER_MS: someone who knows
   * the password and fetches the link in a loop does not run scrypt (16 MiB, a pool thread) each time.
   */
  private readonly known = new Map<string, { digest: Buffer; hash: string; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  async create(accountId: number, fileId: string, options: LinkChanges = {}): Promise<Link> {
    const passwordHash = options.password ? await hashPassword(options.password) : null;
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
        passwordHash,
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

  async update(accountId: number, id: string, changes: LinkChanges): Promise<Link> {
    this.get(accountId, id);
    const passwordHash = changes.password ? await hashPassword(changes.password) : null;
    const sets: string[] = [];
    const params: unknown[] = [];
    const set = (column: string, value: unknown) => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (changes.direct !== undefined) set('direct', changes.direct ? 1 : 0);
    if (changes.active !== undefined) set('active', changes.active ? 1 : 0);
    if (changes.expiration !== undefined) set('expiration', normaliseExpiration(changes.expiration));
    if (changes.password !== undefined) set('password_hash', passwordHash);
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
   * forbidden when inactive, expired, or the password is missing or wrong; too_many_requests
   * (with Retry-After) once PASSWORD_TRIES wrong passwords were given in PASSWORD_WINDOW_MS,
   * until that window ends, whatever password is given then.
   */
  async resolve(token: string, password: string | undefined): Promise<Link> {
    const row = this.db.prepare('SELECT * FROM links WHERE token = ?').get(token) as LinkRow | undefined;
    if (!row) throw new ServiceError('not_found', 'This link does not exist.');
    if (!row.active) throw new ServiceError('forbidden', 'This link has been deactivated.');
    if (row.expiration && Date.parse(row.expiration) <= Date.now()) throw new ServiceError('forbidden', 'This link has expired.');
    if (row.password_hash) {
      const needPassword = () => new ServiceError('forbidden', 'This link needs the right password (query parameter `password`).');
      if (password === undefined) throw needPassword();
      const now = this.now();
      let tries = this.tries.get(row.id);
      if (tries && tries.until <= now) {
        this.tries.delete(row.id);
        tries = undefined;
      }
      if (tries && tries.wrong >= PASSWORD_TRIES) throw tooManyTries(tries.until - now);
      // Counted before hashing, so parallel guesses cannot all slip in while hashes run.
      tries ??= { wrong: 0, until: now + PASSWORD_WINDOW_MS };
      this.tries.set(row.id, tries);
      tries.wrong++;
      const digest = createHash('sha256').update(password).digest();
      const known = this.known.get(row.id);
      const remembered = known !== undefined && known.hash === row.password_hash && known.until > now && timingSafeEqual(known.digest, digest);
      if (!remembered && !(await checkPassword(row.password_hash, password))) throw needPassword();
      tries.wrong--;
      if (!remembered) this.known.set(row.id, { digest, hash: row.password_hash, until: now + PASSWORD_REMEMBER_MS });
    }
    return toLink(row);
  }
}

function tooManyTries(ms: number): ServiceError {
  const retryAfter = Math.max(1, Math.ceil(ms / 1000));
  return new ServiceError('too_many_requests', `Too many wrong passwords for this link; try again in ${retryAfter} s.`, { retryAfter });
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
