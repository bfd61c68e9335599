/**
 * What the mailbox end-to-end tests share: connecting an IMAP
 * account (Dovecot, with an SMTP relay or Postfix) through the generated form (spec 2, Accounts:
 * connect), finding a message row, and clearing toasts before screenshots.
 */
import type { Locator, Page } from 'playwright-core';
import { expect } from 'vitest';

/** A server the form points at: Dovecot's IMAP side is `{ host, port: imapPort }`. */
export interface Endpoint {
  host: string;
  port: number;
}

/**
 * Opens the connect dialog on the IMAP form and fills in the servers, `user` (password "secret",
 * address user@example.test) and, when given, the account's name. Returns the form so a test can
 * fill more fields before `submitConnect`.
 */
export async function fillImapForm(page: Page, imap: Endpoint, smtp: Endpoint, opts: { user?: string; accountName?: string } = {}): Promise<Locator> {
  const user = opts.user ?? 'alice';
  await page.locator('[data-testid=account-item][data-service=local]').waitFor();
  await page.getByTestId('connect-account').click();
  await page.getByTestId('connector-imap').click();
  const form = page.getByTestId('connect-dialog');
  await form.getByTestId('field-host').fill(imap.host);
  await form.getByTestId('field-port').fill(String(imap.port));
  await form.getByTestId('field-tls').selectOption('none');
  await form.getByTestId('field-user').fill(user);
  await form.getByTestId('field-password').fill('secret');
  await form.getByTestId('field-email').fill(`${user}@example.test`);
  // Connecting checks the SMTP server too.
  await form.getByTestId('field-smtp_host').fill(smtp.host);
  await form.getByTestId('field-smtp_port').fill(String(smtp.port));
  await form.getByTestId('field-smtp_tls').selectOption('none');
  if (opts.accountName !== undefined) await form.getByTestId('field-account-name').fill(opts.accountName);
  return form;
}

/** Connects the filled form (after "Test connection" says it works, with `test`) and waits for the dialog to close. */
export async function submitConnect(form: Locator, opts: { test?: boolean } = {}): Promise<void> {
  if (opts.test) {
    await form.getByTestId('test-connection').click();
    await expect.poll(() => form.getByTestId('connect-status').innerText(), { timeout: 15_000 }).toBe('Connection works.');
  }
  await form.getByTestId('connect-submit').click();
  await form.waitFor({ state: 'detached', timeout: 20_000 });
}

/** `fillImapForm` then `submitConnect`. */
export async function connectImap(page: Page, imap: Endpoint, smtp: Endpoint, opts: { user?: string; accountName?: string; test?: boolean } = {}): Promise<void> {
  await submitConnect(await fillImapForm(page, imap, smtp, opts), opts);
}

export const mailRow = (page: Page, subject: string) => page.locator(`[data-testid=mail-row][data-subject="${subject}"]`);

/** Toasts sit at the bottom centre; clear them so screenshots show the window underneath. */
export async function dismissToasts(page: Page): Promise<void> {
  // A toast may leave by itself meanwhile (and the next one take its place): never wait long for one.
  for (const b of await page.locator('.toast button[aria-label=Dismiss]').all()) await b.click({ timeout: 1000 }).catch(() => {});
}
