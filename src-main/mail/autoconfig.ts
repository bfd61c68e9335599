/**
 * Setting up from an address: the `imap` connector's options found from an e-mail address, as
 * mail clients do, in this order:
 *   1. autoconfig XML (Thunderbird's format): `autoconfig.<domain>/mail/config-v1.1.xml`, then
 *      `<domain>/.well-known/autoconfig/mail/config-v1.1.xml`, then the ISPDB (`…/v1.1/<domain>`);
 *   2. RFC 6186 SRV records: `_imaps._tcp` / `_imap._tcp`, `_submissions._tcp` / `_submission._tcp`;
 *   3. common host names (imap., mail., the domain) on the usual ports, kept if they answer.
 * DNS (a `dns.promises.Resolver`), the HTTP base of each host and the probed ports are
 * injectable, so that tests run against a local DNS server and a local HTTP server.
 */
import { promises as dns } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { connect, isIP } from 'node:net';
import type { DiscoveredSettings } from '../contract/mail';
import { ServiceError, invalid } from '../errors';

type Security = 'tls' | 'starttls' | 'none';
interface Server {
  host: string;
  port: number;
  tls: Security;
  user?: string;
}

export interface DiscoverOptions {
  /** DNS for SRV records and host names (default: the system's servers). */
  resolver?: Pick<dns.Resolver, 'resolveSrv' | 'resolve4'>;
  /** The base URL of a host's autoconfig files (default `https://<host>`). */
  httpBase?: (host: string) => string;
  /** The ISPDB (default `https://autoconfig.thunderbird.net/v1.1/`). */
  ispdb?: string | null;
  /** Ports tried on common host names (default 993/143 and 465/587). */
  guessPorts?: { imap: { port: number; tls: Security }[]; smtp: { port: number; tls: Security }[] };
  /** Per request or connection attempt (default 4 s). */
  timeoutMs?: number;
}

/**
 * Where discovery looks, from the environment, for a private network or a test setup (docs/mail.md,
 * Setting up from an address): `TRIBUTARY_MAIL_DNS` (DNS servers, `ip[:port]`, comma-separated),
 * `TRIBUTARY_MAIL_AUTOCONFIG_BASE` (autoconfig URL of a host, `{host}` standing for its name, e.g.
 * `http://{host}:8080`), `TRIBUTARY_MAIL_ISPDB` (the ISPDB URL, or `off`). Unset: the defaults.
 */
export function discoverOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): DiscoverOptions {
  const o: DiscoverOptions = {};
  const servers = env.TRIBUTARY_MAIL_DNS?.split(',').map((x) => x.trim()).filter(Boolean);
  if (servers?.length) {
    const resolver = new dns.Resolver();
    resolver.setServers(servers);
    o.resolver = resolver;
  }
  const base = env.TRIBUTARY_MAIL_AUTOCONFIG_BASE?.trim();
  if (base) o.httpBase = (host) => base.split('{host}').join(host);
  const ispdb = env.TRIBUTARY_MAIL_ISPDB?.trim();
  if (ispdb) o.ispdb = ispdb === 'off' ? null : ispdb;
  return o;
}

const EMAIL = /^([^\s@<>",;]+)@([A-Za-z0-9.-]+\.[A-Za-z]{2,}|[A-Za-z0-9-]+)$/;

export async function discoverSettings(email: string, o: DiscoverOptions = {}): Promise<DiscoveredSettings> {
  const m = EMAIL.exec(email.trim());
  if (!m) throw invalid('email must be an e-mail address (name@domain).');
  const address = m[0];
  const [local, domain] = [m[1]!, m[2]!.toLowerCase()];
  const resolver = o.resolver ?? new dns.Resolver();
  const timeoutMs = o.timeoutMs ?? 4000;
  const base = o.httpBase ?? ((host: string) => `https://${host}`);
  const result = (source: DiscoveredSettings['source'], imap: Server, smtp: Server, user: string): DiscoveredSettings => ({
    source,
    options: { host: imap.host, port: imap.port, tls: imap.tls, user, email: address, smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: smtp.tls },
  });

  // 1. autoconfig
  const q = `?emailaddress=${encodeURIComponent(address)}`;
  const urls = [`${base(`autoconfig.${domain}`)}/mail/config-v1.1.xml${q}`, `${base(domain)}/.well-known/autoconfig/mail/config-v1.1.xml${q}`];
  if (o.ispdb !== null) urls.push(`${o.ispdb ?? 'https://autoconfig.thunderbird.net/v1.1/'}${encodeURIComponent(domain)}`);
  for (const url of urls) {
    const xml = await fetchText(url, resolver, timeoutMs).catch(() => null);
    const found = xml ? parseAutoconfig(xml, { address, local, domain }) : null;
    if (found) return result('autoconfig', found.imap, found.smtp, found.imap.user ?? address);
  }

  // 2. RFC 6186 SRV records
  const srv = async (names: [string, Security][]): Promise<Server | null> => {
    for (const [name, tls] of names) {
      const records = await resolver.resolveSrv(`${name}.${domain}`).catch(() => []);
      // "." as the target: the service is not offered (RFC 6186 section 3.4).
      const best = records.filter((r) => r.name && r.name !== '.').sort((a, b) => a.priority - b.priority || b.weight - a.weight)[0];
      if (best) return { host: best.name.replace(/\.$/, ''), port: best.port, tls };
    }
    return null;
  };
  const imapSrv = await srv([
    ['_imaps._tcp', 'tls'],
    ['_imap._tcp', 'starttls'],
  ]);
  const smtpSrv = await srv([
    ['_submissions._tcp', 'tls'],
    ['_submission._tcp', 'starttls'],
  ]);
  if (imapSrv && smtpSrv) return result('srv', imapSrv, smtpSrv, address);

  // 3. common host names on the usual ports
  const ports = o.guessPorts ?? {
    imap: [
      { port: 993, tls: 'tls' as const },
      { port: 143, tls: 'starttls' as const },
    ],
    smtp: [
      { port: 465, tls: 'tls' as const },
      { port: 587, tls: 'starttls' as const },
    ],
  };
  const probe = async (hosts: string[], list: { port: number; tls: Security }[]): Promise<Server | null> => {
    for (const host of hosts) {
      const ip = await lookup(host, resolver).catch(() => null);
      if (!ip) continue;
      for (const p of list) if (await reachable(ip, p.port, timeoutMs)) return { host, port: p.port, tls: p.tls };
    }
    return null;
  };
  const imap = imapSrv ?? (await probe([`imap.${domain}`, `mail.${domain}`, domain], ports.imap));
  const smtp = smtpSrv ?? (await probe([`smtp.${domain}`, `mail.${domain}`, domain], ports.smtp));
  if (imap && smtp) return result(imapSrv || smtpSrv ? 'srv' : 'guess', imap, smtp, address);
  throw new ServiceError('not_found', `No mail settings were found for ${domain}; enter the servers by hand.`);
}

/** The first IMAP and SMTP servers of an autoconfig file, with its placeholders filled in. */
export function parseAutoconfig(xml: string, who: { address: string; local: string; domain: string }): { imap: Server; smtp: Server } | null {
  const fill = (v: string) => v.replace(/%EMAILADDRESS%/g, who.address).replace(/%EMAILLOCALPART%/g, who.local).replace(/%EMAILDOMAIN%/g, who.domain);
  const field = (block: string, name: string) => {
    const v = new RegExp(`<${name}>\\s*([^<]*?)\\s*</${name}>`).exec(block)?.[1];
    return v === undefined ? undefined : fill(decodeXml(v));
  };
  const security = (v: string | undefined): Security | null => (v === 'SSL' ? 'tls' : v === 'STARTTLS' ? 'starttls' : v === 'plain' ? 'none' : null);
  const server = (tag: 'incomingServer' | 'outgoingServer', type: string): Server | null => {
    for (const b of xml.matchAll(new RegExp(`<${tag}\\s+type="${type}"\\s*>([\\s\\S]*?)</${tag}>`, 'g'))) {
      const host = field(b[1]!, 'hostname');
      const port = Number(field(b[1]!, 'port'));
      const tls = security(field(b[1]!, 'socketType'));
      if (host && Number.isInteger(port) && port > 0 && port < 65536 && tls) return { host, port, tls, user: field(b[1]!, 'username') };
    }
    return null;
  };
  const imap = server('incomingServer', 'imap');
  const smtp = server('outgoingServer', 'smtp');
  return imap && smtp ? { imap, smtp } : null;
}

const decodeXml = (v: string) => v.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

async function lookup(host: string, resolver: Pick<dns.Resolver, 'resolve4'>): Promise<string> {
  if (isIP(host)) return host;
  const [ip] = await resolver.resolve4(host);
  if (!ip) throw new Error(`${host} has no address`);
  return ip;
}

/** GET of a small text file (at most 64 KiB), the host resolved by `resolver`. */
function fetchText(url: string, resolver: Pick<dns.Resolver, 'resolve4'>, timeoutMs: number): Promise<string | null> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.get(
      u,
      {
        timeout: timeoutMs,
        lookup: (hostname, _opts, cb) => {
          lookup(hostname, resolver).then(
            (ip) => cb(null, [{ address: ip, family: 4 }] as never, 4),
            (e: NodeJS.ErrnoException) => cb(e, '', 4),
          );
        },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return resolve(null);
        }
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
          if (body.length > 65536) req.destroy(new Error('autoconfig file too large'));
        });
        res.on('end', () => resolve(body));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function reachable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: timeoutMs });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('timeout', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(false));
  });
}
