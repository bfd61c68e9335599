/**
 * End to end, in real Chromium against headless mode, with a real Dovecot (IMAP + LMTP) and a
 * real Postfix delivering to it: mail a person can write and read in (docs/ui.md, "Mail").
 * Replies and forwards of an HTML-only invoice carry the whole message (table cells apart, the
 * inline logo, the PDF); drafts save themselves to Drafts, replace the last save, reopen from
 * Drafts, and closing a changed message asks; links open in a new tab without a handle on the
 * app, never in the frame; times come from the Date header; unread counts in the sidebar and
 * the title; the conversation view; the unified inbox; address suggestions from the keyboard.
 * Screenshots go to test-results/e2e-mail-rw-*.png, at 1440×900 and 800×600.
 */
import { createServer, type Server } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startPostfix, type PostfixServer } from '../servers/postfix';
import { freePort } from '../servers/util';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectImap, dismissToasts, mailRow } from './mail-helpers';

const LOGO = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n% invoice 42\n%%EOF\n');
const TAIL = 'Payment is due within thirty days of the invoice date; late payments incur a fee of two percent per month.';
/** The Date headers of "Plans" and "Re: Plans": days before the test, while they arrive now. */
const PLANS_DATE = new Date(Date.now() - 2 * 86_400_000);
const REPLANS_DATE = new Date(Date.now() - 86_400_000);

const folder = (page: Page, special: string) => page.locator(`[data-testid=mail-folder][data-special=${special}]`);

async function shoot(page: Page, name: string): Promise<void> {
  await dismissToasts(page);
  await page.screenshot({ path: join(RESULTS, `e2e-mail-rw-${name}-1440.png`) });
  await page.setViewportSize({ width: 800, height: 600 });
  await page.screenshot({ path: join(RESULTS, `e2e-mail-rw-${name}-800.png`) });
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe('E2E: writing and reading mail in Chromium, Dovecot + Postfix (spec 2; docs/ui.md, Mail)', () => {
  let app: OpenApp;
  let dovecot: DovecotServer;
  let postfix: PostfixServer;
  let context: BrowserContext;
  let page: Page;
  let site: Server;
  let siteBase: string;
  const siteHits: { url: string; referer: string | undefined }[] = [];
  let pageErrors: string[] = [];

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    // The web page a link in the invoice leads to.
    site = createServer((req, res) => {
      siteHits.push({ url: req.url ?? '', referer: req.headers.referer });
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<title>Paid</title><h1>Thanks for paying</h1>');
    });
    const port = await freePort();
    await new Promise<void>((r) => site.listen(port, '127.0.0.1', () => r()));
    siteBase = `http://127.0.0.1:${port}`;
    dovecot = await startDovecot({ users: { alice: 'secret', bob: 'secret' } });
    postfix = await startPostfix({ lmtpPort: dovecot.lmtpPort });
    const html =
      '<html><head><style>td{padding:4px}</style></head><body><p><img src="cid:logo@billing.example.test" alt="Billing Co" width="40" height="40"></p>' +
      '<p>Dear customer, here is your invoice for the period from January to December.</p>' +
      '<table border="1"><tr><th>Item</th><th>Amount</th></tr><tr><td>Storage plan (12 months)</td><td>€1,200.00</td></tr><tr><td>Support</td><td>€300.00</td></tr></table>' +
      `<p><a id="pay" href="${siteBase}/pay?invoice=42">Pay online</a></p><p>${TAIL}</p></body></html>`;
    const invoice = await new MailComposer({
      from: 'Billing Co <billing@example.test>',
      to: 'alice@example.test',
      subject: 'Invoice 42',
      html,
      messageId: '<invoice-42@billing.example.test>',
      attachments: [
        { filename: 'logo.png', content: LOGO, contentType: 'image/png', cid: 'logo@billing.example.test' },
        { filename: 'invoice-42.pdf', content: PDF, contentType: 'application/pdf' },
      ],
    })
      .compile()
      .build();
    const plans = await new MailComposer({ from: 'Bob Builder <bob@example.test>', to: 'alice@example.test', subject: 'Plans', text: 'Shall we meet on Friday to go over the plans?', date: PLANS_DATE, messageId: '<plans-1@example.test>' }).compile().build();
    const rePlans = await new MailComposer({
      from: 'Bob Builder <bob@example.test>',
      to: 'alice@example.test',
      subject: 'Re: Plans',
      text: 'Friday at ten works for me.',
      date: REPLANS_DATE,
      messageId: '<plans-2@example.test>',
      inReplyTo: '<plans-1@example.test>',
      references: '<plans-1@example.test>',
    })
      .compile()
      .build();
    await dovecot.deliver(plans, ['alice'], 'bob@example.test');
    await dovecot.deliver(rePlans, ['alice'], 'bob@example.test');
    await dovecot.deliver(invoice, ['alice'], 'billing@example.test');
    const hello = await new MailComposer({ from: 'Carol <carol@example.test>', to: 'bob@example.test', subject: 'Hello Bob', text: 'Hi Bob!', messageId: '<hello-bob@example.test>' }).compile().build();
    await dovecot.deliver(hello, ['bob'], 'carol@example.test');
    app = await openApp('mail-rw', { context: { acceptDownloads: true, viewport: { width: 1440, height: 900 } } });
    ({ page, pageErrors } = app);
    context = page.context();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await postfix?.stop().catch(() => {});
    await dovecot?.stop();
    await new Promise<void>((r) => (site ? site.close(() => r()) : r()));
  });

  async function connect(user: string, name: string) {
    await connectImap(page, { host: dovecot.host, port: dovecot.imapPort }, postfix, { user, accountName: name });
    await page.locator(`[data-testid=account-item][data-name="${name}"] [aria-current=true]`).waitFor({ timeout: 20_000 });
    await page.getByTestId('mailbox').waitFor();
  }

  it('connects two mail accounts; unread inbox counts show beside each account and in the window title', async () => {
    await page.locator('[data-testid=account-item][data-service=local]').waitFor();
    await connect('bob', 'Bob mail');
    await connect('alice', 'Alice mail');
    await mailRow(page, 'Invoice 42').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('[data-testid=account-item][data-name="Alice mail"] [data-testid=account-unread]').innerText(), { timeout: 15_000 }).toBe('3');
    await expect.poll(() => page.locator('[data-testid=account-item][data-name="Bob mail"] [data-testid=account-unread]').innerText()).toBe('1');
    await expect.poll(() => page.title()).toBe('(4) Tributary');
  });

  it('shows the time of the Date header, not the arrival (spec 2, message `created`)', async () => {
    // The conversation's row shows its newest message, "Re: Plans".
    const shown = await mailRow(page, 'Re: Plans').locator('.mail-row-date').innerText();
    const expected = await page.evaluate((iso) => new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' }).format(new Date(iso)), REPLANS_DATE.toISOString());
    expect(shown).toBe(expected);
  });

  it('shows the whole conversation, the read message collapsed', async () => {
    // Threads are one row: the row of "Re: Plans" stands for both. Read the first message first.
    await mailRow(page, 'Re: Plans').click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Re: Plans');
    // Both messages were unread: both open.
    await expect.poll(() => page.getByTestId('conversation-message').count()).toBe(2);
    expect(await page.getByTestId('conversation-count').innerText()).toBe('2 messages in this conversation');
    // Opening marked "Re: Plans" read. Selecting the first message marks it read too.
    await expect.poll(() => page.title()).toBe('(3) Tributary');
    await page.getByTestId('conversation-message').first().getByRole('button', { name: /Bob Builder/ }).click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Plans');
    await expect.poll(() => page.title()).toBe('(2) Tributary');
    // Back on the newest message: the read first message is one collapsed line.
    await mailRow(page, 'Re: Plans').click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Re: Plans');
    await expect.poll(() => page.getByTestId('conversation-collapsed').count()).toBe(1);
    expect(await page.getByTestId('conversation-collapsed').innerText()).toContain('Shall we meet on Friday');
    expect(await page.getByTestId('conversation-message').count()).toBe(1);
    await shoot(page, 'conversation');
    await page.getByTestId('conversation-collapsed').click();
    await expect.poll(() => page.getByTestId('conversation-message').count()).toBe(2);
  });

  it('reads the HTML invoice with its inline logo; a link opens in a new tab without a handle on the app, never in the frame (items 1, 5)', async () => {
    await mailRow(page, 'Invoice 42').click();
    const frame = page.frameLocator('[data-testid=mail-frame]');
    await expect.poll(() => frame.locator('td').first().innerText()).toBe('Storage plan (12 months)');
    expect(await frame.locator('img[alt="Billing Co"]').getAttribute('src')).toBe(`data:image/png;base64,${LOGO.toString('base64')}`);
    const link = frame.locator('#pay');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    const [tab] = await Promise.all([context.waitForEvent('page'), link.click()]);
    await tab.waitForLoadState();
    expect(tab.url()).toBe(`${siteBase}/pay?invoice=42`);
    expect(await tab.evaluate(() => window.opener)).toBeNull();
    expect(siteHits.find((h) => h.url.startsWith('/pay'))).toEqual({ url: '/pay?invoice=42', referer: undefined });
    await tab.close();
    // The message is still there, in its frame.
    await expect.poll(() => frame.locator('td').first().innerText()).toBe('Storage plan (12 months)');
    expect(await page.getByTestId('mail-frame').getAttribute('srcdoc')).toContain('Dear customer');
  });

  it('a rich reply quotes the whole invoice in a blockquote; as plain text, in `> ` lines with the cells apart', async () => {
    await page.getByTestId('reply').click();
    const compose = page.getByTestId('compose-window');
    const rich = compose.getByTestId('compose-rich');
    await rich.waitFor();
    expect(await compose.getByTestId('compose-subject').inputValue()).toBe('Re: Invoice 42');
    await expect.poll(() => rich.locator('blockquote td').first().innerText()).toBe('Storage plan (12 months)');
    expect(await rich.locator('blockquote').innerText()).toContain(TAIL);
    expect(await rich.locator('blockquote img').getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    expect(await rich.innerText()).toMatch(/On .+, Billing Co <billing@example\.test> wrote:/);
    await shoot(page, 'reply-rich');
    await compose.getByTestId('compose-rich-toggle').uncheck();
    const text = await compose.getByTestId('compose-body').inputValue();
    expect(text).toContain('> Storage plan (12 months)\t€1,200.00\n> Support\t€300.00');
    expect(text).toContain(`> ${TAIL}`);
    // Switching to plain text is a change: closing asks; Discard.
    await compose.getByTestId('compose-close').click();
    await page.getByTestId('compose-confirm-close').getByTestId('confirm-discard').click();
    await expect.poll(() => compose.count()).toBe(0);
  });

  it('drafts save themselves a few seconds after typing stops, replacing the last save; Escape asks Save draft / Discard / Cancel', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-subject').fill('Half a thought');
    await compose.getByTestId('compose-body').fill('First words');
    await expect.poll(() => compose.getAttribute('data-draft-id'), { timeout: 20_000 }).not.toBe('');
    const firstId = await compose.getAttribute('data-draft-id');
    await compose.getByTestId('compose-body').fill('First words, and more words');
    await expect.poll(() => compose.getAttribute('data-draft-id'), { timeout: 20_000 }).not.toBe(firstId);
    await expect.poll(() => compose.getByTestId('compose-state').innerText()).toBe('Draft saved');
    // Typed after the last save: Escape asks.
    await compose.getByTestId('compose-body').press('End');
    await page.keyboard.type(' Unsaved.');
    await compose.getByTestId('compose-body').press('Escape');
    const ask = page.getByTestId('compose-confirm-close');
    await ask.waitFor();
    await shoot(page, 'close-asks');
    await ask.getByTestId('confirm-cancel').click();
    await expect.poll(() => ask.count()).toBe(0);
    expect(await compose.getByTestId('compose-body').inputValue()).toBe('First words, and more words Unsaved.');
    await compose.getByTestId('compose-body').press('End');
    await page.keyboard.type(' More.');
    await compose.getByTestId('compose-close').click();
    await ask.getByTestId('confirm-save').click();
    await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
    // One draft in Drafts, with the last words.
    await folder(page, 'drafts').click();
    await mailRow(page, 'Half a thought').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('[data-testid=mail-row]').count()).toBe(1);
  });

  it('a draft reopens in compose from Drafts; Discard deletes it', async () => {
    await mailRow(page, 'Half a thought').click();
    const compose = page.getByTestId('compose-window');
    await expect.poll(async () => (await compose.getByTestId('compose-body').inputValue()).trim(), { timeout: 15_000 }).toBe('First words, and more words Unsaved. More.');
    expect(await compose.getByTestId('compose-subject').inputValue()).toBe('Half a thought');
    await compose.getByTestId('compose-body').press('End');
    await page.keyboard.type(' Never mind.');
    await page.keyboard.press('Escape');
    await page.getByTestId('compose-confirm-close').getByTestId('confirm-discard').click();
    await expect.poll(() => compose.count()).toBe(0);
    await expect.poll(() => mailRow(page, 'Half a thought').count(), { timeout: 15_000 }).toBe(0);
  });

  it('a message left open when another account is opened is saved to Drafts, not lost', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-subject').fill('Left behind');
    await compose.getByTestId('compose-body').fill('Do not lose me');
    // At once, before the autosave: the mailbox (and its compose window) goes away.
    await page.locator('[data-testid=account-item][data-name="Bob mail"] .account-main').click();
    await expect.poll(() => compose.count()).toBe(0);
    await page.locator('[data-testid=account-item][data-name="Alice mail"] .account-main').click();
    await folder(page, 'drafts').click();
    await mailRow(page, 'Left behind').waitFor({ timeout: 15_000 });
    await mailRow(page, 'Left behind').click();
    await expect.poll(async () => (await page.getByTestId('compose-window').getByTestId('compose-body').inputValue()).trim(), { timeout: 15_000 }).toBe('Do not lose me');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('compose-window').count()).toBe(0);
  });

  it('a reply saved as a draft and sent later from Drafts still answers its original: it joins the conversation', async () => {
    await folder(page, 'inbox').click();
    await mailRow(page, 'Re: Plans').click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Re: Plans');
    await page.locator('body').press('r');
    const compose = page.getByTestId('compose-window');
    await expect.poll(() => compose.getByTestId('compose-body').inputValue(), { timeout: 15_000 }).toContain('> Friday at ten works for me.');
    await compose.getByTestId('compose-body').press('Control+Home');
    await page.keyboard.type('See you then.');
    await compose.getByTestId('compose-close').click();
    await page.getByTestId('compose-confirm-close').getByTestId('confirm-save').click();
    await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
    await folder(page, 'drafts').click();
    await mailRow(page, 'Re: Plans').waitFor({ timeout: 15_000 });
    await mailRow(page, 'Re: Plans').click();
    await expect.poll(() => compose.getByTestId('compose-body').inputValue(), { timeout: 15_000 }).toMatch(/^See you then\./);
    expect(await compose.getByTestId('compose-to').inputValue()).toBe('Bob Builder <bob@example.test>');
    await compose.getByTestId('compose-send').click();
    await expect.poll(() => compose.count(), { timeout: 30_000 }).toBe(0);
    await expect.poll(() => mailRow(page, 'Re: Plans').count(), { timeout: 15_000 }).toBe(0);
    // In the inbox, the conversation now holds the sent reply (In-Reply-To kept) besides Bob's two.
    await folder(page, 'inbox').click();
    await mailRow(page, 'Re: Plans').click();
    await expect.poll(() => page.getByTestId('conversation-count').innerText(), { timeout: 15_000 }).toBe('3 messages in this conversation');
  });

  it('forwards the invoice with the forwarded-message header, its PDF and its inline logo; it arrives through Postfix', async () => {
    await folder(page, 'inbox').click();
    await mailRow(page, 'Invoice 42').click();
    await page.getByTestId('forward').click();
    const compose = page.getByTestId('compose-window');
    const rich = compose.getByTestId('compose-rich');
    await expect.poll(() => rich.locator('.forwarded').innerText(), { timeout: 15_000 }).toMatch(/---------- Forwarded message ----------\nFrom: Billing Co <billing@example\.test>\nDate: .+\nSubject: Invoice 42\nTo: alice@example\.test/);
    await expect.poll(() => compose.locator('[data-testid=compose-attachment]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')))).toEqual(['invoice-42.pdf']);
    expect(await compose.getByTestId('compose-subject').inputValue()).toBe('Fwd: Invoice 42');
    await compose.getByTestId('compose-to').fill('bob@example.test');
    await shoot(page, 'forward');
    await compose.getByTestId('compose-send').click();
    await expect.poll(() => compose.count(), { timeout: 30_000 }).toBe(0);
  });

  it('the unified inbox lists both accounts; Bob reads the forward with the logo and the PDF', async () => {
    await page.getByTestId('mail-unified').click();
    await mailRow(page, 'Fwd: Invoice 42').waitFor({ timeout: 30_000 });
    await mailRow(page, 'Hello Bob').waitFor();
    await mailRow(page, 'Invoice 42').waitFor();
    const accounts = await page.locator('[data-testid=mail-row]').evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-subject'), r.querySelector('[data-testid=mail-row-account]')?.textContent]));
    expect(accounts).toEqual(expect.arrayContaining([['Fwd: Invoice 42', 'Bob mail'], ['Hello Bob', 'Bob mail'], ['Invoice 42', 'Alice mail']]));
    await mailRow(page, 'Fwd: Invoice 42').click();
    const frame = page.frameLocator('[data-testid=mail-frame]');
    await expect.poll(() => frame.locator('td').first().innerText(), { timeout: 15_000 }).toBe('Storage plan (12 months)');
    expect(await frame.locator('img[alt="Billing Co"]').getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    expect(await frame.locator('body').innerText()).toContain('Subject: Invoice 42');
    await page.locator('[data-testid=attachment][data-name="invoice-42.pdf"]').waitFor();
    await shoot(page, 'unified');
  });

  it('address suggestions work from the keyboard: arrows, Enter, Escape', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    const to = compose.getByTestId('compose-to');
    await to.fill('b');
    const list = compose.getByTestId('compose-suggestions');
    await list.waitFor();
    const options = await list.getByRole('option').allInnerTexts();
    expect(options.length).toBeGreaterThanOrEqual(2);
    expect(await list.locator('[aria-selected=true]').innerText()).toBe(options[0]);
    await to.press('ArrowDown');
    expect(await list.locator('[aria-selected=true]').innerText()).toBe(options[1]);
    await to.press('Enter');
    expect(await to.inputValue()).toBe(`${options[1]}, `);
    await page.keyboard.type('b');
    await list.waitFor();
    await to.press('Escape');
    await expect.poll(() => list.count()).toBe(0);
    // Escape closed the suggestions, not the message.
    expect(await compose.count()).toBe(1);
    await to.press('Escape');
    await page.getByTestId('compose-confirm-close').getByTestId('confirm-discard').click();
    await expect.poll(() => compose.count()).toBe(0);
  });

  it('at 800×600 the mailbox shows the list or the message, with ← back to the list (docs/ui.md, Mail)', async () => {
    await page.setViewportSize({ width: 800, height: 600 });
    await folder(page, 'inbox').click();
    await mailRow(page, 'Invoice 42').click();
    await page.getByTestId('reader').waitFor();
    await expect.poll(() => page.getByTestId('mail-list').isVisible()).toBe(false);
    await expect.poll(() => page.frameLocator('[data-testid=mail-frame]').locator('td').first().innerText()).toBe('Storage plan (12 months)');
    await dismissToasts(page);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-rw-narrow-message-800.png') });
    await page.getByTestId('reader-back').click();
    await expect.poll(() => page.getByTestId('mail-list').isVisible()).toBe(true);
    expect(await page.getByTestId('reader').count()).toBe(0);
    // Folders are icons with their names as tooltips.
    expect(await folder(page, 'inbox').getAttribute('title')).toBe('Inbox');
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-rw-narrow-list-800.png') });
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(await page.getByTestId('reader-back').count()).toBe(0);
  });

  it('raised no page errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
