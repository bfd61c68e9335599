/**
 * Accounts in the web UI, against real servers: the connect form offers only what is for
 * users and focuses its first field; an SFTP host key never seen before is shown with its
 * fingerprint and trusted only when confirmed; a WebDAV account whose password changed on the
 * server is shown once as broken (spec 1: deactivated with a reason), with Reconnect and Retry,
 * and reconnecting with the new password brings its files back. Screenshots of each state go
 * to test-results/.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startApache, type ApacheServer } from '../servers/apache';
import { startSshd, type Sshd } from '../servers/sshd';
import { run } from '../servers/util';
import { openApp, RESULTS, type OpenApp } from './harness';

let app: OpenApp;
let page: Page;
let apache: ApacheServer;
let sshd: Sshd;

const shot = (name: string) => page.screenshot({ path: join(RESULTS, `e2e-accounts-${name}.png`) });

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  [apache, sshd] = await Promise.all([startApache(), startSshd()]);
  app = await openApp('accounts');
  page = app.page;
  await page.setViewportSize({ width: 1440, height: 900 });
});

afterAll(async () => {
  await app?.close();
  await Promise.all([apache?.stop(), sshd?.stop()]);
});

async function openService(id: string) {
  await page.getByTestId('connect-account').click();
  await page.getByTestId(`connector-${id}`).click();
  return page.getByTestId('connect-dialog');
}

describe('the connect form shows what is for users', () => {
  it('offers no in-memory reference service and no test-only options; the first field has the focus', async () => {
    await page.getByTestId('connect-account').click();
    const dialog = page.getByTestId('connect-dialog');
    await dialog.getByTestId('connector-webdav').waitFor();
    expect(await dialog.getByTestId('connector-memory').count()).toBe(0);
    expect(await dialog.innerText()).not.toMatch(/In-memory|For testing/);
    await shot('services');

    await dialog.getByTestId('connector-smb').click();
    await dialog.getByTestId('field-host').waitFor();
    expect(await dialog.getByTestId('field-smbclient').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('field-host');
    await dialog.getByText('← Services').click();
    await dialog.getByTestId('connector-webdav').click();
    await dialog.getByTestId('field-host').waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('field-protocol');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('connect-dialog').count()).toBe(0);
  });
});

describe('an SFTP host key never seen before is confirmed with its fingerprint', () => {
  const knownHosts = () => join(app.dataDir, 'connectors/sftp/known_hosts.json');

  async function fillSftp() {
    const dialog = await openService('sftp');
    await dialog.getByTestId('field-host').fill(sshd.host);
    await dialog.getByTestId('field-port').fill(String(sshd.port));
    await dialog.getByTestId('field-username').fill(sshd.username);
    await dialog.getByTestId('field-password').fill(sshd.password);
    await dialog.getByTestId('field-root').fill(sshd.dataDir);
    return dialog;
  }

  it('shows the fingerprint before anything is trusted; Cancel trusts nothing; Trust connects and pins it', async () => {
    const dialog = await fillSftp();
    await dialog.getByTestId('test-connection').click();
    const confirm = dialog.getByTestId('identity-confirm');
    await confirm.waitFor();
    expect(await confirm.getByTestId('identity-fingerprint').innerText()).toBe(`SHA256:${sshd.hostKeyFingerprint}`);
    expect(await confirm.innerText()).toMatch(/never connected to this server before/);
    await shot('sftp-host-key');
    await confirm.getByTestId('identity-cancel').click();
    await expect.poll(() => confirm.count()).toBe(0);
    expect(await dialog.getByTestId('connect-status').innerText()).toBe('');
    // Nothing was trusted.
    expect(existsSync(knownHosts()) ? readFileSync(knownHosts(), 'utf8') : '').not.toContain(sshd.hostKeyFingerprint);

    await dialog.getByTestId('connect-submit').click();
    await confirm.waitFor();
    await confirm.getByTestId('identity-trust').click();
    const item = page.locator('[data-testid=account-item][data-service=sftp]');
    await item.locator('[aria-current=true]').waitFor();
    await page.getByTestId('file-list').waitFor();
    expect(readFileSync(knownHosts(), 'utf8')).toContain(sshd.hostKeyFingerprint);

    // A second account on the same server: the key is known now, nothing to confirm.
    const again = await fillSftp();
    await again.getByTestId('test-connection').click();
    await expect.poll(() => again.getByTestId('connect-status').innerText()).toBe('Connection works.');
    expect(await again.getByTestId('identity-confirm').count()).toBe(0);
    await page.keyboard.press('Escape');
  });
});

describe('a broken account can be repaired (spec 1, Account `active`: deactivated, then reconnected)', () => {
  const newPassword = 'changed-on-the-server';
  const item = () => page.locator('[data-testid=account-item][data-service=webdav]');

  it('after a password change on the server: the failure shown once, Reconnect and Retry, no file actions', async () => {
    const dialog = await openService('webdav');
    const u = new URL(apache.url);
    await dialog.getByTestId('field-protocol').selectOption('http');
    await dialog.getByTestId('field-host').fill(u.hostname);
    await dialog.getByTestId('field-port').fill(u.port);
    await dialog.getByTestId('field-username').fill(apache.user);
    await dialog.getByTestId('field-password').fill(apache.password);
    await dialog.getByTestId('connect-submit').click();
    await item().locator('[aria-current=true]').waitFor();
    await page.getByTestId('file-list').waitFor();

    run('htpasswd', ['-b', join(dirname(apache.root), 'htpasswd'), apache.user, newPassword]);
    await page.reload();
    await item().locator('.account-main').click();
    const problem = page.getByTestId('account-problem');
    await expect.poll(() => problem.getAttribute('data-reason'), { timeout: 15_000 }).toBe('credentials_refused');
    expect(await problem.locator('h2').innerText()).toBe('WebDAV refused the saved credentials');
    expect(await problem.getByTestId('account-problem-said').innerText()).toMatch(/refused the user name or password/);
    // Once: one alert, no listing, no "Loading … of …", no upload or new folder.
    expect(await page.getByRole('alert').count()).toBe(1);
    for (const id of ['file-list', 'upload', 'new-folder']) expect(await page.getByTestId(id).count(), id).toBe(0);
    expect(await page.locator('body').innerText()).not.toMatch(/Loading \d+ of \d+/);
    expect(await item().innerText()).toContain('needs reconnecting');
    await shot('broken-1440');
    await page.setViewportSize({ width: 800, height: 600 });
    await shot('broken-800');
    await page.setViewportSize({ width: 1440, height: 900 });

    // The account menu: Reconnect and Retry; Enable cannot work and is not offered.
    await item().getByTestId('account-menu').click();
    expect(await item().getByTestId('account-menu-reconnect').count()).toBe(1);
    expect(await item().getByTestId('account-menu-retry').count()).toBe(1);
    expect(await item().getByTestId('account-toggle').count()).toBe(0);
    await page.keyboard.press('Escape');

    // Retry with the saved password: still refused, said in place.
    await problem.getByTestId('account-retry').click();
    await expect.poll(() => problem.getByTestId('account-problem-failure').count()).toBe(1);
    expect(await problem.getByTestId('account-problem-failure').innerText()).toMatch(/refused/);
  });

  it('Reconnect: the saved settings filled in, the password focused, Test, then Save brings the files back', async () => {
    await page.getByTestId('account-problem').getByTestId('account-reconnect').click();
    const dialog = page.getByTestId('reconnect-dialog');
    await dialog.waitFor();
    expect(await dialog.getByTestId('field-host').inputValue()).toBe(new URL(apache.url).hostname);
    expect(await dialog.getByTestId('field-username').inputValue()).toBe(apache.user);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('field-password');
    await dialog.getByTestId('reconnect-test').click();
    await expect.poll(() => dialog.getByTestId('reconnect-status').getAttribute('class')).toContain('error');
    await dialog.getByTestId('field-password').fill(newPassword);
    await dialog.getByTestId('reconnect-test').click();
    await expect.poll(() => dialog.getByTestId('reconnect-status').innerText()).toBe('Connection works.');
    await shot('reconnect');
    await dialog.getByTestId('reconnect-save').click();
    await expect.poll(() => page.getByTestId('reconnect-dialog').count()).toBe(0);
    await page.getByTestId('file-list').waitFor();
    expect(await page.getByTestId('account-problem').count()).toBe(0);
    expect(await item().innerText()).not.toContain('needs reconnecting');
    await shot('reconnected');
  });

  it('a server that is down: said once with Retry (the account stays active); Retry after it is back shows the files', async () => {
    await apache.kill();
    await page.reload();
    await item().locator('.account-main').click();
    const problem = page.getByTestId('account-problem');
    await expect.poll(() => problem.getAttribute('data-reason'), { timeout: 15_000 }).toBe('service_not_available');
    expect(await problem.locator('h2').innerText()).toBe('WebDAV cannot be reached right now');
    expect(await page.getByRole('alert').count()).toBe(1);
    expect(await page.locator('body').innerText()).not.toMatch(/Loading \d+ of \d+/);
    expect(await item().innerText()).not.toContain('needs reconnecting');
    await shot('unreachable');
    await apache.restart();
    await problem.getByTestId('account-retry').click();
    await page.getByTestId('file-list').waitFor();
    expect(await page.getByTestId('account-problem').count()).toBe(0);
  });
});
