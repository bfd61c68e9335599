/**
 * Who may use the web UI's endpoints of the local server:
 * - the UI token: a random secret of its own (sealed in the database), presented once in the
 *   URL the server prints and then on every call; rotating it refuses the old one everywhere
 *   (HTTP and WebSocket) without touching any other credential;
 * - download tickets: the browser's downloads go to `/app/download/<ticket>`, a URL that names
 *   one file, is redeemed once within TICKET_TTL_MS and never contains the UI token (so the
 *   browser's download history holds nothing reusable).
 *
 * One instance per app, shared by the HTTP server and the contract handlers (IPC and WebSocket).
 */
import { randomBytes } from 'node:crypto';
import type { App } from '../app';
import { ServiceError } from '../errors';
import { tokenMatches } from './guard';

const SETTING_UI_TOKEN = 'uiToken';

/** A ticket is redeemed once within this time after it was issued. */
export const TICKET_TTL_MS = 60_000;
/**
 * After its first use, a ticket still serves the browser's own resume of that download (a
 * ranged request whose If-Range is the ETag of the first answer) for this long.
 */
export const TICKET_RESUME_MS = 24 * 3600_000;

interface Ticket {
  account: number;
  id: string;
  /** A zip ticket: the ids the archive holds (one use, no resume: a zip stream has no ranges). */
  zip?: string[];
  expires: number;
  used: boolean;
  /** ETag of the first answer. */
  etag?: string;
}

export interface UiTokenSource {
  current(): string;
  /** Called after a rotation, with the new token. */
  onRotate(listener: (token: string) => void): () => void;
}

export class LocalAccess implements UiTokenSource {
  private readonly tickets = new Map<string, Ticket>();
  private readonly listeners = new Set<(token: string) => void>();
  private cache: { sealed: string; token: string } | null = null;

  constructor(
    private readonly app: Pick<App, 'settings' | 'keyring'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The UI token; read from the database each time, so a rotation by the CLI counts at once. */
  current(): string {
    const sealed = this.app.settings.get<string | null>(SETTING_UI_TOKEN, null);
    if (sealed === null) return this.store(this.firstToken());
    if (this.cache?.sealed !== sealed) this.cache = { sealed, token: this.app.keyring.open('ui-token', Buffer.from(sealed, 'base64')).toString('utf8') };
    return this.cache.token;
  }

  matches(given: unknown): boolean {
    return tokenMatches(given, this.current());
  }

  /** A new random UI token; the old one, and every download ticket, stop working now. */
  rotate(): string {
    const token = this.store(newToken());
    this.tickets.clear();
    for (const l of this.listeners) l(token);
    return token;
  }

  onRotate(listener: (token: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * An install from before the token had a secret of its own used a key derived from the
   * master key: it is kept (sealed now) so the URL the user has keeps working until they
   * rotate it. A new install gets a random one.
   */
  private firstToken(): string {
    return this.app.keyring.created ? newToken() : this.app.keyring.key('ui-token').toString('base64url').slice(0, 32);
  }

  private store(token: string): string {
    const sealed = this.app.keyring.seal('ui-token', Buffer.from(token, 'utf8')).toString('base64');
    this.app.settings.set(SETTING_UI_TOKEN, sealed);
    this.cache = { sealed, token };
    return token;
  }

  // ---- download tickets ------------------------------------------------------------------

  /** The path of a one-use download URL for this file. */
  issueTicket(account: number, id: string): string {
    const now = this.now();
    for (const [k, t] of this.tickets) if (t.expires <= now) this.tickets.delete(k);
    const ticket = randomBytes(32).toString('base64url');
    this.tickets.set(ticket, { account, id, expires: now + TICKET_TTL_MS, used: false });
    return `/app/download/${ticket}`;
  }

  /** The path of a one-use URL that downloads these files and folders as one zip stream. */
  issueZipTicket(account: number, ids: string[]): string {
    const path = this.issueTicket(account, ids[0]);
    const ticket = path.slice('/app/download/'.length);
    this.tickets.get(ticket)!.zip = ids;
    return `/app/zip/${ticket}`;
  }

  /** The ids a request for `/app/zip/<ticket>` may download; the ticket is used up. */
  redeemZip(ticket: string): { account: number; ids: string[] } {
    const t = this.tickets.get(ticket);
    if (!t?.zip || t.used || t.expires <= this.now()) throw new ServiceError('not_found', 'This download link has expired or was already used; start the download again in Tributary.');
    this.tickets.delete(ticket);
    return { account: t.account, ids: t.zip };
  }

  /**
   * The file a request for `/app/download/<ticket>` may download. The first request uses the
   * ticket up (`used(etag)` records what it served); after that only a ranged request whose
   * If-Range is that ETag passes (the browser resuming this very download), until the resume
   * window ends. Anything else is not_found.
   */
  redeem(ticket: string, request: { range: boolean; ifRange?: string }): { account: number; id: string; used(etag: string): void } {
    const t = this.tickets.get(ticket);
    const gone = () => new ServiceError('not_found', 'This download link has expired or was already used; start the download again in Tributary.');
    if (!t || t.zip || t.expires <= this.now()) throw gone();
    if (t.used) {
      if (!(request.range && t.etag && request.ifRange === t.etag)) throw gone();
    } else {
      t.used = true;
      t.expires = this.now() + TICKET_RESUME_MS;
    }
    return {
      account: t.account,
      id: t.id,
      used: (etag) => {
        t.etag ??= etag;
      },
    };
  }
}

const newToken = () => randomBytes(24).toString('base64url');

const byApp = new WeakMap<object, LocalAccess>();

/** The app's one LocalAccess. */
export function localAccess(app: Pick<App, 'settings' | 'keyring'>): LocalAccess {
  let a = byApp.get(app);
  if (!a) {
    a = new LocalAccess(app);
    byApp.set(app, a);
  }
  return a;
}
