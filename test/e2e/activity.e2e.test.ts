/**
 * End to end, in real Chromium against headless mode: the activity dashboard (issue 6, item 5).
 * Open it from the header, subscribe the local account, drop a file into the local folder from
 * outside the app (fs.writeFile) and see the `add` appear live; pause and resume; add a webhook
 * whose test POST is answered with the application id (and one that answers wrongly, with the
 * error shown), see its delivery attempts, delete it; the track-activity setting. Screenshot in
 * test-results/e2e-activity.png.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../servers/util';

const ROOT = join(import.meta.dirname, '../..');
const RESULTS = join(ROOT, 'test-results');
const CHROMIUM = '/usr/bin/chromium';
// notes/test-servers.md §10
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  const html = join(ROOT, 'out/renderer/index.html');
  const serve = join(ROOT, 'out/main/serve.js');
  const sources = Math.max(newestMtime(join(ROOT, 'src-renderer')), newestMtime(join(ROOT, 'src-main')));
  const stale = !existsSync(html) || !existsSync(serve) || Math.min(statSync(html).mtimeMs, statSync(serve).mtimeMs) < sources;
  if (!stale) return;
  const r = spawnSync(join(ROOT, 'node_modules/.bin/electron-vite'), ['build'], { cwd: ROOT, env: { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`electron-vite build failed:\n${r.stdout}\n${r.stderr}`);
}

function startServe(dataDir: string, localFolder: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'out/main/serve.js'), '--port', '0', '--data-dir', dataDir, '--local-folder', localFolder], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve printed no URL within 20 s. stderr:\n${stderr}`)), 20_000);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}. stderr:\n${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /Tributary is running at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
  });
}

const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

describe('E2E activity dashboard in Chromium against headless mode (issue 6, item 5)', () => {
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
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium).`);
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
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
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
    const row = page.locator('[data-testid=activity-row][data-name="dropped-from-outside.txt"]');
    await row.first().waitFor({ timeout: 20_000 });
    expect(await row.first().getAttribute('data-type')).toBe('add');
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
    await page.getByTestId('activity-toggle').click();
    await expect.poll(() => page.getByTestId('track-activity').isChecked()).toBe(!before);
  });

  it('raised no page errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
