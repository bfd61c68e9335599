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
