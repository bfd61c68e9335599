/**
 * Open and click tracking of sent mail (spec 2 Send `tracking`, spec 3 `email_open` /
 * `email_click`). A token is the HMAC-signed (key `tracking` of the keyring) description of
 * one tracked target: account, the message's Message-ID, kind, and for clicks the URL. The
 * URL travels inside the signed token, so the click handler can only redirect to a URL that
 * Tributary itself put in a message it sent: no open redirect, and tokens cannot be guessed.
 * The handlers are plain functions; the HTTP server maps `GET {base}/t/o/:token` and
 * `GET {base}/t/c/:token` to them. Events land in `mail_tracking_events` for the activity engine.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../cache/db';

export interface TrackingTarget {
  account: number;
  /** Message-ID header of the sent message, with angle brackets. */
  messageId: string;
  kind: 'open' | 'click';
  url?: string;
  /** Text of the clicked link (the Hyperlink object's `text`), at most 200 characters. */
  text?: string;
  subscriptionId?: string;
}

export interface TrackingHit {
  ip?: string | null;
  userAgent?: string | null;
  at?: Date;
}

export interface TrackingEvent {
  id: number;
  account: number;
  messageId: string;
  kind: 'email_open' | 'email_click';
  url: string | null;
  text: string | null;
  subscriptionId: string | null;
  ip: string | null;
  userAgent: string | null;
  at: string;
}

/** Opens of the same message from the same client within this window count once. */
export const OPEN_COLLAPSE_MS = 60_000;

/** A transparent 1×1 GIF. */
export const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export class Tracker {
  constructor(
    private readonly db: Db,
    private readonly key: Buffer,
    private readonly onEvent: (e: TrackingEvent) => void = () => {},
  ) {}

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, 18).toString('base64url');
  }

  token(t: TrackingTarget): string {
    const payload = Buffer.from(JSON.stringify({ a: t.account, m: t.messageId, k: t.kind === 'open' ? 'o' : 'c', u: t.url, x: t.text?.slice(0, 200) || undefined, s: t.subscriptionId })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The target of an authentic token; null for anything forged, truncated or malformed. */
  verify(token: string): TrackingTarget | null {
    if (typeof token !== 'string' || token.length > 8192) return null;
    const dot = token.indexOf('.');
    if (dot <= 0) return null;
    const payload = token.slice(0, dot);
    // Compared as text, not as decoded bytes: base64url decoding ignores trailing characters,
    // and a token with one appended must not count as another hit of the same link.
    const given = Buffer.from(token.slice(dot + 1));
    const want = Buffer.from(this.mac(payload));
    if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
    try {
      const p = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { a: number; m: string; k: string; u?: string; x?: string; s?: string };
      if (typeof p.a !== 'number' || typeof p.m !== 'string' || (p.k !== 'o' && p.k !== 'c')) return null;
      if (p.k === 'c' && (typeof p.u !== 'string' || !/^https?:\/\//i.test(p.u))) return null;
      return { account: p.a, messageId: p.m, kind: p.k === 'o' ? 'open' : 'click', url: p.u, text: typeof p.x === 'string' ? p.x : undefined, subscriptionId: p.s };
    } catch {
      return null;
    }
  }

  /** Open pixel handler: always answers the pixel (a bad token learns nothing); records real opens once a minute per client. */
  open(token: string, hit: TrackingHit = {}): { status: 200; contentType: string; headers: Record<string, string>; body: Buffer; recorded: boolean } {
    const t = this.verify(token);
    const recorded = t?.kind === 'open' ? this.record(t, hit) : false;
    return { status: 200, contentType: 'image/gif', headers: { 'cache-control': 'no-store, max-age=0' }, body: PIXEL, recorded };
  }

  /** Click handler: 302 to the signed URL, or null (the caller answers 404) for a bad token. */
  click(token: string, hit: TrackingHit = {}): { status: 302; location: string } | null {
    const t = this.verify(token);
    if (!t || t.kind !== 'click' || !t.url) return null;
    this.record(t, hit);
    return { status: 302, location: t.url };
  }

  private record(t: TrackingTarget, hit: TrackingHit): boolean {
    const at = hit.at ?? new Date();
    const kind = t.kind === 'open' ? 'email_open' : 'email_click';
    const ip = hit.ip ?? null;
    const ua = hit.userAgent ?? null;
    const row = this.db.transaction(() => {
      if (kind === 'email_open') {
        const recent = this.db
          .prepare(
            `SELECT 1 FROM mail_tracking_events WHERE account_id = ? AND message_id = ? AND kind = 'email_open'
              AND ip IS ? AND user_agent IS ? AND at_ms > ? AND at_ms <= ? LIMIT 1`,
          )
          .get(t.account, t.messageId, ip, ua, at.getTime() - OPEN_COLLAPSE_MS, at.getTime());
        if (recent) return null;
      }
      const r = this.db
        .prepare(
          `INSERT INTO mail_tracking_events (account_id, message_id, kind, url, subscription_id, ip, user_agent, at, at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(t.account, t.messageId, kind, t.url ?? null, t.subscriptionId ?? null, ip, ua, at.toISOString(), at.getTime());
      return Number(r.lastInsertRowid);
    })();
    if (row === null) return false;
    this.onEvent({ id: row, account: t.account, messageId: t.messageId, kind, url: t.url ?? null, text: t.text ?? null, subscriptionId: t.subscriptionId ?? null, ip, userAgent: ua, at: at.toISOString() });
    return true;
  }

  /** Recorded events, oldest first, for the activity engine (`after` = last id it consumed). */
  events(after = 0, limit = 1000): TrackingEvent[] {
    return (
      this.db
        .prepare('SELECT * FROM mail_tracking_events WHERE id > ? ORDER BY id LIMIT ?')
        .all(after, limit) as { id: number; account_id: number; message_id: string; kind: TrackingEvent['kind']; url: string | null; subscription_id: string | null; ip: string | null; user_agent: string | null; at: string }[]
    ).map((r) => ({ id: r.id, account: r.account_id, messageId: r.message_id, kind: r.kind, url: r.url, text: null, subscriptionId: r.subscription_id, ip: r.ip, userAgent: r.user_agent, at: r.at }));
  }
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** Rewrites http(s) links of an HTML body to click URLs and appends the open pixel. */
export function instrumentHtml(html: string, opts: { base: string; clickToken?: (url: string, text: string) => string; openToken?: string }): string {
  let out = html;
  if (opts.clickToken) {
    // The anchor's text rides in the token too (spec 3 Hyperlink `text`), tags stripped.
    out = out.replace(/(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2([^>]*>)([\s\S]*?)(?=<\/a>)/gi, (_m, pre: string, q: string, url: string, rest: string, inner: string) => {
      const decoded = url.replace(/&amp;/g, '&');
      const text = inner.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ').trim();
      return `${pre}${q}${escapeAttr(`${opts.base}/t/c/${opts.clickToken!(decoded, text)}`)}${q}${rest}${inner}`;
    });
  }
  if (opts.openToken) {
    const pixel = `<img src="${escapeAttr(`${opts.base}/t/o/${opts.openToken}`)}" width="1" height="1" alt="" style="display:none">`;
    out = /<\/body>/i.test(out) ? out.replace(/<\/body>/i, `${pixel}</body>`) : out + pixel;
  }
  return out;
}
