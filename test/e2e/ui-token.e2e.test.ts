/**
 * The web UI link in Chromium against headless mode: Settings makes a new link (contract
 * uiToken.rotate); the tab carries on with it, the old link is refused, and a download goes by
 * a one-use URL that holds no token.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApp, type OpenApp } from './harness';

let app: OpenApp;
let page: Page;

beforeAll(async () => {
  app = await openApp('ui-token');
  page = app.page;
}, 120_000);

afterAll(() => app?.close());

describe('web UI link (Settings: make a new web UI link)', () => {
  it('a download is a one-use URL without the token', async () => {
    const token = new URL(app.url).searchParams.get('token')!;
    const name = 'ticket.txt';
    const data = 'bytes of a ticket download';
    // The first-run account lists the local folder: a file put there shows after a reload.
    writeFileSync(join(app.localFolder, name), data);
    await page.reload();
    const row = page.locator(`[data-testid=file-row][data-name="${name}"]`);
    await row.waitFor();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByTestId('download').click()]);
    expect(readFileSync((await download.path())!, 'utf8')).toBe(data);
    const url = download.url();
    expect(url).toMatch(/\/app\/download\/[\w-]{43}$/);
    expect(url).not.toContain(token);
    expect(requests.filter((r) => r.includes(token))).toEqual([]);
    // Used up: the same address downloads nothing again.
    expect((await fetch(url)).status).toBe(404);
  });

  it('Settings makes a new link: this tab goes on with it, the old link is refused', async () => {
    const old = app.url;
    page.once('dialog', (d) => void d.accept());
    await page.getByTestId('settings-open').click();
    await Promise.all([page.waitForEvent('load'), page.getByTestId('ui-token-rotate').click()]);
    await page.getByTestId('file-list').waitFor();
    const fresh = await page.evaluate(() => sessionStorage.getItem('tributary.token'));
    expect(fresh).toMatch(/^[\w-]{32}$/);
    expect(old).not.toContain(fresh!);
    // The old link: the page loads, but its connection is refused.
    const other = await app.browser.newPage();
    await other.goto(old);
    const ws = await other.evaluate(
      (u) =>
        new Promise<string>((resolve) => {
          const s = new WebSocket(u);
          s.onopen = () => resolve('open');
          s.onerror = () => resolve('refused');
        }),
      `${new URL(old).origin.replace('http', 'ws')}/ws?token=${new URL(old).searchParams.get('token')}`,
    );
    expect(ws).toBe('refused');
    await other.close();
  });
});
