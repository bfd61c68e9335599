/**
 * Who may talk to the local server: requests whose Host names this machine's loopback (or the
 * exact address we were asked to bind), so a web page on evil.example that rebinds its DNS
 * name to 127.0.0.1 is refused; and, for the UI endpoints, the UI token.
 */
import { timingSafeEqual } from 'node:crypto';

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** The hostname part of a Host header ("127.0.0.1:8080" → "127.0.0.1", "[::1]:80" → "[::1]"). */
export function hostName(host: string | undefined): string | null {
  if (!host) return null;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host.trim().toLowerCase());
  return m ? m[1] : null;
}

export function allowedHosts(boundHost: string): Set<string> {
  const out = new Set(LOOPBACK_NAMES);
  out.add(boundHost.includes(':') && !boundHost.startsWith('[') ? `[${boundHost}]` : boundHost.toLowerCase());
  return out;
}

export function isAllowedHost(host: string | undefined, allowed: Set<string>): boolean {
  const name = hostName(host);
  return name !== null && allowed.has(name);
}

/**
 * A request target split into the authority of an absolute-form target (`http://localhost:7780/v2/…`,
 * what a client sends through a proxy; RFC 9112 §3.2.2) and the origin-form path and query it
 * stands for. `authority` is undefined for an origin-form target (`/v2/…`) and for `*`; null when
 * an absolute-form target is not an http(s) URL, or carries a user name or password.
 */
export function splitTarget(target: string): { authority: string | undefined | null; path: string } {
  if (target.startsWith('/') || target === '*') return { authority: undefined, path: target };
  const m = /^(https?):\/\/([^/?#]*)([/?][^#]*)?$/i.exec(target);
  if (!m || !m[2] || m[2].includes('@') || !URL.canParse(target)) return { authority: null, path: '/' };
  const rest = m[3] ?? '/';
  return { authority: m[2]!, path: rest.startsWith('?') ? `/${rest}` : rest };
}

/** The path of a request target without its query, whatever its form. */
export function targetPath(target: string | undefined): string {
  return splitTarget(target ?? '/').path.split('?')[0]!;
}

export type HostCheck = { ok: true; host: string } | { ok: false; status: 400 | 403; message: string };

/**
 * The Host guard of every request and WebSocket upgrade: exactly one Host header (RFC 9112 §3.2:
 * none, or more than one, is 400), and the host the request is addressed to — the authority of
 * an absolute-form target, which replaces Host (RFC 9112 §3.2.2), else the Host header — must be
 * an allowed one (403 otherwise).
 */
export function checkHost(request: { url?: string; originalUrl?: string; rawHeaders: string[]; headers: { host?: string } }, allowed: Set<string>): HostCheck {
  let count = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i]!.toLowerCase() === 'host') count++;
  if (count > 1) return { ok: false, status: 400, message: 'The request has more than one Host header.' };
  if (count === 0) return { ok: false, status: 400, message: 'The request has no Host header.' };
  // The target as received (`originalUrl`: fastify routes the rewritten one, see createHttpServer).
  const { authority } = splitTarget(request.originalUrl ?? request.url ?? '/');
  if (authority === null) return { ok: false, status: 400, message: 'The request target is neither a path nor an http URL without credentials.' };
  const host = authority ?? request.headers.host;
  if (!host) return { ok: false, status: 400, message: 'The request has no Host header.' };
  if (!isAllowedHost(host, allowed)) return { ok: false, status: 403, message: 'This server only answers requests addressed to localhost.' };
  return { ok: true, host };
}

/** Browsers send Origin on WebSocket upgrades: it must be this very server. */
export function isSameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (!origin) return true; // non-browser clients (scripts, tests) send none
  try {
    const u = new URL(origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host.toLowerCase() === (host ?? '').toLowerCase();
  } catch {
    return false;
  }
}

export function tokenMatches(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
