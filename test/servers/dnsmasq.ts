/**
 * dnsmasq (Debian) as a DNS server on a free loopback port, answering only what a test gives it:
 * `--address` (a domain and all its sub-domains to an IP) and `--srv-host` records. Query it
 * with a node `dns.promises.Resolver` whose server is `127.0.0.1:<port>`.
 */
import { promises as dns } from 'node:dns';
import { freePort, hasBinary, spawnServer } from './util';

export interface DnsServer {
  port: number;
  resolver(): dns.Resolver;
  stop(): Promise<void>;
}

const DNSMASQ = '/usr/sbin/dnsmasq';

export async function startDnsmasq(options: { addresses?: Record<string, string>; srv?: { name: string; target: string; port: number; priority?: number; weight?: number }[] }): Promise<DnsServer> {
  if (!hasBinary(DNSMASQ)) throw new Error(`dnsmasq is not installed (${DNSMASQ}); apt-get install dnsmasq.`);
  const port = await freePort();
  const args = ['--no-daemon', '--conf-file=/dev/null', `--port=${port}`, '--listen-address=127.0.0.1', '--bind-interfaces', '--no-resolv', '--no-hosts', '--pid-file=', '--user=root'];
  // A name of its own, to know when it answers.
  for (const [domain, ip] of Object.entries({ ...options.addresses, 'ready.dnsmasq.test': '127.0.0.1' })) args.push(`--address=/${domain}/${ip}`);
  for (const s of options.srv ?? []) args.push(`--srv-host=${s.name},${s.target},${s.port},${s.priority ?? 0},${s.weight ?? 0}`);
  const child = spawnServer(DNSMASQ, args);
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const resolver = () => {
    const r = new dns.Resolver({ timeout: 1000, tries: 2 });
    r.setServers([`127.0.0.1:${port}`]);
    return r;
  };
  // Ready once it answers.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dnsmasq exited: ${log}`);
    const ok = await resolver()
      .resolve4('ready.dnsmasq.test')
      .then(() => true)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`dnsmasq did not answer: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    resolver,
    async stop() {
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}
