/**
 * Settings in Chromium against headless mode (spec 1, Authentication: API keys created, listed and
 * revoked in Settings): a key created in the dialog authenticates REST calls until it is revoked
 * there; the retrieve_tokens switch gates `retrieve_tokens=true` (spec 1, Retrieve an account).
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULTS, openApp, type OpenApp } from './harness';

let app: OpenApp;
let page: Page;

beforeAll(async () => {
  app = await openApp('settings');
  page = app.page;
}, 120_000);

afterAll(() => app?.close());

describe('Settings (spec 1, Authentication: API keys)', () => {
  it('an API key created in Settings works over REST until it is revoked there; retrieve_tokens is switched there', async () => {
    const origin = new URL(app.url).origin;
    const rest = (path: string, key: string) => fetch(`${origin}${path}`, { headers: { authorization: `APIKey ${key}` } });

    await page.getByTestId('settings-open').click();
    const dialog = page.getByTestId('settings-dialog');
    await expect.poll(() => dialog.getByTestId('api-url').innerText()).toBe(origin);
    await dialog.getByTestId('api-key-name').fill('e2e script');
    await dialog.getByTestId('api-key-create').click();
    const secret = await dialog.getByTestId('api-key-secret').inputValue();
    expect(secret).toMatch(/^trb_[\w-]{20,}$/);
    const row = dialog.locator('[data-testid=api-key-row][data-name="e2e script"]');
    await expect.poll(() => row.getAttribute('data-active')).toBe('true');
    expect(await row.innerText()).toContain(secret.slice(0, 8));
    expect(await row.innerText()).not.toContain(secret); // only the prefix is ever listed

    const accounts = await rest('/v1/accounts', secret);
    expect(accounts.status).toBe(200);
    const account = ((await accounts.json()) as { objects: { id: number }[] }).objects[0]!.id;

    // retrieve_tokens is refused until Settings allows it (spec 1: "enabled per application").
    expect((await rest(`/v1/accounts/${account}?retrieve_tokens=true`, secret)).status).toBe(403);
    await dialog.getByTestId('setting-retrieve-tokens').check();
    await expect.poll(async () => (await rest(`/v1/accounts/${account}?retrieve_tokens=true`, secret)).status).toBe(200);
    await page.screenshot({ path: join(RESULTS, 'e2e-settings.png') });

    // Settings → Network: the allow-list of private hosts is saved and shown again.
    await dialog.getByTestId('setting-allowed-hosts').fill('nas.example.test, 192.168.1.0/24');
    await dialog.getByTestId('setting-allowed-hosts-save').click();
    await dialog.getByTestId('settings-close').click();
    await page.getByTestId('settings-open').click();
    await expect.poll(() => page.getByTestId('setting-allowed-hosts').inputValue()).toBe('nas.example.test, 192.168.1.0/24');
    expect(await page.getByTestId('setting-allow-private').isChecked()).toBe(false);

    await row.getByTestId('api-key-revoke').click();
    await expect.poll(() => row.getAttribute('data-active')).toBe('false');
    expect((await rest('/v1/accounts', secret)).status).toBe(401);
    await dialog.getByTestId('settings-close').click();
    expect(await page.getByTestId('settings-dialog').count()).toBe(0);
  });
});
