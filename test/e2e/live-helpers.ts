/**
 * What the live-folder and transfer tests and the live-folder bench share: connecting a WebDAV
 * server through the generated form, and setting the poll interval of open folders.
 */
import type { Page } from 'playwright-core';
import type { ApacheServer } from '../servers/apache';

export const row = (page: Page, name: string) => page.locator(`[data-testid=file-row][data-name="${name}"]`);

/** Connects the Apache WebDAV server (through `port` when given: a proxy) with the form and opens its root. */
export async function connectWebdav(page: Page, apache: ApacheServer, name: string, port?: number): Promise<void> {
  await page.getByTestId('connect-account').click();
  await page.getByTestId('connector-webdav').click();
  const form = page.getByTestId('connect-dialog');
  const u = new URL(apache.url);
  await form.getByTestId('field-protocol').selectOption('http');
  await form.getByTestId('field-host').fill(u.hostname);
  await form.getByTestId('field-port').fill(String(port ?? u.port));
  await form.getByTestId('field-path').fill(u.pathname);
  await form.getByTestId('field-username').fill(apache.user);
  await form.getByTestId('field-password').fill(apache.password);
  await form.getByTestId('field-account-name').fill(name);
  await form.getByTestId('connect-submit').click();
  await page.locator(`[data-testid=account-item][data-name="${name}"] [aria-current=true]`).waitFor();
}

/** Sets "Look for changes in the open folder every N seconds" in Settings. */
export async function setPollSeconds(page: Page, seconds: number): Promise<void> {
  await page.getByTestId('settings-open').click();
  await page.getByTestId('setting-poll-seconds').fill(String(seconds));
  await page.getByTestId('setting-poll-save').click();
  await page.waitForFunction((s) => (document.querySelector('[data-testid=setting-poll-seconds]') as HTMLInputElement | null)?.value === String(s), seconds);
  await page.getByTestId('settings-close').click();
}

/** Drags rows (by name) of the open folder onto another element, as a copy (Ctrl held). */
export async function dragRowsCopy(page: Page, names: string[], target: string): Promise<void> {
  const dt = await page.evaluateHandle(() => new DataTransfer());
  // Select them as the user would, then start the drag on the first.
  await row(page, names[0]).click();
  for (const n of names.slice(1)) await row(page, n).click({ modifiers: ['Control'] });
  await row(page, names[0]).dispatchEvent('dragstart', { dataTransfer: dt });
  for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent(target, type, { dataTransfer: dt, ctrlKey: true });
  await dt.dispose();
}
