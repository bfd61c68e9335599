/**
 * HTML safety of the reading pane (docs/ui.md, "Message HTML"), in real Chromium against
 * headless mode. A hostile message — <script>, onerror=, svg onload, meta refresh, <link>,
 * @import, <iframe>, a remote <img> and CSS url() pointing at a local HTTP server this test
 * runs — is opened: nothing executes (no dialog, no console message, no title or window.name
 * change) and the server receives NO request. The same raw HTML without our sanitizing pass, in
 * a frame with the same sandbox and CSP meta, is just as inert (the sandbox and CSP are the
 * guard, the sanitizer only a second line). After "Show images" the remote image request
 * arrives (the window's own CSP admits http(s) images for this; docs/ui.md,
 * "Message HTML"); "Always from this sender" survives a reload.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';

import MailComposer from 'nodemailer/lib/mail-composer';
import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { freePort } from '../servers/util';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectImap, mailRow } from './mail-helpers';

const BLOCKED_CSP = "default-src 'none'; img-src data: cid:; style-src 'unsafe-inline'";





const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

function hostileHtml(base: string): string {
  return `<html><head>
<meta http-equiv="refresh" content="0;url=${base}/refresh">
<link rel="stylesheet" href="${base}/link.css">
<style>@import url(${base}/import.css); .bg{background-image:url('${base}/css-url.png');height:20px}</style>
<base href="${base}/base/">
</head><body>
<h1 id="hello">Hello from the test</h1>
<script>window.name='pwned';document.title='pwned';console.log('pwned-script');alert('pwned-script')</script>
<img src="x" onerror="window.name='pwned';console.log('pwned-onerror');alert('pwned-onerror')">
<img id="remote" src="${base}/pixel.png" width="10" height="10" alt="remote pixel">
<div class="bg">css background</div>
<div style="background:url(${base}/inline-style.png)">inline style background</div>
<svg onload="console.log('pwned-svg')"><circle r="4"/></svg>
<iframe src="${base}/iframe"></iframe>
<object data="${base}/object"></object>
<form action="${base}/form" method="post"><input name="q" value="1"><button id="submit">go</button></form>
<a id="jslink" href="javascript:alert('pwned-link')">js link</a>
</body></html>`;
}

describe('HTML safety of message rendering, in Chromium (docs/ui.md: Message HTML)', () => {
  let app: OpenApp;
  let dovecot: DovecotServer;
  let relay: SmtpRelay;
  let page: Page;
  let trap: Server;
  let base: string;
  const requests: string[] = [];
  const consoleMessages: { text: string; url: string }[] = [];
  const dialogs: string[] = [];
  const subject = 'Totally harmless newsletter';

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    // The "remote" server: it records every request a message manages to make.
    trap = createServer((req, res) => {
      requests.push(req.url ?? '');
      if (req.url?.endsWith('.png')) res.writeHead(200, { 'Content-Type': 'image/png' }).end(PNG_1X1);
      else res.writeHead(200, { 'Content-Type': 'text/plain' }).end('trap');
    });
    const port = await freePort();
    await new Promise<void>((r) => trap.listen(port, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${port}`;
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    const raw = await new MailComposer({ from: 'Newsletter <news@evil.test>', to: 'alice@example.test', subject, html: hostileHtml(base), text: 'plain part' }).compile().build();
    await dovecot.deliver(raw, ['alice'], 'news@evil.test');
    app = await openApp('html', {
      onPage: (p) => {
        p.on('console', (m) => consoleMessages.push({ text: m.text(), url: m.location().url }));
        p.on('dialog', (d) => {
          dialogs.push(d.message());
          void d.dismiss();
        });
      },
    });
    page = app.page;
  });

  afterAll(async () => {
    await app?.close();
    await relay?.stop();
    await dovecot?.stop();
    await new Promise<void>((r) => (trap ? trap.close(() => r()) : r()));
  });

  async function openMessage() {
    // After a reload the app starts on the default (local) account.
    const mail = page.locator('[data-testid=account-item][data-service=imap]');
    await mail.waitFor();
    if (!(await mail.locator('[aria-current=true]').count())) await mail.locator('.account-main').click();
    await mailRow(page, subject).click();
    await page.getByTestId('mail-frame').waitFor();
    await expect.poll(() => page.frameLocator('[data-testid=mail-frame]').locator('#hello').innerText()).toBe('Hello from the test');
  }

  it('connects the mailbox and opens the hostile message: sandboxed srcdoc frame, CSP meta first, nothing runs, no request (HTML safety)', async () => {
    await connectImap(page, { host: dovecot.host, port: dovecot.imapPort }, relay);
    await page.getByTestId('mailbox').waitFor();
    await openMessage();

    const frame = page.getByTestId('mail-frame');
    // Neither allow-scripts nor allow-same-origin (nor forms, top navigation): only popups, for links (docs/ui.md, "Links in mail").
    expect(await frame.getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
    expect(await frame.getAttribute('src')).toBeNull();
    const srcdoc = (await frame.getAttribute('srcdoc'))!;
    expect(srcdoc.startsWith(`<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${BLOCKED_CSP}">`)).toBe(true);
    expect(srcdoc).not.toContain(`${base}/pixel.png`);
    await page.getByTestId('remote-blocked').waitFor();
    expect(await frame.getAttribute('data-remote')).toBe('blocked');

    // Give anything that might fire (refresh, onerror, lazy loads) time to try.
    await page.waitForTimeout(2000);
    expect(requests).toEqual([]);
    expect(dialogs).toEqual([]);
    // The title is the app's (the opened message is read: no unread count), never the message's.
    await expect.poll(() => page.title()).toBe('Tributary');
    expect(await page.evaluate(() => window.name)).not.toBe('pwned');
    expect(consoleMessages.filter((m) => /pwned/.test(m.text))).toEqual([]);
    await page.screenshot({ path: join(RESULTS, 'e2e-html-safety-blocked.png') });
  });

  it('the raw hostile HTML, unsanitized, in a frame with the same sandbox and CSP meta, is just as inert (HTML safety: the sandbox is the guard)', async () => {
    const before = requests.length;
    await page.evaluate(
      ({ html, csp }) => {
        const f = document.createElement('iframe');
        f.setAttribute('sandbox', '');
        f.id = 'raw-frame';
        f.srcdoc = `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"></head><body>${html}</body></html>`;
        document.body.appendChild(f);
      },
      { html: hostileHtml(base), csp: BLOCKED_CSP },
    );
    await expect.poll(() => page.frameLocator('#raw-frame').locator('#hello').innerText()).toBe('Hello from the test');
    await page.frameLocator('#raw-frame').locator('#submit').click();
    await page.frameLocator('#raw-frame').locator('#jslink').click();
    await page.waitForTimeout(2000);
    expect(requests.slice(before)).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(await page.title()).toBe('Tributary');
    expect(consoleMessages.filter((m) => /pwned/.test(m.text))).toEqual([]);
    await page.evaluate(() => document.getElementById('raw-frame')?.remove());
  });

  it('"Show images" loads the remote image, and only images; "Always from this sender" is remembered (HTML safety: remote content)', async () => {
    await page.getByTestId('allow-remote').click();
    const frame = page.getByTestId('mail-frame');
    await expect.poll(() => frame.getAttribute('data-remote')).toBe('allowed');
    expect(await frame.getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
    expect(await frame.getAttribute('srcdoc')).toContain(`${base}/pixel.png`);
    // The frame inherits the window's CSP (src-main/csp.ts), which admits http(s) images: once
    // allowed, the image and the CSS url() image are fetched.
    await expect.poll(() => requests.includes('/pixel.png'), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => requests.includes('/css-url.png'), { timeout: 10_000 }).toBe(true);
    // Never scripts, style sheets, frames, objects or navigations, even when images are allowed.
    expect(requests.filter((r) => !r.endsWith('.png'))).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(consoleMessages.filter((m) => /pwned/.test(m.text))).toEqual([]);
    await page.screenshot({ path: join(RESULTS, 'e2e-html-safety-allowed.png') });

    // Per sender, remembered across a reload.
    await page.reload();
    await openMessage();
    expect(await page.getByTestId('mail-frame').getAttribute('data-remote')).toBe('blocked');
    await page.getByTestId('allow-remote-sender').click();
    await page.reload();
    await openMessage();
    expect(await page.getByTestId('mail-frame').getAttribute('data-remote')).toBe('allowed');
    expect(await page.getByTestId('remote-blocked').count()).toBe(0);
  });
});
