/**
 * End to end, in real Chromium against headless mode: the activity dashboard (spec 3).
 * Open it from the header, subscribe the local account, drop a file into the local folder from
 * outside the app (fs.writeFile) and see the `add` appear live; pause and resume; add a webhook
 * whose test POST is answered with the application id (and one that answers wrongly, with the
 * error shown), see its delivery attempts, delete it; the track-activity setting. Screenshot in
 * test-results/e2e-activity.png.
 */
import { type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../servers/util';
import { RESULTS, ensureBuilt, launchChromium, startServe, stopChild } from './harness';






describe('E2E activity dashboard in Chromium against headless mode (spec 3)', () => {
  let scratch: string;
  let localFolder: string;
  let serve: { child: ChildProcess; url: string };
  let browser: Browser;
  let page: Page;
  let receiver: Server;
  let receiverUrl: string;
  let applicationId = '';
  const posts: { path: string; body: string }[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(RESULTS, { recursive: true });
    // A webhook receiver: /good answers the application id (spec 3 webhook test), /bad does not.
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        posts.push({ path: req.url ?? '', body });
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end(req.url === '/good' ? applicationId : 'nope');
      });
    });
    const port = await freePort();
    await new Promise<void>((r) => receiver.listen(port, '127.0.0.1', () => r()));
    receiverUrl = `http://127.0.0.1:${port}`;
    scratch = mkdtempSync(join(tmpdir(), 'tributary-e2e-activity-'));
    localFolder = join(scratch, 'home');
    serve = await startServe(join(scratch, 'data'), localFolder);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    await page.goto(serve.url);
  });

  afterAll(async () => {
    await browser?.close();
    if (serve) await stopChild(serve.child);
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const card = () => page.locator('[data-testid=subscription][data-account="This computer"]');

  it('opens the dashboard from the header and subscribes the local account (spec 3, Subscriptions: create)', async () => {
    await page.locator('[data-testid=account-item][data-service=local]').waitFor();
    await page.getByTestId('activity-toggle').click();
    await page.getByTestId('activity-dashboard').waitFor();
    await expect.poll(() => card().getAttribute('data-state')).toBe('none');
    await card().getByTestId('subscription-type').selectOption('changes');
    await card().getByTestId('subscribe').click();
    await expect.poll(() => card().getAttribute('data-state')).toBe('active');
    expect(await card().innerText()).toContain('changes');
    expect(await card().innerText()).toContain('everything');
  });

  it('shows a file written into the local folder from outside the app live, as a v2 storage add (spec 3, Activity: list)', async () => {
    await writeFile(join(localFolder, 'dropped-from-outside.txt'), 'hello from outside\n');
    // The write may also be seen as a modify just after the add (two watch events): the add row is
    // the one that must be there, wherever a newer row puts it.
    const row = page.locator('[data-testid=activity-row][data-name="dropped-from-outside.txt"][data-type=add]');
    await row.first().waitFor({ timeout: 20_000 });
    expect(await row.first().innerText()).toContain('storage · add');
    expect(await row.first().innerText()).toContain('This computer');
  });

  it('pauses and resumes the subscription (spec 3, Subscriptions: update active)', async () => {
    await card().getByTestId('subscription-pause').click();
    await expect.poll(() => card().getAttribute('data-state')).toBe('paused');
    await card().getByTestId('subscription-resume').click();
    await expect.poll(() => card().getAttribute('data-state')).toBe('active');
  });

  it('adds a webhook after its test POST, refuses one that answers wrongly, shows delivery attempts, deletes (spec 3, Webhooks)', async () => {
    applicationId = (await page.getByTestId('application-id').innerText()).trim();
    expect(applicationId).not.toBe('');
    // The receiver is on loopback: refused until Settings → Network allows private addresses.
    await page.getByTestId('webhook-url').fill(`${receiverUrl}/good`);
    await page.getByTestId('webhook-create').click();
    await expect.poll(() => page.getByTestId('webhook-status').getAttribute('class')).toContain('error');
    expect(await page.getByTestId('webhook-status').innerText()).toContain('loopback');
    expect(posts.length).toBe(0);
    await page.getByTestId('settings-open').click();
    await page.getByTestId('setting-allow-private').check();
    await expect.poll(() => page.getByTestId('setting-allow-private').isChecked()).toBe(true);
    await page.getByTestId('settings-close').click();
    await page.getByTestId('webhook-url').fill(`${receiverUrl}/bad`);
    await page.getByTestId('webhook-create').click();
    await expect.poll(() => page.getByTestId('webhook-status').getAttribute('class')).toContain('error');
    expect((await page.getByTestId('webhook-status').innerText()).length).toBeGreaterThan(10);
    expect(await page.locator('[data-testid=webhook]').count()).toBe(0);

    await page.getByTestId('webhook-url').fill(`${receiverUrl}/good`);
    await page.getByTestId('webhook-create').click();
    await expect.poll(() => page.getByTestId('webhook-status').getAttribute('class')).toContain('ok');
    const hook = page.locator(`[data-testid=webhook][data-url="${receiverUrl}/good"]`);
    await hook.waitFor();
    expect(posts.filter((p) => p.path === '/good')[0]!.body).toBe('{}');
    // New activity notifies the webhook; the attempt shows under it.
    await writeFile(join(localFolder, 'second.txt'), 'again\n');
    await page.locator('[data-testid=activity-row][data-name="second.txt"]').first().waitFor({ timeout: 20_000 });
    expect(await hook.locator('[data-testid=webhook-attempt][data-kind=test]').count()).toBe(1);
    await expect.poll(() => hook.locator('[data-testid=webhook-attempt][data-kind=notify]').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    expect(posts.some((p) => p.path === '/good' && p.body.includes('"subscription"'))).toBe(true);
    await page.screenshot({ path: join(RESULTS, 'e2e-activity.png') });
    await hook.getByTestId('webhook-delete').click();
    await expect.poll(() => hook.count()).toBe(0);
  });

  it('toggles the track-activity setting (spec 3, Settings)', async () => {
    const box = page.getByTestId('track-activity');
    const before = await box.isChecked();
    await box.click();
    await expect.poll(() => box.isChecked()).toBe(!before);
    await page.reload();
    // The address keeps the place (docs/ui.md, Back, Forward, links): the dashboard is open again.
    await page.getByTestId('activity-dashboard').waitFor();
    await expect.poll(() => page.getByTestId('track-activity').isChecked()).toBe(!before);
  });

  it('filters the stream, charts it per minute, shows the cursor, and opens a file from it (spec 3, Activity)', async () => {
    const rows = page.locator('[data-testid=activity-row]');
    await rows.first().waitFor();
    // The chart counts what the stream holds for the last half hour; the card shows the cursor.
    expect(Number(await page.getByTestId('activity-chart').getAttribute('data-total'))).toBeGreaterThanOrEqual(2);
    expect(await card().getByTestId('subscription-cursor').innerText()).not.toContain('no activity yet');
    expect(await card().getByTestId('subscription-state').innerText()).toBe('watching'); // the local folder is watched, not polled

    // (The write may arrive as add, or add then update: every row about it counts.)
    const names = () => rows.evaluateAll((els) => [...new Set(els.map((e) => e.getAttribute('data-name')))].join(','));
    expect(await names()).toContain('dropped-from-outside.txt');
    await page.getByTestId('stream-filter-text').fill('second');
    await expect.poll(names).toBe('second.txt');
    const matching = await rows.count();
    await page.getByTestId('stream-filter-type').selectOption('delete');
    await expect.poll(() => rows.count()).toBe(0);
    await page.getByTestId('stream-filter-type').selectOption('');
    await page.getByTestId('stream-filter-account').selectOption({ label: 'This computer' });
    await expect.poll(() => rows.count()).toBe(matching);
    expect(await page.getByTestId('stream-count').innerText()).toMatch(new RegExp(`^${matching} of \\d+ events$`));

    // Clicking the event opens the folder holding the file, with the file selected.
    await rows.first().click();
    const fileRow = page.locator('[data-testid=file-row][data-name="second.txt"]');
    await expect.poll(() => fileRow.getAttribute('aria-selected')).toBe('true');
    await page.screenshot({ path: join(RESULTS, 'e2e-activity-open.png') });
  });

  it('raised no page errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
