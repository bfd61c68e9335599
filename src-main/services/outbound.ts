/**
 * Requests the main process makes to a URL a caller chose (upload from a URL, webhooks). By
 * default they may reach only public addresses: loopback, private (RFC 1918), CGNAT, link-local
 * (cloud metadata at 169.254.169.254 included), unique-local and site-local IPv6, unspecified,
 * multicast and reserved addresses — also in their IPv4-mapped IPv6 forms — are refused unless
 * Settings → Network allows them (every private address, or an allow-list of hosts and CIDRs).
 *
 * The check runs inside the connection itself: the dispatcher's connector checks an IP literal
 * before connecting and, for a host name, every address the resolver returns (`connect.lookup`),
 * so the address checked is the address connected to and DNS rebinding between a check and the
 * connection cannot happen. Redirects are followed hop by hop through the same dispatcher.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, isIPv4 } from 'node:net';
import type { Agent, buildConnector, Dispatcher } from 'undici';
import type { SettingsStore } from '../cache/queries/settings';
import { ServiceError } from '../errors';
import { SETTING_OUTBOUND_ALLOWED_HOSTS, SETTING_OUTBOUND_ALLOW_PRIVATE } from './settings-keys';

export interface OutboundPolicy {
  /** Every non-public address is allowed (self-hosted servers on the LAN or this machine). */
  allowPrivate: boolean;
  /** Host names, IP addresses or CIDR ranges allowed although non-public (e.g. the user's NAS). */
  allowedHosts: string[];
}

export const DEFAULT_POLICY: OutboundPolicy = { allowPrivate: false, allowedHosts: [] };

/** The policy in the settings, read at each connection (a change applies to the next one). */
export function outboundPolicy(settings: SettingsStore): OutboundPolicy {
  return {
    allowPrivate: settings.get<boolean>(SETTING_OUTBOUND_ALLOW_PRIVATE, false),
    allowedHosts: settings.get<string[]>(SETTING_OUTBOUND_ALLOWED_HOSTS, []),
  };
}

/** undici, loaded when first needed (outbound requests, form uploads): an idle Tributary has no use for it. */
export const undici = () => import('undici');

/** The one message for a target that cannot be reached, whatever the reason (no port oracle). */
export const UNREACHABLE = 'The server could not be reached.';

const RANGES: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'ipv4', 'a private address'],
  ['100.64.0.0', 10, 'ipv4', 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'ipv4', 'a loopback address'],
  ['169.254.0.0', 16, 'ipv4', 'a link-local address'],
  ['172.16.0.0', 12, 'ipv4', 'a private address'],
  ['192.0.0.0', 24, 'ipv4', 'a reserved address'],
  ['192.168.0.0', 16, 'ipv4', 'a private address'],
  ['198.18.0.0', 15, 'ipv4', 'a reserved address'],
  ['224.0.0.0', 4, 'ipv4', 'a multicast address'],
  ['240.0.0.0', 4, 'ipv4', 'a reserved address'],
  ['::', 128, 'ipv6', 'an unspecified address'],
  ['::1', 128, 'ipv6', 'a loopback address'],
  ['fc00::', 7, 'ipv6', 'a unique-local address'],
  ['fe80::', 10, 'ipv6', 'a link-local address'],
  ['fec0::', 10, 'ipv6', 'a site-local address'],
  ['ff00::', 8, 'ipv6', 'a multicast address'],
];

const lists = RANGES.map(([net, prefix, type, what]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, what };
});

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or -compatible IPv6 address. */
function embeddedIPv4(address: string): string | undefined {
  const m = /^::(?:ffff:)?(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** What kind of non-public address `address` is, or undefined for a public one. */
export function nonPublic(address: string): string | undefined {
  const v4 = isIPv4(address) ? address : embeddedIPv4(address);
  const [ip, type] = v4 ? [v4, 'ipv4' as const] : [address, 'ipv6' as const];
  return lists.find(({ list }) => list.check(ip, type))?.what;
}

function inAllowList(host: string, address: string, allowed: string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  const v4 = isIPv4(address) ? address : embeddedIPv4(address);
  for (const raw of allowed) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    const [net, bits] = entry.split('/');
    const kind = isIP(net!);
    if (!kind) {
      if (entry.replace(/\.$/, '') === name) return true;
      continue;
    }
    const list = new BlockList();
    const type = kind === 4 ? 'ipv4' : 'ipv6';
    const prefix = bits === undefined ? (kind === 4 ? 32 : 128) : Number(bits);
    if (!Number.isInteger(prefix)) continue;
    try {
      list.addSubnet(net!, prefix, type);
    } catch {
      continue;
    }
    if (list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6') || (v4 !== undefined && type === 'ipv4' && list.check(v4, 'ipv4'))) return true;
  }
  return false;
}

/** Why the policy refuses connecting to `address` (reached as `host`), or undefined when allowed. */
export function refusal(host: string, address: string, policy: OutboundPolicy): string | undefined {
  const what = nonPublic(address);
  if (!what || policy.allowPrivate || inAllowList(host, address, policy.allowedHosts)) return undefined;
  return `${address} is ${what}; Settings → Network does not allow it`;
}

/** Raised by the connector when the policy refuses a target; carries the reason. */
export class OutboundRefused extends Error {
  readonly code = 'ERR_OUTBOUND_REFUSED';
}

/** The refusal inside whatever undici wrapped it in, if the failure was one. */
export function refusedReason(e: unknown): string | undefined {
  for (let err = e as { cause?: unknown } | undefined, depth = 0; err && depth < 5; err = err.cause as typeof err, depth++) {
    if (err instanceof OutboundRefused) return err.message;
  }
  return undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An undici dispatcher whose every connection is checked against `policy()` (read at connect
 * time). Its options are the Agent's (timeouts); close or destroy it when done.
 */
export async function guardedAgent(policy: () => OutboundPolicy, options: { connectTimeoutMs?: number; headersTimeoutMs?: number; bodyTimeoutMs?: number } = {}): Promise<Agent> {
  const { Agent, buildConnector } = await undici();
  const lookup = (hostname: string, opts: { all?: boolean; family?: number }, callback: LookupCallback) => {
    dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const current = policy();
      for (const a of addresses) {
        const reason = refusal(hostname, a.address, current);
        if (reason) return callback(new OutboundRefused(reason), []);
      }
      if (opts.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  const base = buildConnector({ timeout: options.connectTimeoutMs ?? 10_000, lookup } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    // An IP literal never reaches `lookup`: check it here.
    if (isIP(host)) {
      const reason = refusal(host, host, policy());
      if (reason) {
        queueMicrotask(() => callback(new OutboundRefused(reason), null));
        return;
      }
    }
    base(opts, callback);
  };
  // No keep-alive: every request gets a fresh, checked connection, so a policy change (or a
  // host that now resolves elsewhere) applies to the very next request.
  return new Agent({ connect, pipelining: 0, headersTimeout: options.headersTimeoutMs ?? 30_000, bodyTimeout: options.bodyTimeoutMs ?? 60_000 });
}

const MAX_REDIRECTS = 5;

/**
 * GET `url` through `dispatcher`, following up to 5 redirects; each hop is an http(s) URL and
 * is connected to only if the policy allows its address. Every failure to get an answer is
 * `upstream_error` with one message (no open/closed port oracle).
 */
export async function guardedGet(url: URL, dispatcher: Dispatcher): Promise<Dispatcher.ResponseData> {
  let current = url;
  for (let hop = 0; ; hop++) {
    let res: Dispatcher.ResponseData;
    try {
      res = await (await undici()).request(current, { method: 'GET', dispatcher });
    } catch (e) {
      throw new ServiceError('upstream_error', `Could not fetch \`url\`: ${UNREACHABLE}`, {}, { cause: e });
    }
    const location = res.headers.location;
    if (res.statusCode < 300 || res.statusCode > 399 || res.statusCode === 304 || typeof location !== 'string') return res;
    await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
    if (hop >= MAX_REDIRECTS) throw new ServiceError('upstream_error', `Could not fetch \`url\`: more than ${MAX_REDIRECTS} redirects.`);
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new ServiceError('upstream_error', 'Could not fetch `url`: it redirected to an invalid URL.');
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new ServiceError('upstream_error', 'Could not fetch `url`: it redirected to a URL that is not http or https.');
    current = next;
  }
}

/** Reads at most `limit` bytes of a body as text, then closes the connection. */
export async function readCapped(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const b = chunk as Buffer;
      chunks.push(b.subarray(0, limit - size));
      size += Math.min(b.length, limit - size);
      if (size >= limit) break;
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}
