/**
 * End to end, in real Chromium against headless mode: the account's display name and signature
 * (docs/mail.md, Signatures). The account is connected through the generated form with both; a
 * new message starts with the signature after "-- ", is sent through the SMTP relay into Dovecot,
 * and the delivered message, read from the Maildir, carries the signature and the display name
 * in From. A reply has the signature once, above the quote. Reconnect (the account's settings
 * form) changes both. A message queued in a second window shows in this window's outbox from
 * the pushed `mail.outboxChanged`. Screenshots go to
 * test-results/e2e-mail-signature-*.png.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { RESULTS, openApp, type OpenApp } from './harness';
import { fillImapForm, submitConnect } from './mail-helpers';

const SIGNATURE = 'Alice Example\nTributary Testing';

/** The delivered message of that subject in alice's INBOX Maildir, as raw text. */
function delivered(dovecot: DovecotServer, subject: string): string | undefined {
  const root = dovecot.maildir('alice');
  for (const sub of ['new', 'cur']) {
    const dir = join(root, sub);
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) {
      const raw = readFileSync(join(dir, f), 'utf8');
      if (raw.includes(`Subject: ${subject}`)) return raw;
    }
  }
  return undefined;
}

describe('E2E signature and display name in Chromium against headless mode (docs/mail.md, Signatures)', () => {
  let app: OpenApp;
  let dovecot: DovecotServer;
  let relay: SmtpRelay;
  let page: Page;
  let pageErrors: string[] = [];
  const subject = `Signed ${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dovecot = await startDovecot();
    relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    app = await openApp('signature', { context: { viewport: { width: 1440, height: 900 } } });
    ({ page, pageErrors } = app);
  });

  afterAll(async () => {
    await app?.close();
    await relay?.stop().catch(() => {});
    await dovecot?.stop();
  });

  it('connects with a display name and a multi-line signature', async () => {
    const form = await fillImapForm(page, { host: dovecot.host, port: dovecot.imapPort }, relay);
    await form.getByTestId('field-name').fill('Alice Example');
    // The signature field is a textarea: it keeps its line break.
    expect(await form.getByTestId('field-signature').evaluate((el) => el.tagName)).toBe('TEXTAREA');
    await form.getByTestId('field-signature').fill(SIGNATURE);
    await form.getByTestId('field-account-name').fill('Alice mail');
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-form.png') });
    await submitConnect(form, { test: true });
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
  });

  it('a new message starts with the signature after "-- "; the delivered message has it and the display name in From', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    const body = compose.getByTestId('compose-body');
    expect(await body.inputValue()).toBe(`\n\n-- \n${SIGNATURE}`);
    await compose.getByTestId('compose-to').fill('alice@example.test');
    await compose.getByTestId('compose-subject').fill(subject);
    await body.fill(`Hello from the test.${await body.inputValue()}`);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-compose.png') });
    await page.setViewportSize({ width: 800, height: 600 });
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-compose-800.png') });
    await page.setViewportSize({ width: 1440, height: 900 });
    await compose.getByTestId('compose-send').click();
    await compose.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => delivered(dovecot, subject) !== undefined, { timeout: 30_000 }).toBe(true);
    const m = await simpleParser(delivered(dovecot, subject)!);
    expect(m.from?.value).toEqual([{ name: 'Alice Example', address: 'alice@example.test' }]);
    expect(m.text?.replace(/\r\n/g, '\n').trimEnd()).toBe(`Hello from the test.\n\n-- \n${SIGNATURE}`);
  });

  it('a reply has the signature once, above the quote', async () => {
    const row = page.locator(`[data-testid=mail-row][data-subject="${subject}"]`);
    await row.first().click();
    await page.getByTestId('reply').click();
    const compose = page.getByTestId('compose-window');
    const body = compose.getByTestId('compose-body');
    await expect.poll(() => body.inputValue(), { timeout: 15_000 }).toContain('> Hello from the test.');
    const text = await body.inputValue();
    const own = text.indexOf(`-- \n${SIGNATURE}`);
    expect(own).toBeGreaterThanOrEqual(0);
    expect(own).toBeLessThan(text.indexOf('> Hello from the test.'));
    // The quoted original's signature is quoted (`> -- `), not a second signature of this reply.
    expect(text.split(`\n-- \n${SIGNATURE}`).length).toBe(2);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-reply.png') });
    await compose.getByTestId('compose-close').click();
    const ask = page.getByTestId('compose-confirm-close');
    await expect.poll(async () => (await compose.count()) === 0 || (await ask.count()) > 0, { timeout: 15_000 }).toBe(true);
    if (await ask.count()) await ask.getByTestId('confirm-discard').click();
    await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
  });

  it("the account's Reconnect form edits the display name and signature; new messages use them (saved password kept)", async () => {
    const item = page.locator('[data-testid=account-item][data-service=imap]');
    await item.getByTestId('account-menu').click();
    await item.getByTestId('account-menu-reconnect').click();
    const dialog = page.getByTestId('reconnect-dialog');
    await dialog.waitFor();
    expect(await dialog.getByTestId('field-signature').inputValue()).toBe(SIGNATURE);
    expect(await dialog.getByTestId('field-name').inputValue()).toBe('Alice Example');
    await dialog.getByTestId('field-signature').fill('A. E.');
    await dialog.getByTestId('field-name').fill('Alice E.');
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-settings.png') });
    await dialog.getByTestId('reconnect-save').click();
    await dialog.waitFor({ state: 'detached', timeout: 15_000 });
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await expect.poll(() => compose.getByTestId('compose-body').inputValue(), { timeout: 15_000 }).toBe('\n\n-- \nA. E.');
    const second = `${subject} again`;
    await compose.getByTestId('compose-to').fill('alice@example.test');
    await compose.getByTestId('compose-subject').fill(second);
    await compose.getByTestId('compose-send').click();
    await compose.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => delivered(dovecot, second) !== undefined, { timeout: 30_000 }).toBe(true);
    const m = await simpleParser(delivered(dovecot, second)!);
    expect(m.from?.value).toEqual([{ name: 'Alice E.', address: 'alice@example.test' }]);
    expect(m.text?.replace(/\r\n/g, '\n').trimEnd()).toBe('\n\n-- \nA. E.');
    expect(pageErrors).toEqual([]);
  });

  it('a draft reopened from Drafts keeps its one signature and gets no second one', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    const body = compose.getByTestId('compose-body');
    await compose.getByTestId('compose-subject').fill('Signed draft');
    await body.fill(`Draft words.${await body.inputValue()}`);
    await compose.getByTestId('compose-save-draft').click();
    await expect.poll(() => compose.getByTestId('compose-state').innerText(), { timeout: 15_000 }).toBe('Draft saved');
    await compose.getByTestId('compose-close').click();
    await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
    await page.locator('[data-testid=mail-folder][data-special=drafts]').click();
    await page.locator('[data-testid=mail-row][data-subject="Signed draft"]').click();
    await expect.poll(async () => (await body.inputValue()).trim(), { timeout: 15_000 }).toBe('Draft words.\n\n-- \nA. E.');
    await compose.getByTestId('compose-close').click();
    await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
  });

  // docs/mail.md, The outbox: `mail.outboxChanged` refreshes it. A second window queues a message
  // while SMTP is down; this window's outbox was empty (so not polling) and shows it from the event.
  it('the outbox of another window shows a queued message from mail.outboxChanged (docs/mail.md, The outbox)', async () => {
    expect(await page.getByTestId('mail-outbox').count()).toBe(0);
    await relay.stop();
    const other = await (await app.browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await other.goto(app.url);
    await other.locator('[data-testid=account-item][data-service=imap]').click();
    await other.locator('[data-testid=mail-folder][data-special=inbox]').click();
    await other.locator('body').press('c');
    const compose = other.getByTestId('compose-window');
    await compose.getByTestId('compose-to').fill('bob@example.test');
    await compose.getByTestId('compose-subject').fill('Queued elsewhere');
    await compose.getByTestId('compose-send').click();
    await compose.waitFor({ state: 'detached', timeout: 30_000 });
    const outbox = page.getByTestId('mail-outbox');
    await outbox.waitFor({ timeout: 20_000 });
    await outbox.getByTestId('mail-outbox-toggle').click();
    await page.locator('[data-testid=mail-outbox-item][data-subject="Queued elsewhere"]').waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-signature-outbox-pushed.png') });
    await other.context().close();
  });
});
