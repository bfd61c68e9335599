/**
 * A transfer row claims nothing it does not know and says what the user did, end to end in
 * Chromium against headless mode: a copy from the local folder to Apache WebDAV behind a proxy
 * that lets 1 MB/s reach it. The page's WebSocket is routed through the test, which holds back
 * some `transfers.updated` events from the page for a while (the server's own events, only
 * delayed), so each moment is on screen long enough to be looked at:
 * - running with no byte counted yet: an indeterminate bar, no percentage, no speed;
 * - Cancel clicked: "Cancelling…", the button disabled, until the transfer has ended;
 * - cancelled: an informational message, no error.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { startThrottle, type Throttle } from '../servers/throttle';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectWebdav, dragRowsCopy, row } from './live-helpers';

const MB = 1024 * 1024;

let apache: ApacheServer;
let throttle: Throttle;
let app: OpenApp;
let page: Page;

/** What the test holds back from the page: progress events with bytes, and events of an ended copy. */
const hold = { bytes: false, end: false };
let held: string[] = [];
let toPage: WebSocketRoute | null = null;
const release = () => {
  for (const m of held) toPage?.send(m);
  held = [];
};

beforeAll(async () => {
  apache = await startApache();
  throttle = await startThrottle(apache.port, MB);
  app = await openApp('cancel');
  page = app.page;
  await page.routeWebSocket(/\/ws\?/, (ws) => {
    toPage = ws;
    const server = ws.connectToServer();
    ws.onMessage((m) => server.send(m));
    server.onMessage((m) => {
      const text = String(m);
      const msg = JSON.parse(text) as { type: string; name?: string; payload?: { direction: string; bytesDone: number; state: string } };
      const t = msg.type === 'event' && msg.name === 'transfers.updated' ? msg.payload! : null;
      if (t?.direction === 'copy' && ((hold.bytes && t.bytesDone > 0) || (hold.end && t.state !== 'running'))) held.push(text);
      else ws.send(m);
    });
  });
  await page.reload();
  await page.getByTestId('file-list').waitFor();
  await connectWebdav(page, apache, 'Slow DAV', throttle.port);
  await page.getByTestId('list-empty').waitFor();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await throttle?.stop();
  await apache?.stop();
});

const transfer = () => page.locator('[data-testid=transfer-row][data-name="big.bin"]');

// docs/ui.md, "Transfers tell the truth"
describe('a copy that is cancelled (Transfers tell the truth)', () => {
  it('running with no byte counted yet: an indeterminate bar, no percentage and no speed', async () => {
    await page.locator('[data-testid=account-item][data-service=local] .account-main').click();
    writeFileSync(join(app.localFolder, 'big.bin'), randomBytes(24 * MB));
    await row(page, 'big.bin').waitFor();
    await page.getByTestId('transfers-toggle').click();
    hold.bytes = true;
    await dragRowsCopy(page, ['big.bin'], '[data-testid=account-item][data-name="Slow DAV"]');
    await expect.poll(() => transfer().getAttribute('data-state')).toBe('running');
    // The server has counted bytes meanwhile; the page still knows none.
    await expect.poll(() => held.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await transfer().getAttribute('data-done')).toBe('0');
    const bar = transfer().getByRole('progressbar');
    expect(await bar.getAttribute('aria-valuenow')).toBeNull();
    expect(await bar.locator('.progress-fill').getAttribute('class')).toContain('indeterminate');
    const detail = await transfer().locator('.transfer-detail').innerText();
    expect(detail).not.toMatch(/B\/s|%/);
    expect(detail).toContain('24.0 MB');
    await page.screenshot({ path: join(RESULTS, 'e2e-cancel-starting.png') });

    hold.bytes = false;
    release();
    await expect.poll(async () => Number(await transfer().getAttribute('data-done'))).toBeGreaterThan(0);
    expect(Number(await bar.getAttribute('aria-valuenow'))).toBeGreaterThanOrEqual(0);
    await expect.poll(() => transfer().locator('.transfer-detail').innerText()).toMatch(/ of 24\.0 MB · .+\/s/);
  });

  it('Cancel: "Cancelling…", disabled, until the transfer has ended', async () => {
    expect(await transfer().getAttribute('data-state')).toBe('running');
    hold.end = true;
    try {
      await transfer().getByTestId('transfer-cancel').click();
      const button = transfer().getByTestId('transfer-cancel');
      await expect.poll(() => button.innerText()).toBe('Cancelling…');
      expect(await button.isDisabled()).toBe(true);
      expect(await transfer().locator('.transfer-detail').innerText()).toBe('Cancelling…');
      // The server has ended it; until the page hears so, it still says Cancelling….
      await expect.poll(() => held.length, { timeout: 15_000 }).toBeGreaterThan(0);
      await page.waitForTimeout(300);
      expect(await button.innerText()).toBe('Cancelling…');
      expect(await transfer().getAttribute('data-state')).toBe('running');
      await page.screenshot({ path: join(RESULTS, 'e2e-cancel-cancelling.png') });
    } finally {
      hold.end = false;
      release();
    }
    await expect.poll(() => transfer().getAttribute('data-state')).toBe('cancelled');
    expect(await transfer().getByTestId('transfer-cancel').count()).toBe(0);
  });

  it('a copy cancelled by the user ends with an informational message, not an error', async () => {
    // Whatever the page says about the copy, once it has said it.
    await expect.poll(() => page.locator('.toast').filter({ hasText: 'big.bin' }).count()).toBe(1);
    expect(await page.getByTestId('toast-error').allInnerTexts()).toEqual([]);
    expect(await page.getByTestId('toast-info').allInnerTexts()).toContainEqual(expect.stringContaining('“big.bin” was not copied'));
    await page.screenshot({ path: join(RESULTS, 'e2e-cancel-cancelled.png') });
  });

  it('raised no page errors', () => {
    expect(app.pageErrors).toEqual([]);
  });
});
