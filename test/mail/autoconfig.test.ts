// Setting up from an address: autoconfig XML (autoconfig.<domain>, /.well-known/autoconfig/, the
// ISPDB path), RFC 6186 SRV records, then common host names, resolved through a real DNS server
// (dnsmasq) and fetched from a local HTTP server; what autoconfig finds logs in to a real Dovecot.
// Also the REST import's `tls` boolean (docs/rest.md, Import: `tls` true/false).
import { createServer, type Server } from 'node:http';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { connectorDefinition } from '../../src-main/connectors/registry';
import { discoverSettings, type DiscoverOptions } from '../../src-main/mail/autoconfig';
import { startDnsmasq, type DnsServer } from '../servers/dnsmasq';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir } from '../servers/util';

const xml = (imapPort: number, smtpPort: number, user: string) => `<?xml version="1.0" encoding="UTF-8"?>
<clientConfig version="1.1">
  <emailProvider id="example.test">
    <domain>example.test</domain>
    <incomingServer type="pop3"><hostname>pop.invalid</hostname><port>995</port><socketType>SSL</socketType></incomingServer>
    <incomingServer type="imap">
      <hostname>127.0.0.1</hostname>
      <port>${imapPort}</port>
      <socketType>plain</socketType>
      <authentication>password-cleartext</authentication>
      <username>${user}</username>
    </incomingServer>
    <outgoingServer type="smtp">
      <hostname>127.0.0.1</hostname>
      <port>${smtpPort}</port>
      <socketType>plain</socketType>
      <username>%EMAILADDRESS%</username>
    </outgoingServer>
  </emailProvider>
</clientConfig>`;

describe('discovering mail settings from an address (autoconfig, RFC 6186, common names)', () => {
  let dns: DnsServer;
  let http: Server;
  let httpPort: number;
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let app: App;
  let dataDir: string;
  const asked: string[] = [];
  let opts: DiscoverOptions;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    http = createServer((req, res) => {
      const host = (req.headers.host ?? '').split(':')[0];
      const path = (req.url ?? '').split('?')[0];
      asked.push(`${host}${path}`);
      const files: Record<string, string> = {
        'autoconfig.example.test/mail/config-v1.1.xml': xml(dovecot.imapPort, smtp.port, '%EMAILLOCALPART%'),
        'wk.test/.well-known/autoconfig/mail/config-v1.1.xml': xml(dovecot.imapPort, smtp.port, '%EMAILADDRESS%'),
        '127.0.0.1/v1.1/isp.test': xml(dovecot.imapPort, smtp.port, 'isp-%EMAILLOCALPART%'),
      };
      const body = files[`${host}${path}`];
      res.writeHead(body ? 200 : 404, { 'content-type': 'text/xml' }).end(body ?? 'not here');
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
    httpPort = (http.address() as { port: number }).port;
    dns = await startDnsmasq({
      addresses: { 'example.test': '127.0.0.1', 'wk.test': '127.0.0.1', 'isp.test': '127.0.0.1', 'srv.test': '127.0.0.1', 'guess.test': '127.0.0.1' },
      srv: [
        { name: '_imaps._tcp.srv.test', target: 'imap-b.srv.test', port: 9993, priority: 20 },
        { name: '_imaps._tcp.srv.test', target: 'imap-a.srv.test', port: 993, priority: 10 },
        { name: '_submission._tcp.srv.test', target: 'smtp.srv.test', port: 587 },
      ],
    });
    opts = {
      resolver: dns.resolver(),
      httpBase: (host) => `http://${host}:${httpPort}`,
      ispdb: `http://127.0.0.1:${httpPort}/v1.1/`,
      guessPorts: { imap: [{ port: dovecot.imapPort, tls: 'none' }], smtp: [{ port: smtp.port, tls: 'none' }] },
      timeoutMs: 1500,
    };
    dataDir = scratchDir('mail-autoconfig');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { live: false } });
  });

  afterAll(async () => {
    await app?.close();
    await dns?.stop();
    await new Promise((r) => http?.close(r));
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('autoconfig.<domain>: the XML is read, placeholders filled, and the settings log in to Dovecot', async () => {
    const found = await discoverSettings('alice@example.test', opts);
    expect(found).toEqual({
      source: 'autoconfig',
      options: { host: '127.0.0.1', port: dovecot.imapPort, tls: 'none', user: 'alice', email: 'alice@example.test', smtp_host: '127.0.0.1', smtp_port: smtp.port, smtp_tls: 'none' },
    });
    await expect(app.accounts.test('imap', { ...found.options, password: 'secret' })).resolves.toBeUndefined();
  });

  it('/.well-known/autoconfig/ of the domain when autoconfig.<domain> has nothing', async () => {
    const found = await discoverSettings('alice@wk.test', opts);
    expect(found.source).toBe('autoconfig');
    expect(found.options.user).toBe('alice@wk.test');
    expect(asked).toContain('autoconfig.wk.test/mail/config-v1.1.xml');
  });

  it('the ISPDB path (…/v1.1/<domain>) after both', async () => {
    const found = await discoverSettings('carol@isp.test', opts);
    expect(found).toMatchObject({ source: 'autoconfig', options: { user: 'isp-carol' } });
  });

  it('RFC 6186 SRV records: the lowest priority wins; submission is STARTTLS', async () => {
    const found = await discoverSettings('dave@srv.test', opts);
    expect(found).toEqual({
      source: 'srv',
      options: { host: 'imap-a.srv.test', port: 993, tls: 'tls', user: 'dave@srv.test', email: 'dave@srv.test', smtp_host: 'smtp.srv.test', smtp_port: 587, smtp_tls: 'starttls' },
    });
  });

  it('common host names that answer on the usual ports, last', async () => {
    const found = await discoverSettings('erin@guess.test', opts);
    expect(found).toMatchObject({ source: 'guess', options: { host: 'imap.guess.test', port: dovecot.imapPort, smtp_host: 'smtp.guess.test', smtp_port: smtp.port } });
  });

  it('nothing found is not_found; a malformed address is invalid_parameters', async () => {
    await expect(discoverSettings('x@nowhere.test', opts)).rejects.toMatchObject({ code: 'not_found' });
    await expect(discoverSettings('no-at-sign', opts)).rejects.toMatchObject({ code: 'invalid_parameters' });
  });

  it('the REST import takes `tls` as a boolean: false is STARTTLS, never the implicit-TLS default (docs/rest.md Import)', () => {
    const def = connectorDefinition('imap');
    const base = { account: 'alice', token: 'secret', host: 'mail.example.test' };
    expect(def.fromImport({ ...base, tls: false })).toMatchObject({ tls: 'starttls' });
    expect(def.fromImport({ ...base, tls: true })).toMatchObject({ tls: 'tls' });
    expect(def.fromImport({ ...base, tls: 'false' })).toMatchObject({ tls: 'starttls' });
    expect(def.fromImport({ ...base, tls: 'none' })).toMatchObject({ tls: 'none' });
  });
});
