/**
 * End to end, in real Chromium against headless mode: the mailbox (spec 2). A real
 * Dovecot (IMAP + LMTP) and an SMTP relay that delivers to it (test/servers); the account is
 * connected through the generated form; a message is opened, replied to with an attachment
 * uploaded through the web UI, and the reply arrives in the same inbox live (IDLE → mail.changed
 * → the list refetches) without a reload. A send while SMTP is down waits in the outbox, with
 * the error shown. Screenshots go to test-results/e2e-mail-*.png.
 */
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import MailComposer from 'nodemailer/lib/mail-composer';
import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { RESULTS, dropFile, openApp, type OpenApp } from './harness';
import { connectImap, dismissToasts, mailRow } from './mail-helpers';

/** Closes the compose window; a changed message asks first (docs/ui.md, "Mail"): `choice` answers. */
async function closeCompose(page: Page, choice: 'confirm-discard' | 'confirm-save' = 'confirm-discard'): Promise<void> {
  const compose = page.getByTestId('compose-window');
  if (!(await compose.count())) return;
  await compose.getByTestId('compose-close').click();
  const ask = page.getByTestId('compose-confirm-close');
  await expect.poll(async () => (await compose.count()) === 0 || (await ask.count()) > 0, { timeout: 15_000 }).toBe(true);
  if (await ask.count()) await ask.getByTestId(choice).click();
  await expect.poll(() => compose.count(), { timeout: 15_000 }).toBe(0);
}


const BULK = 260;

describe('E2E mailbox in Chromium against headless mode (spec 2; docs/ui.md, Mailbox)', () => {
  let app: OpenApp;
  let dovecot: DovecotServer;
  let relay: SmtpRelay;
  let page: Page;
  let pageErrors: string[] = [];
  const subject = `Quarterly numbers ${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dovecot = await startDovecot();
    relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    // Mail from alice to herself: her reply goes back into the same inbox.
    const older = await new MailComposer({ from: 'Bob <bob@example.test>', to: 'alice@example.test', subject: 'Lunch?', text: 'Noon at the usual place?', date: new Date(Date.now() - 3_600_000) }).compile().build();
    await dovecot.deliver(older, ['alice'], 'bob@example.test');
    const raw = await new MailComposer({ from: 'Alice Example <alice@example.test>', to: 'alice@example.test', subject, text: 'Hi,\n\nthe numbers are attached to the next mail.\n\nAlice', html: '<p>Hi,</p><p>the numbers are <b>attached</b> to the next mail.</p><p>Alice</p>', messageId: `<q-${Date.now()}@example.test>` }).compile().build();
    await dovecot.deliver(raw, ['alice'], 'alice@example.test');
    // A folder of BULK messages written straight into the Maildir (Dovecot indexes them on first
    // access), to see the list virtualized and paged.
    const bulk = join(dovecot.maildir('alice'), '.Bulk');
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(bulk, sub), { recursive: true });
    for (let i = 0; i < BULK; i++) {
      const date = new Date(Date.UTC(2026, 0, 1, 0, i)).toUTCString();
      const file = join(bulk, 'new', `${1_700_000_000 + i}.M${i}P1.itest`);
      writeFileSync(file, `From: Bulk Sender <bulk@example.test>\r\nTo: alice@example.test\r\nSubject: Bulk ${String(i).padStart(3, '0')}\r\nDate: ${date}\r\nMessage-ID: <bulk-${i}@example.test>\r\n\r\nBulk body ${i}\r\n`);
      // A Maildir message's arrival time (INTERNALDATE) is its file's mtime.
      utimesSync(file, new Date(Date.UTC(2026, 0, 1, 0, i)), new Date(Date.UTC(2026, 0, 1, 0, i)));
    }
    for (const p of [dovecot.maildir('alice'), bulk, ...['cur', 'new', 'tmp'].map((s) => join(bulk, s)), ...readdirSync(join(bulk, 'new')).map((f) => join(bulk, 'new', f))]) chownSync(p, 65534, 65534);
    app = await openApp('mail', { context: { acceptDownloads: true, viewport: { width: 1280, height: 800 } } });
    ({ page, pageErrors } = app);
  });

  afterAll(async () => {
    await app?.close();
    await relay?.stop().catch(() => {});
    await dovecot?.stop();
  });

  it('connects the Dovecot account through the generated form and shows the inbox (spec 2, Accounts: connect; Messages: list)', async () => {
    await connectImap(page, { host: dovecot.host, port: dovecot.imapPort }, relay, { accountName: 'Alice mail', test: true });
    await page.locator('[data-testid=account-item][data-service=imap] [aria-current=true]').waitFor();
    await page.getByTestId('mailbox').waitFor();
    // The inbox is open, with both messages newest first and its unread count.
    await page.locator('[data-testid=mail-folder][data-special=inbox][aria-current=true]').waitFor();
    await mailRow(page, subject).waitFor({ timeout: 20_000 });
    const subjects = await page.locator('[data-testid=mail-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-subject')));
    expect(subjects).toEqual([subject, 'Lunch?']);
    await expect.poll(() => page.locator('[data-testid=mail-folder][data-special=inbox] [data-testid=mail-folder-unread]').innerText()).toBe('2');
    for (const special of ['sent', 'drafts', 'trash', 'junk']) expect(await page.locator(`[data-testid=mail-folder][data-special=${special}]`).count()).toBe(1);
    await dismissToasts(page);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-inbox.png') });
  });

  it('opens a message in the sandboxed reading pane and marks it read (spec 2, Messages: retrieve, update)', async () => {
    await mailRow(page, subject).click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe(subject);
    const frame = page.getByTestId('mail-frame');
    await frame.waitFor();
    expect(await frame.getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
    await expect.poll(() => page.frameLocator('[data-testid=mail-frame]').locator('body').innerText()).toContain('the numbers are attached');
    await expect.poll(() => mailRow(page, subject).getAttribute('data-unread')).toBe('false');
    await expect.poll(() => page.locator('[data-testid=mail-folder][data-special=inbox] [data-testid=mail-folder-unread]').innerText()).toBe('1');
    // Keyboard: s flags, s again unflags.
    await page.locator('body').press('s');
    await expect.poll(() => mailRow(page, subject).getAttribute('data-flagged'), { timeout: 10_000 }).toBe('true');
    await page.locator('body').press('s');
    await expect.poll(() => mailRow(page, subject).getAttribute('data-flagged'), { timeout: 10_000 }).toBe('false');
  });

  it('replies with an attachment; the reply arrives in the inbox live, without a reload (spec 2, Messages: send; attachments from ephemeral)', async () => {
    const attachment = randomBytes(20_000);
    await page.locator('body').press('r');
    const compose = page.getByTestId('compose-window');
    await compose.waitFor();
    expect(await compose.getByTestId('compose-to').inputValue()).toBe('Alice Example <alice@example.test>');
    expect(await compose.getByTestId('compose-subject').inputValue()).toBe(`Re: ${subject}`);
    // The original is HTML, so the reply starts in rich text; this one is written as plain text.
    await compose.getByTestId('compose-rich').waitFor();
    await compose.getByTestId('compose-rich-toggle').uncheck();
    await compose.getByTestId('compose-body').press('Home');
    await page.keyboard.type('Thanks, here they are.');
    await compose.getByTestId('compose-attach-input').setInputFiles({ name: 'numbers.bin', mimeType: 'application/octet-stream', buffer: attachment });
    // A second one by drag and drop onto the compose window.
    const dropped = Buffer.from('dropped notes\n');
    await dropFile(page, '[data-testid=compose-window]', 'notes.txt', dropped);
    await expect.poll(() => compose.locator('[data-testid=compose-attachment][data-state=ready]').count()).toBe(2);
    await dismissToasts(page);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-compose.png') });
    const marker = await page.evaluate(() => {
      (window as unknown as { __noReload: boolean }).__noReload = true;
      return true;
    });
    expect(marker).toBe(true);
    await compose.getByTestId('compose-send').click();
    await expect.poll(() => compose.count(), { timeout: 20_000 }).toBe(0);
    // The relay saw the message with the attachment, addressed to alice.
    expect(relay.received.at(-1)!.to).toEqual(['alice@example.test']);
    expect(relay.received.at(-1)!.raw.toString()).toContain('numbers.bin');
    expect(relay.received.at(-1)!.raw.toString()).toContain('notes.txt');
    // Delivered to the same inbox: IDLE notices, the list refetches, the thread now leads with the reply.
    await mailRow(page, `Re: ${subject}`).waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as unknown as { __noReload?: boolean }).__noReload)).toBe(true);
    await mailRow(page, `Re: ${subject}`).click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe(`Re: ${subject}`);
    const chip = page.locator('[data-testid=attachment][data-name="numbers.bin"]');
    await chip.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), chip.click()]);
    expect(download.suggestedFilename()).toBe('numbers.bin');
    expect(readFileSync(await download.path()).equals(attachment)).toBe(true);
    // A plain-text reply is shown as text (escaped by React), not in a frame.
    await expect.poll(() => page.getByTestId('mail-text').innerText()).toContain('Thanks, here they are.');
    expect(await page.locator('[data-testid=attachment][data-name="notes.txt"]').count()).toBe(1);
    await dismissToasts(page);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-reply.png') });
    // The sent copy is in Sent.
    await page.locator('[data-testid=mail-folder][data-special=sent]').click();
    await mailRow(page, `Re: ${subject}`).waitFor({ timeout: 15_000 });
  });

  it('searches the local index and autocompletes addresses from the cache (spec 2, Search)', async () => {
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
    await page.locator('body').press('/');
    await page.keyboard.type('Lunch');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('[data-testid=mail-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-subject')))).toEqual(['Lunch?']);
    await page.getByTestId('mail-search').press('Escape');
    // The conversation now leads with the reply.
    await mailRow(page, `Re: ${subject}`).waitFor();
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-to').fill('bo');
    await compose.getByTestId('compose-suggestions').getByText('bob@example.test').click();
    await expect.poll(() => compose.getByTestId('compose-to').inputValue()).toContain('bob@example.test');
  });

  it('sends rich text: the HTML arrives and renders in the sandboxed frame (spec 2, Messages: plain or rich text)', async () => {
    await closeCompose(page);
    await page.getByTestId('compose').click();
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-to').fill('alice@example.test');
    await compose.getByTestId('compose-subject').fill('Rich hello');
    await compose.getByTestId('compose-rich-toggle').check();
    await compose.getByTestId('compose-rich').click();
    await page.keyboard.type('Plain start ');
    await page.keyboard.press('Control+b');
    await page.keyboard.type('bold part');
    await compose.getByTestId('compose-send').click();
    await expect.poll(() => compose.count(), { timeout: 20_000 }).toBe(0);
    expect(relay.received.at(-1)!.raw.toString()).toMatch(/<b>bold part<\/b>|font-weight/);
    await mailRow(page, 'Rich hello').waitFor({ timeout: 20_000 });
    await mailRow(page, 'Rich hello').click();
    await expect.poll(() => page.frameLocator('[data-testid=mail-frame]').locator('b').first().innerText()).toBe('bold part');
  });

  it('labels a message, lists a label across folders, removes the label (spec 2, Labels: label tree)', async () => {
    // 'Rich hello' is open from the previous test.
    await page.getByTestId('label-add').click();
    await page.getByTestId('label-input').fill('Important');
    await page.getByTestId('label-input').press('Enter');
    await page.locator('[data-testid=label-chip][data-name=Important]').waitFor({ timeout: 15_000 });
    await page.locator('[data-testid=mail-label][data-name=Important]').click();
    await expect.poll(() => page.locator('[data-testid=mail-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-subject'))), { timeout: 15_000 }).toEqual(['Rich hello']);
    await mailRow(page, 'Rich hello').click();
    await page.locator('[data-testid=label-chip][data-name=Important] button').click();
    await expect.poll(() => page.locator('[data-testid=label-chip]').count(), { timeout: 15_000 }).toBe(0);
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
    await mailRow(page, 'Rich hello').waitFor();
  });

  it('lists a large folder virtualized, newest first, fetching further pages as it scrolls (docs/ui.md: virtualized list)', async () => {
    await page.locator('[data-testid=mail-folder][data-name=Bulk]').click();
    await mailRow(page, `Bulk ${String(BULK - 1).padStart(3, '0')}`).waitFor({ timeout: 20_000 });
    expect(await page.locator('[data-testid=mail-row]').first().getAttribute('data-subject')).toBe(`Bulk ${String(BULK - 1).padStart(3, '0')}`);
    const list = page.getByTestId('mail-list');
    const footer = page.locator('.mail-list-wrap .list-footer');
    // Scroll to the end until every page has arrived; only the visible rows are in the DOM.
    await expect
      .poll(
        async () => {
          await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
          return footer.innerText();
        },
        { timeout: 30_000 },
      )
      .toBe(`${BULK} conversations`);
    await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await mailRow(page, 'Bulk 000').waitFor();
    expect(await page.locator('[data-testid=mail-row]').count()).toBeLessThan(40);
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
    await mailRow(page, `Re: ${subject}`).waitFor();
  });

  it('moves with j/k, marks unread with u, deletes to Trash with # (docs/ui.md: keyboard shortcuts)', async () => {
    await closeCompose(page);
    await mailRow(page, `Re: ${subject}`).click();
    await page.locator('body').press('j');
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Lunch?');
    await page.locator('body').press('k');
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe(`Re: ${subject}`);
    await page.locator('body').press('j');
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Lunch?');
    await expect.poll(() => mailRow(page, 'Lunch?').getAttribute('data-unread')).toBe('false');
    await page.locator('body').press('u');
    await expect.poll(() => mailRow(page, 'Lunch?').getAttribute('data-unread')).toBe('true');
    await page.locator('body').press('#');
    await expect.poll(() => mailRow(page, 'Lunch?').count()).toBe(0);
    await page.locator('[data-testid=mail-folder][data-special=trash]').click();
    await mailRow(page, 'Lunch?').waitFor({ timeout: 15_000 });
    await page.locator('[data-testid=mail-folder][data-special=inbox]').click();
    await mailRow(page, `Re: ${subject}`).waitFor();
  });

  it('saves a draft; a send while SMTP is down waits in the outbox with the error shown, and can be cancelled (spec 2, Send; docs/mail.md, The outbox)', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-to').fill('bob@example.test');
    await compose.getByTestId('compose-subject').fill('Will not go out');
    await compose.getByTestId('compose-body').fill('The relay is down.');
    await compose.getByTestId('compose-save-draft').click();
    await expect.poll(() => compose.getByTestId('compose-state').innerText(), { timeout: 15_000 }).toBe('Draft saved');
    await relay.stop();
    await compose.getByTestId('compose-send').click();
    // Not lost and not "sent": the message waits in the outbox, which says why.
    await compose.waitFor({ state: 'detached', timeout: 30_000 });
    const outbox = page.getByTestId('mail-outbox');
    await outbox.getByTestId('mail-outbox-toggle').click();
    const item = outbox.locator('[data-testid=mail-outbox-item][data-subject="Will not go out"]');
    await expect.poll(() => item.getAttribute('data-state'), { timeout: 15_000 }).toBe('queued');
    await expect.poll(() => item.getByTestId('mail-outbox-error').innerText()).toMatch(/ECONNREFUSED|connect/i);
    await dismissToasts(page);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-outbox.png') });
    await page.setViewportSize({ width: 800, height: 600 });
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-outbox-800.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
    await item.getByTestId('mail-outbox-cancel').click();
    await outbox.waitFor({ state: 'detached', timeout: 15_000 });
  });

  it('a pasted image becomes an attachment sent over HTTP, not a data: URL inside the body (a call over the WebSocket is at most 1 MiB)', async () => {
    await page.locator('body').press('c');
    const compose = page.getByTestId('compose-window');
    await compose.getByTestId('compose-rich-toggle').check();
    const rich = compose.getByTestId('compose-rich');
    await rich.click();
    await rich.evaluate((el) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(2 << 20)], 'pasted.png', { type: 'image/png' }));
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    });
    await expect.poll(() => compose.locator('[data-testid=compose-attachment][data-state=ready]').count(), { timeout: 20_000 }).toBe(1);
    expect(await rich.innerHTML()).not.toContain('<img');
    await closeCompose(page);
  });

  it('raised no page errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
