/**
 * End to end, in real Chromium against headless mode: "Set up from an address" in the connect
 * form (docs/mail.md, Setting up from an address). The app's discovery is pointed at a local DNS
 * server (dnsmasq) and a local autoconfig HTTP server through TRIBUTARY_MAIL_DNS and
 * TRIBUTARY_MAIL_AUTOCONFIG_BASE; the autoconfig file names a real Dovecot. The address and
 * password fill the IMAP/SMTP fields, the source is shown, a field stays editable, and the
 * account connects; an address nothing is found for says so. Screenshots go to
 * test-results/e2e-mail-setup-*.png.
 */
import { createServer, type Server } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsmasq, type DnsServer } from '../servers/dnsmasq';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { freePort } from '../servers/util';
import { RESULTS, openApp, type OpenApp } from './harness';
import { submitConnect } from './mail-helpers';

const xml = (imapPort: number, smtpPort: number) => `<?xml version="1.0" encoding="UTF-8"?>
<clientConfig version="1.1">
  <emailProvider id="example.test">
    <domain>example.test</domain>
    <incomingServer type="imap">
      <hostname>127.0.0.1</hostname><port>${imapPort}</port><socketType>plain</socketType><username>%EMAILLOCALPART%</username>
    </incomingServer>
    <outgoingServer type="smtp">
      <hostname>127.0.0.1</hostname><port>${smtpPort}</port><socketType>plain</socketType><username>%EMAILADDRESS%</username>
    </outgoingServer>
  </emailProvider>
</clientConfig>`;

describe('E2E set up from an address in Chromium (docs/mail.md, Setting up from an address)', () => {
  let app: OpenApp;
  let dovecot: DovecotServer;
  let relay: SmtpRelay;
  let dns: DnsServer;
  let http: Server;
  let page: Page;
  let pageErrors: string[] = [];
  const saved = { ...process.env };

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dns = await startDnsmasq({ addresses: { 'example.test': '127.0.0.1' } });
    const httpPort = await freePort();
    http = createServer((req, res) => {
      const host = (req.headers.host ?? '').split(':')[0];
      const path = (req.url ?? '').split('?')[0];
      if (host === 'autoconfig.example.test' && path === '/mail/config-v1.1.xml') {
        res.writeHead(200, { 'content-type': 'text/xml' }).end(xml(dovecot.imapPort, relay.port));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => http.listen(httpPort, '127.0.0.1', r));
    // The served app inherits these (spawn passes the environment on).
    process.env.TRIBUTARY_MAIL_DNS = `127.0.0.1:${dns.port}`;
    process.env.TRIBUTARY_MAIL_AUTOCONFIG_BASE = `http://{host}:${httpPort}`;
    process.env.TRIBUTARY_MAIL_ISPDB = 'off';
    app = await openApp('setup', { context: { viewport: { width: 1440, height: 900 } } });
    ({ page, pageErrors } = app);
  });

  afterAll(async () => {
    process.env = saved;
    await app?.close();
    await new Promise((r) => http?.close(r));
    await dns?.stop();
    await relay?.stop().catch(() => {});
    await dovecot?.stop();
  });

  it('an address nothing is found for says so, and leaves the fields to fill by hand', async () => {
    await page.locator('[data-testid=account-item][data-service=local]').waitFor();
    await page.getByTestId('connect-account').click();
    await page.getByTestId('connector-imap').click();
    const form = page.getByTestId('connect-dialog');
    await form.getByTestId('discover-email').fill('bob@nowhere.test');
    await form.getByTestId('discover-find').click();
    const status = form.getByTestId('discover-status');
    await expect.poll(() => status.innerText(), { timeout: 60_000 }).toBe('No mail settings were found for nowhere.test; enter the servers by hand.');
    expect(await status.getAttribute('role')).toBe('alert');
    expect(await form.getByTestId('field-host').inputValue()).toBe('');
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-setup-none.png') });
  });

  it('address and password fill the IMAP/SMTP fields from autoconfig, say so, stay editable, and connect', async () => {
    const form = page.getByTestId('connect-dialog');
    await form.getByTestId('discover-email').fill('alice@example.test');
    await form.getByTestId('discover-password').fill('secret');
    await form.getByTestId('discover-find').click();
    const status = form.getByTestId('discover-status');
    await expect.poll(() => status.innerText(), { timeout: 30_000 }).toMatch(/^Settings found from the provider's configuration file \(autoconfig\)/);
    expect(await form.getByTestId('field-host').inputValue()).toBe('127.0.0.1');
    expect(await form.getByTestId('field-port').inputValue()).toBe(String(dovecot.imapPort));
    expect(await form.getByTestId('field-tls').inputValue()).toBe('none');
    expect(await form.getByTestId('field-user').inputValue()).toBe('alice');
    expect(await form.getByTestId('field-password').inputValue()).toBe('secret');
    expect(await form.getByTestId('field-email').inputValue()).toBe('alice@example.test');
    expect(await form.getByTestId('field-smtp_port').inputValue()).toBe(String(relay.port));
    expect(await form.getByTestId('field-smtp_tls').inputValue()).toBe('none');
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-setup-found.png') });
    await page.setViewportSize({ width: 800, height: 600 });
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-setup-found-800.png') });
    await page.setViewportSize({ width: 1440, height: 900 });
    // Still the user's to change: a display name typed after discovery is kept and used.
    await form.getByTestId('field-name').fill('Alice Found');
    await submitConnect(form, { test: true });
    await page.locator('[data-testid=mail-folder][data-special=inbox]').waitFor({ timeout: 15_000 });
    expect(pageErrors).toEqual([]);
  });
});
