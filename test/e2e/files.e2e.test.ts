/**
 * End to end, in real Chromium (Debian's, via playwright-core) against headless mode
 * (`node out/main/serve.js`), through the built web UI only — the same renderer Electron shows.
 * spec 1, Files and Folders: first-run local account visible; connect the
 * Apache WebDAV account through the form; create a folder; drop a file onto the list (a real
 * `drop` event carrying a DataTransfer); see it with its size; rename it; download it and
 * compare bytes; delete it; a screenshot is kept in test-results/.
 */
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache } from '../servers/apache';
import { RESULTS, dropFile, ensureBuilt, formatBytes, launchChromium, startServe, stopChild } from './harness';







const row = (page: Page, name: string) => page.locator(`[data-testid=file-row][data-name="${name}"]`);


/** Create a folder, drop a file into it, check its size, rename, download and compare, delete. */
async function fileRoundTrip(page: Page, label: string, onDisk?: (folder: string, name: string) => string): Promise<void> {
  const folder = `E2E ${label} ${Date.now() % 100000}`;
  // spec 1, Files: Create a folder
  await page.getByTestId('new-folder').click();
  await page.getByTestId('prompt-input').fill(folder);
  await page.getByTestId('prompt-ok').click();
  await expect.poll(() => row(page, folder).count()).toBe(1);
  await row(page, folder).dblclick();
  await expect.poll(() => page.getByTestId('breadcrumbs').innerText()).toContain(folder);
  await page.getByTestId('list-empty').waitFor();

  // spec 1, Files: Upload a file — by OS drag and drop onto the list
  const bytes = randomBytes(70_001);
  const name = 'dropped report.bin';
  await dropFile(page, '[data-testid=file-list]', name, bytes);
  await row(page, name).waitFor();
  await expect.poll(() => row(page, name).getByTestId('file-size').innerText()).toBe(formatBytes(bytes.length));
  if (onDisk) expect(readFileSync(onDisk(folder, name)).equals(bytes)).toBe(true);

  // spec 1, Files: Rename — inline, with F2
  const renamed = 'renamed report.bin';
  await row(page, name).click();
  await page.keyboard.press('F2');
  await page.getByTestId('rename-input').fill(renamed);
  await page.keyboard.press('Enter');
  await row(page, renamed).waitFor();
  await expect.poll(() => row(page, name).count()).toBe(0);

  // spec 1, Files: Download — the browser saves the attachment; bytes must be identical
  const [download] = await Promise.all([page.waitForEvent('download'), row(page, renamed).getByTestId('download').click()]);
  expect(download.suggestedFilename()).toBe(renamed);
  const saved = await download.path();
  expect(readFileSync(saved).equals(bytes)).toBe(true);

  await page.screenshot({ path: join(RESULTS, `e2e-files-${label}.png`) });

  // spec 1, Files: Delete — with the Delete key and the confirmation
  await row(page, renamed).click();
  await page.keyboard.press('Delete');
  await page.getByTestId('delete-dialog').getByTestId('confirm-ok').click();
  await expect.poll(() => row(page, renamed).count()).toBe(0);
  await page.getByTestId('list-empty').waitFor();
  if (onDisk) expect(existsSync(onDisk(folder, renamed))).toBe(false);
}

describe('E2E file browser in Chromium against headless mode (spec 1, Files and Folders)', () => {
  let scratch: string;
  let localFolder: string;
  let serve: { child: ChildProcess; url: string };
  let apache: Awaited<ReturnType<typeof startApache>> | undefined;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(RESULTS, { recursive: true });
    scratch = mkdtempSync(join(tmpdir(), 'tributary-e2e-'));
    localFolder = join(scratch, 'home');
    serve = await startServe(join(scratch, 'data'), localFolder);
    browser = await launchChromium();
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      // A CSP violation or a React error would show here first.
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    await page.goto(serve.url);
  });

  afterAll(async () => {
    await browser?.close();
    if (serve) await stopChild(serve.child);
    await apache?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('shows the first-run local account, strips the token from the address bar (spec 1, Accounts: list)', async () => {
    const local = page.locator('[data-testid=account-item][data-service=local]');
    await local.waitFor();
    expect(await local.getAttribute('data-name')).toBe('This computer');
    // The first account is chosen once the account list has loaded.
    await local.locator('[aria-current=true]').waitFor({ timeout: 10_000 });
    expect(page.url()).not.toContain('token=');
    await page.getByTestId('list-empty').waitFor();
    // The token lives on in this tab's sessionStorage: a reload still connects.
    await page.reload();
    await local.waitFor();
    await page.getByTestId('list-empty').waitFor();
  });

  it('creates a folder, uploads by drop, renames, downloads and deletes on the local account (spec 1, Files)', async () => {
    await fileRoundTrip(page, 'local', (folder, name) => join(localFolder, folder, name));
  });

  /** Fills the generated WebDAV form (fields from the connector's schema) for the test server. */
  async function fillWebdavForm(password: string) {
    const form = page.getByTestId('connect-dialog');
    const u = new URL(apache!.url);
    await form.getByTestId('field-protocol').selectOption('http');
    await form.getByTestId('field-host').fill(u.hostname);
    await form.getByTestId('field-port').fill(u.port);
    await form.getByTestId('field-path').fill(u.pathname);
    await form.getByTestId('field-username').fill(apache!.user);
    await form.getByTestId('field-password').fill(password);
    return form;
  }

  it('connects the Apache WebDAV account through the generated form, testing it first (spec 1, Accounts: connect)', async () => {
    apache = await startApache();
    await page.getByTestId('connect-account').click();
    await page.getByTestId('connector-webdav').click();
    const form = await fillWebdavForm(apache.password);
    // The secret option is a password input (its value never shown).
    expect(await form.getByTestId('field-password').getAttribute('type')).toBe('password');
    await form.getByTestId('field-account-name').fill('Team WebDAV');
    await form.getByTestId('test-connection').click();
    await expect.poll(() => form.getByTestId('connect-status').innerText()).toBe('Connection works.');
    await form.getByTestId('connect-submit').click();
    const item = page.locator('[data-testid=account-item][data-service=webdav]');
    await item.locator('[aria-current=true]').waitFor();
    expect(await item.getAttribute('data-name')).toBe('Team WebDAV');
    expect(await page.getByTestId('connect-dialog').count()).toBe(0);
    await page.getByTestId('list-empty').waitFor();
  });

  it('reports a wrong WebDAV password in the form, with the service message (spec 1, Errors)', async () => {
    await page.getByTestId('connect-account').click();
    await page.getByTestId('connector-webdav').click();
    const form = await fillWebdavForm('wrong-password');
    await form.getByTestId('test-connection').click();
    await expect.poll(() => form.getByTestId('connect-status').getAttribute('class')).toContain('error');
    expect(await form.getByTestId('connect-status').innerText()).toMatch(/WebDAV/i);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('connect-dialog').count()).toBe(0);
  });

  it('creates a folder, uploads by drop, renames, downloads and deletes on WebDAV (spec 1, Files)', async () => {
    await fileRoundTrip(page, 'webdav', (folder, name) => join(apache!.root, folder, name));
  });

  it('uploads with the file picker; an existing name prompts: keep both → "name (1)", overwrite replaces (spec 1, Files: Upload, conflicts)', async () => {
    // Still inside the WebDAV folder of the previous test.
    const folder = (await page.getByTestId('breadcrumbs').locator('[aria-current=location]').innerText()).trim();
    const pick = async (content: Buffer) => page.getByTestId('upload-input').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: content });
    const first = Buffer.from('first version\n');
    await pick(first);
    await row(page, 'notes.txt').waitFor();
    expect(await page.getByTestId('conflict-dialog').count()).toBe(0);

    const second = Buffer.from('second version, longer\n');
    await pick(second);
    await page.getByTestId('conflict-dialog').waitFor();
    await page.getByTestId('conflict-keep-both').click();
    await row(page, 'notes (1).txt').waitFor();
    expect(readFileSync(join(apache!.root, folder, 'notes (1).txt')).equals(second)).toBe(true);

    const third = Buffer.from('third\n');
    await pick(third);
    await page.getByTestId('conflict-dialog').waitFor();
    await page.getByTestId('conflict-overwrite').click();
    await expect.poll(() => row(page, 'notes.txt').getByTestId('file-size').innerText()).toBe(formatBytes(third.length));
    expect(readFileSync(join(apache!.root, folder, 'notes.txt')).equals(third)).toBe(true);
    expect(await page.locator('[data-testid=file-row]').count()).toBe(2);
  });

  it('selects with the keyboard, and moves by drag onto another account; Alt+drag copies (spec 1, Files: Move/Copy across accounts)', async () => {
    const folder = (await page.getByTestId('breadcrumbs').locator('[aria-current=location]').innerText()).trim();
    const list = page.getByTestId('file-list');
    await list.focus();
    await page.keyboard.press('Control+a');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').count()).toBe(2);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Home');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-name')).toBe('notes (1).txt');
    await page.keyboard.press('Shift+ArrowDown');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').count()).toBe(2);

    const local = page.locator('[data-testid=account-item][data-service=local]');
    // Alt held: copy, the source stays.
    await page.keyboard.press('Escape');
    await row(page, 'notes (1).txt').click();
    await page.keyboard.down('Alt');
    await row(page, 'notes (1).txt').dragTo(local);
    await page.keyboard.up('Alt');
    await expect.poll(() => existsSync(join(localFolder, 'notes (1).txt'))).toBe(true);
    expect(readFileSync(join(localFolder, 'notes (1).txt')).toString()).toBe('second version, longer\n');
    expect(existsSync(join(apache!.root, folder, 'notes (1).txt'))).toBe(true);

    // No modifier: move, the source goes.
    await row(page, 'notes.txt').dragTo(local);
    await expect.poll(() => row(page, 'notes.txt').count()).toBe(0);
    expect(readFileSync(join(localFolder, 'notes.txt')).toString()).toBe('third\n');
    expect(existsSync(join(apache!.root, folder, 'notes.txt'))).toBe(false);

    // Backspace goes up to the account root, where the test folder is listed.
    await list.focus();
    await page.keyboard.press('Backspace');
    await row(page, folder).waitFor();
    await page.screenshot({ path: join(RESULTS, 'e2e-files-final.png') });
  });

  it('renames, disables, enables and removes an account from the sidebar (spec 1, Accounts: update, delete)', async () => {
    const item = page.locator('[data-testid=account-item][data-service=webdav]');
    await item.getByTestId('account-menu').click();
    await item.getByTestId('account-rename').click();
    await page.getByTestId('prompt-input').fill('Office share');
    await page.getByTestId('prompt-ok').click();
    await expect.poll(() => item.getAttribute('data-name')).toBe('Office share');

    await item.getByTestId('account-menu').click();
    await item.getByTestId('account-toggle').click();
    await expect.poll(() => item.getAttribute('class')).toContain('disabled');
    await expect.poll(() => page.getByTestId('account-problem').innerText()).toContain('This account is disabled');
    await item.getByTestId('account-menu').click();
    await item.getByTestId('account-toggle').click();
    await expect.poll(() => item.getAttribute('class')).not.toContain('disabled');
    await page.getByTestId('file-list').waitFor();

    await item.getByTestId('account-menu').click();
    await item.getByTestId('account-delete').click();
    await page.getByTestId('confirm-ok').click();
    await expect.poll(() => item.count()).toBe(0);
    // Back on the default account; the files on the WebDAV server are untouched.
    await page.locator('[data-testid=account-item][data-service=local] [aria-current=true]').waitFor();
    expect(readdirSync(apache!.root).some((n) => n.startsWith('E2E webdav'))).toBe(true);
  });

  it('raised no page errors or CSP violations', () => {
    expect(pageErrors).toEqual([]);
  });
});
