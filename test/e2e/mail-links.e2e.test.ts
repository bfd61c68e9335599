/**
 * Deep links to a message (spec 2, Messages: retrieve), end to end in Chromium against `serve`
 * and a real Dovecot: the open folder and message are in the address, a reload and a pasted link
 * land on the same message, and Back/Forward (Alt+←/→) step between the messages read.
 */

import { join } from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectImap, mailRow } from './mail-helpers';

let app: OpenApp;
let dovecot: DovecotServer;
let relay: SmtpRelay;
let page: Page;

const row = (subject: string) => mailRow(page, subject);
const readerSubject = () => page.getByTestId('reader-subject').innerText();

/**
 * Lets a test hold back the page's scheduled work (React's scheduler posts it through a
 * MessageChannel) by `window.lateWorkMs`, as a busy machine does: a render or an effect then runs
 * after events the user has already caused, such as the next Back or Forward.
 */
function lateScheduledWork(): void {
  const post = MessagePort.prototype.postMessage;
  const w = window as unknown as { lateWorkMs: number };
  w.lateWorkMs = 0;
  MessagePort.prototype.postMessage = function (this: MessagePort, ...args: Parameters<MessagePort['postMessage']>) {
    if (!w.lateWorkMs) return post.apply(this, args);
    setTimeout(() => post.apply(this, args), w.lateWorkMs);
  } as MessagePort['postMessage'];
}
/** Waits for the reading pane to show `subject`, checking at every frame rather than every poll. */
const readerShows = (subject: string) => page.getByTestId('reader-subject').getByText(subject, { exact: true }).waitFor({ timeout: 20_000 });

beforeAll(async () => {
  dovecot = await startDovecot();
  relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
  for (const [subject, minutesAgo] of [
    ['First note', 60],
    ['Second note', 30],
  ] as const) {
    const raw = await new MailComposer({ from: 'Bob <bob@example.test>', to: 'alice@example.test', subject, text: `${subject} body`, date: new Date(Date.now() - minutesAgo * 60_000) }).compile().build();
    await dovecot.deliver(raw, ['alice'], 'bob@example.test');
  }
  app = await openApp('mail-links', { onPage: (p) => void p.addInitScript(lateScheduledWork) });
  page = app.page;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await relay?.stop().catch(() => {});
  await dovecot?.stop();
});

describe('deep links to a message (spec 2, Messages: retrieve; docs/ui.md, Files: actions and navigation)', () => {
  it('the address names the message; a reload, Back/Forward and a pasted link land on it', async () => {
    await connectImap(page, { host: dovecot.host, port: dovecot.imapPort }, relay, { accountName: 'Alice mail' });
    await row('First note').waitFor({ timeout: 20_000 });

    await row('First note').click();
    await expect.poll(readerSubject).toBe('First note');
    await expect.poll(() => new URL(page.url()).hash).toMatch(/^#\/account\/\d+\/folder\/[^/]+\/message\/[^/]+$/);
    const firstLink = page.url();
    await row('Second note').click();
    await expect.poll(readerSubject).toBe('Second note');

    await page.reload();
    await expect.poll(readerSubject, { timeout: 20_000 }).toBe('Second note');
    // The list is in too before the user goes Back, as it is for someone who sees the page.
    await row('First note').waitFor({ timeout: 20_000 });
    // Chromium on a loaded machine may take more than expect.poll's default second to follow.
    await page.keyboard.press('Alt+ArrowLeft');
    await expect.poll(readerSubject, { timeout: 10_000 }).toBe('First note');
    await page.keyboard.press('Alt+ArrowRight');
    await expect.poll(readerSubject, { timeout: 10_000 }).toBe('Second note');
    await page.screenshot({ path: join(RESULTS, 'e2e-file-actions-mail-link.png') });

    // The link pasted into the address bar of this tab, after leaving the app.
    await page.goto('about:blank');
    await page.goto(firstLink);
    await expect.poll(readerSubject, { timeout: 20_000 }).toBe('First note');
  });

  it('Forward pressed as soon as Back has shown the earlier message lands on the later one, however late the page runs its work', async () => {
    await row('Second note').click();
    await readerShows('Second note');
    const secondLink = page.url();
    await page.evaluate(() => ((window as unknown as { lateWorkMs: number }).lateWorkMs = 400));
    try {
      for (let round = 0; round < 3; round++) {
        await page.keyboard.press('Alt+ArrowLeft');
        await readerShows('First note');
        await page.keyboard.press('Alt+ArrowRight');
        await readerShows('Second note');
        // The page settles there: nothing written over the place Forward took.
        await page.waitForTimeout(1_000);
        expect(await readerSubject()).toBe('Second note');
        expect(page.url()).toBe(secondLink);
      }
    } finally {
      await page.evaluate(() => ((window as unknown as { lateWorkMs: number }).lateWorkMs = 0));
    }
  });
});
