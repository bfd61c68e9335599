/**
 * The browser is live, end to end in Chromium against headless mode: a file written outside
 * Tributary appears in the open folder by itself — on the local account through the watch, on
 * Apache WebDAV through the poll of the open folder — and disappears when it is deleted; no
 * activity subscription is involved. The Refresh button and F5 list the folder again (F5
 * without reloading the page). Screenshots in test-results/.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectWebdav, row, setPollSeconds } from './live-helpers';

let app: OpenApp;
let page: Page;
let apache: ApacheServer;

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  apache = await startApache();
  app = await openApp('live');
  page = app.page;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await apache?.stop();
});

/** Writes a file into the DAV root behind Apache's back (as another client would). */
function writeOnServer(name: string, body: string): void {
  const path = join(apache.root, name);
  writeFileSync(path, body);
}

describe('the open folder is live (spec 1, List a folder: what the server holds now)', () => {
  it('local account: a file written on disk appears, and goes when deleted on disk, without any click', async () => {
    writeFileSync(join(app.localFolder, 'from outside.txt'), 'written by another program');
    await row(page, 'from outside.txt').waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(RESULTS, 'e2e-live-local-added.png') });
    rmSync(join(app.localFolder, 'from outside.txt'));
    await row(page, 'from outside.txt').waitFor({ state: 'detached', timeout: 10_000 });
  });

  it('WebDAV: a file another client put on the server appears through the poll of the open folder, and goes when deleted', async () => {
    await setPollSeconds(page, 1);
    await connectWebdav(page, apache, 'Team DAV');
    await page.getByTestId('list-empty').waitFor();
    writeOnServer('uploaded elsewhere.txt', 'by another WebDAV client');
    await row(page, 'uploaded elsewhere.txt').waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(RESULTS, 'e2e-live-webdav-added.png') });
    rmSync(join(apache.root, 'uploaded elsewhere.txt'));
    await row(page, 'uploaded elsewhere.txt').waitFor({ state: 'detached', timeout: 15_000 });
  });

  it('Refresh and F5 list the folder again at once; F5 does not reload the page', async () => {
    // A poll that would not come during this test: what appears comes from Refresh / F5.
    await setPollSeconds(page, 3600);
    writeOnServer('refresh me.txt', 'one');
    await page.getByTestId('refresh').click();
    await row(page, 'refresh me.txt').waitFor({ timeout: 10_000 });

    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
    writeOnServer('press f5.txt', 'two');
    await page.getByTestId('file-list').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('F5');
    await row(page, 'press f5.txt').waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    await page.screenshot({ path: join(RESULTS, 'e2e-live-refresh.png') });
    // The toolbar with Refresh at the smallest window size the app supports.
    await page.setViewportSize({ width: 800, height: 600 });
    await expect.poll(() => page.getByTestId('refresh').isVisible()).toBe(true);
    await page.screenshot({ path: join(RESULTS, 'e2e-live-refresh-800x600.png') });
  });
});
