/**
 * The mailbox's panes, end to end in Chromium against `serve` and a real Dovecot (docs/ui.md,
 * "Mail"): the folder pane and the message list resize from the keyboard and by drag, the folder
 * pane collapses, and a reload keeps both; the narrow layout (800×600) stays as it was.
 * Screenshots go to test-results/e2e-mail-panes-*.png, at 1440×900 and 800×600.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectImap, mailRow } from './mail-helpers';

let app: OpenApp;
let dovecot: DovecotServer;
let relay: SmtpRelay;
let page: Page;
let pageErrors: string[] = [];

const width = async (l: Locator) => (await l.boundingBox())?.width;
const folders = () => page.getByTestId('mail-folders');
const list = () => page.getByTestId('mail-list-pane');

/** Drags a splitter sideways by `dx` pixels, in two moves. */
async function drag(testId: string, dx: number): Promise<void> {
  const bar = (await page.getByTestId(testId).boundingBox())!;
  const x = bar.x + bar.width / 2;
  const y = bar.y + 200;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + dx / 2, y, { steps: 2 });
  await page.mouse.move(x + dx, y, { steps: 2 });
  await page.mouse.up();
}

async function shoot(name: string): Promise<void> {
  await page.screenshot({ path: join(RESULTS, `e2e-mail-panes-${name}-1440.png`) });
  await page.setViewportSize({ width: 800, height: 600 });
  await page.screenshot({ path: join(RESULTS, `e2e-mail-panes-${name}-800.png`) });
  await page.setViewportSize({ width: 1440, height: 900 });
}

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  dovecot = await startDovecot();
  relay = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
  const raw = await new MailComposer({ from: 'Bob <bob@example.test>', to: 'alice@example.test', subject: 'Pane note', text: 'A note to read beside the panes.' }).compile().build();
  await dovecot.deliver(raw, ['alice'], 'bob@example.test');
  app = await openApp('mail-panes', { context: { viewport: { width: 1440, height: 900 } } });
  ({ page, pageErrors } = app);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await relay?.stop().catch(() => {});
  await dovecot?.stop();
});

describe('E2E: the mailbox panes resize and collapse, and stay so (docs/ui.md, Mail)', () => {
  it('connects a mail account and reads a message beside the panes', async () => {
    await connectImap(page, { host: dovecot.host, port: dovecot.imapPort }, relay, { accountName: 'Alice mail' });
    const row = mailRow(page, 'Pane note');
    await row.waitFor({ timeout: 20_000 });
    await row.click();
    await expect.poll(() => page.getByTestId('reader-subject').innerText()).toBe('Pane note');
  });

  it('the folder pane and the message list resize from the keyboard (←/→, Home/End) with aria-valuenow', async () => {
    const folderBar = page.getByTestId('mail-folders-splitter');
    const listBar = page.getByTestId('mail-list-splitter');
    expect(await folderBar.getAttribute('role')).toBe('separator');
    const f0 = (await width(folders()))!;
    const l0 = (await width(list()))!;
    await folderBar.focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => width(folders())).toBe(f0 + 32);
    expect(await folderBar.getAttribute('aria-valuenow')).toBe(String(f0 + 32));
    await listBar.focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => width(list())).toBe(l0 - 16);
    expect(await listBar.getAttribute('aria-valuenow')).toBe(String(l0 - 16));
    // Home is the narrowest the pane goes, End the widest.
    await page.keyboard.press('Home');
    await expect.poll(() => listBar.getAttribute('aria-valuenow')).toBe(await listBar.getAttribute('aria-valuemin'));
    await page.keyboard.press('End');
    await expect.poll(() => listBar.getAttribute('aria-valuenow')).toBe(await listBar.getAttribute('aria-valuemax'));
    await page.keyboard.press('Home');
    await expect.poll(() => width(list())).toBe(Number(await listBar.getAttribute('aria-valuemin')));
  });

  it('the panes resize by dragging their splitters, and a reload keeps the widths', async () => {
    const f0 = (await width(folders()))!;
    const l0 = (await width(list()))!;
    await drag('mail-folders-splitter', 40);
    await expect.poll(() => width(folders())).toBe(f0 + 40);
    await drag('mail-list-splitter', 100);
    await expect.poll(() => width(list())).toBe(l0 + 100);
    await page.reload();
    await expect.poll(() => width(folders()), { timeout: 20_000 }).toBe(f0 + 40);
    await expect.poll(() => width(list())).toBe(l0 + 100);
    await expect.poll(() => page.getByTestId('mail-list-splitter').getAttribute('aria-valuenow')).toBe(String(l0 + 100));
    await shoot('resized');
  });

  it('the folder pane collapses and stays collapsed after a reload; the list keeps its width', async () => {
    const l = (await width(list()))!;
    const toggle = page.getByTestId('mail-folders-toggle');
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await toggle.click();
    await expect.poll(() => folders().count()).toBe(0);
    expect(await page.getByTestId('mail-folders-splitter').count()).toBe(0);
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await page.reload();
    await page.getByTestId('mail-list-pane').waitFor({ timeout: 20_000 });
    await expect.poll(() => width(list())).toBe(l);
    expect(await folders().count()).toBe(0);
    await shoot('folders-collapsed');
    await page.getByTestId('mail-folders-toggle').click();
    await folders().waitFor();
  });

  it('at 800×600 the narrow layout stands: folder icons, the list filling the rest, no splitters', async () => {
    await page.setViewportSize({ width: 800, height: 600 });
    await page.getByTestId('reader-back').click();
    await expect.poll(() => width(folders())).toBe(52);
    expect(await page.getByTestId('mail-folders-splitter').isVisible()).toBe(false);
    expect(await page.getByTestId('mail-list-splitter').isVisible()).toBe(false);
    const content = (await page.locator('main.content').boundingBox())!;
    // The list takes everything beside the folder icons, whatever width was chosen for wide windows.
    await expect.poll(() => width(list())).toBe(content.width - 52);
    await page.screenshot({ path: join(RESULTS, 'e2e-mail-panes-narrow-800.png') });
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('an accounts pane width kept by an earlier version ({side, collapsed}) still opens at that width', async () => {
    await page.evaluate(() => localStorage.setItem('tributary.panes', JSON.stringify({ side: 300, collapsed: false })));
    await page.reload();
    await expect.poll(() => width(page.getByTestId('accounts-pane')), { timeout: 20_000 }).toBe(300);
    // The mailbox panes start at their first widths, and the next change is kept in the new shape.
    await expect.poll(() => page.getByTestId('mail-folders-splitter').getAttribute('aria-valuenow')).toBe('180');
    await page.getByTestId('mail-folders-splitter').focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => page.evaluate(() => JSON.parse(localStorage.getItem('tributary.panes') ?? '{}'))).toEqual({
      width: { accounts: 300, mailFolders: 164, mailList: 340 },
      collapsed: { accounts: false, mailFolders: false, mailList: false },
    });
  });

  it('raised no page errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
