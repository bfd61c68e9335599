/**
 * The file browser says what really happened and keeps the keyboard where it was, end to end in
 * Chromium against `serve`, the first-run local folder and Apache WebDAV:
 * - a delete where one item fails names only what was deleted, and Undo brings back only that;
 * - Paste of a cut into its own folder moves nothing and asks nothing; a failed paste keeps the cut;
 * - with a filter, the footer says how many of the folder's items are shown;
 * - names are shown as what they are (bidi controls and line breaks visible, isolated from the
 *   text around them), and a long name wraps in a dialog and keeps its extension in the list;
 * - closing a dialog gives the focus back; the account menu closes with Escape and Tab;
 * - a WebDAV server that goes down after its folder was listed shows the account's pane.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { RESULTS, openApp, scratchDataHome, type OpenApp } from './harness';
import { connectWebdav } from './live-helpers';

let app: OpenApp;
let page: Page;
let apache: ApacheServer;
let local: string;
let dataHome: ReturnType<typeof scratchDataHome> | undefined;

const row = (name: string) => page.locator(`[data-testid=file-row][data-name="${name}"]`);
const shot = (name: string) => page.screenshot({ path: join(RESULTS, `e2e-file-feedback-${name}.png`) });
const localAccount = () => page.locator('[data-testid=account-item][data-service=local]');
const davAccount = () => page.locator('[data-testid=account-item][data-service=webdav]');
const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName ?? null);
const toastTexts = (kind: 'info' | 'error') => page.getByTestId(`toast-${kind}`).allInnerTexts();
const dismissToasts = () => page.evaluate(() => document.querySelectorAll<HTMLButtonElement>('.toast [aria-label=Dismiss]').forEach((b) => b.click()));
const openLocal = async () => {
  await localAccount().locator('.account-main').click();
  await page.getByTestId('file-list').waitFor();
};

const LONG = `${'A'.repeat(240)}.pdf`;
const RTL = 'invoice\u202Etxt.exe';

beforeAll(async () => {
  dataHome = scratchDataHome('feedback');
  apache = await startApache();
  app = await openApp('feedback');
  page = app.page;
  local = app.localFolder;
  for (const n of ['a-vanishes.txt', 'b-deleted.txt', 'c.txt', 'alpha.txt', 'beta.txt', RTL, 'line1\nline2.txt', 'line1 line2.txt', LONG]) writeFileSync(join(local, n), 'x');
  mkdirSync(join(local, 'box', 'inner'), { recursive: true });
  writeFileSync(join(local, 'box', 'in-box.txt'), 'x');
  mkdirSync(join(local, 'shelf'));
  await page.reload();
  await row('c.txt').waitFor();
}, 120_000);

// Whatever a test leaves open (a dialog, a menu, a filter) does not become the next one's problem.
afterEach(async () => {
  for (let i = 0; i < 3 && (await page.locator('dialog[open], [role=menu]').count()); i++) await page.keyboard.press('Escape');
  if (await page.getByTestId('filter').count()) await page.getByTestId('filter').fill('');
  await dismissToasts();
  await openLocal();
});

afterAll(async () => {
  await app?.close();
  await apache?.stop();
  dataHome?.restore();
});

// docs/ui.md, "Delete and Undo"
describe('a delete names only what it deleted (Delete and Undo)', () => {
  it('one of two items fails: the error names it, the message names the other, and Undo brings back only that', async () => {
    await row('a-vanishes.txt').click();
    await row('b-deleted.txt').click({ modifiers: ['Control'] });
    await page.keyboard.press('Delete');
    const dialog = page.getByTestId('delete-dialog');
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('delete-where').innerText()).toContain('trash');
    // Gone behind the app's back while the dialog is open: its delete fails.
    rmSync(join(local, 'a-vanishes.txt'));
    await dialog.getByTestId('confirm-ok').click();
    await expect.poll(() => existsSync(join(local, 'b-deleted.txt'))).toBe(false);
    await expect.poll(() => toastTexts('error')).toEqual([expect.stringContaining('a-vanishes.txt')]);
    await expect.poll(() => toastTexts('info')).toEqual([expect.stringContaining('“b-deleted.txt” moved to the trash')]);
    expect((await toastTexts('info')).join()).not.toContain('a-vanishes');
    await shot('partial-delete');
    await page.getByTestId('toast-action').click();
    await expect.poll(() => existsSync(join(local, 'b-deleted.txt'))).toBe(true);
    expect(existsSync(join(local, 'a-vanishes.txt'))).toBe(false);
    await row('b-deleted.txt').waitFor();
    await dismissToasts();
  });
});

// docs/ui.md, "Context menu, clipboard, folder picker"
describe('Paste of a cut moves or keeps it (Context menu, clipboard, folder picker)', () => {
  it('a cut pasted into the folder it came from moves nothing and asks nothing', async () => {
    await row('c.txt').click();
    await page.keyboard.press('Control+x');
    await page.keyboard.press('Control+v');
    await expect.poll(() => toastTexts('info')).toContainEqual(expect.stringContaining('“c.txt” is already in'));
    expect(await page.getByTestId('conflict-dialog').count()).toBe(0);
    expect((await toastTexts('info')).join()).not.toContain('Moved');
    expect(readdirSync(local).filter((n) => n.startsWith('c'))).toEqual(['c.txt']);
    // The cut is still there for another folder.
    expect(await row('c.txt').getAttribute('class')).toContain('cut');
    await dismissToasts();
  });

  it('a paste that fails keeps the cut; one that works uses it up', async () => {
    await row('box').click();
    await page.keyboard.press('Control+x');
    await row('box').dblclick();
    await row('inner').dblclick();
    await page.getByTestId('list-empty').waitFor();
    await page.getByTestId('file-list').focus();
    // A folder cannot go into itself.
    await page.keyboard.press('Control+v');
    await expect.poll(() => toastTexts('error')).toContainEqual(expect.stringContaining('Could not move "box"'));
    expect(existsSync(join(local, 'box', 'in-box.txt'))).toBe(true);
    await page.getByTestId('file-list').click({ button: 'right' });
    const paste = page.getByTestId('menu-paste');
    await paste.waitFor();
    expect(await paste.innerText()).toContain('Paste “box”');
    expect(await paste.getAttribute('aria-disabled')).toBeNull();
    await page.keyboard.press('Escape');
    await dismissToasts();

    await openLocal();
    await row('shelf').dblclick();
    await page.getByTestId('list-empty').waitFor();
    await page.getByTestId('file-list').focus();
    await page.keyboard.press('Control+v');
    await expect.poll(() => existsSync(join(local, 'shelf', 'box', 'in-box.txt'))).toBe(true);
    await row('box').waitFor();
    await page.getByTestId('file-list').click({ button: 'right', position: { x: 200, y: 300 } });
    await expect.poll(() => page.getByTestId('menu-paste').getAttribute('aria-disabled')).toBe('true');
    await page.keyboard.press('Escape');
    await dismissToasts();
    await openLocal();
  });

  it('with a filter, the footer says how many of the folder’s items are shown', async () => {
    const footer = page.locator('.list-footer');
    await expect.poll(() => footer.innerText()).toMatch(/^\d+ items$/);
    const all = Number((await footer.innerText()).split(' ')[0]);
    expect(all).toBe(await page.locator('[data-testid=file-row]').count());
    await page.getByTestId('filter').fill('alpha');
    await expect.poll(() => page.locator('[data-testid=file-row]').count()).toBe(1);
    await expect.poll(() => footer.innerText()).toBe(`1 of ${all} items`);
    await row('alpha.txt').click();
    await expect.poll(() => footer.innerText()).toBe(`1 of ${all} items · 1 selected`);
    await page.getByTestId('filter').press('Escape');
    await expect.poll(() => footer.innerText()).toBe(`${all} items · 1 selected`);
  });
});

// docs/ui.md, "Names as they are"
describe('names are shown as what they are (Names as they are)', () => {
  it('bidi controls and line breaks are visible, so no name looks like another', async () => {
    const names = await page.$$eval('[data-testid=file-row]', (rows) => rows.map((r) => ({ name: r.getAttribute('data-name')!, shown: (r.querySelector('[data-testid=file-name]') as HTMLElement).innerText, title: r.querySelector('[data-testid=file-name]')!.getAttribute('title') })));
    const shown = (n: string) => names.find((x) => x.name === n)!;
    expect(shown(RTL).shown).toBe('invoice⟨U+202E⟩txt.exe');
    expect(shown(RTL).title).toBe('invoice⟨U+202E⟩txt.exe');
    expect(shown('line1\nline2.txt').shown).toBe('line1⏎line2.txt');
    expect(shown('line1 line2.txt').shown).toBe('line1 line2.txt');
    // Every row's name is isolated from what is around it.
    expect(await page.locator('[data-testid=file-name] > bdi').count()).toBe(names.length);
    // The visible boxes are styled apart from the name's own characters.
    expect(await row(RTL).locator('.name-hidden').innerText()).toBe('⟨U+202E⟩');
    await shot('names');

    // In a dialog's title and in the message after an action too.
    await row(RTL).click();
    await page.keyboard.press('Delete');
    const dialog = page.getByTestId('delete-dialog');
    await dialog.waitFor();
    expect(await dialog.locator('h2').innerText()).toBe('Delete "invoice⟨U+202E⟩txt.exe"?');
    expect(await dialog.locator('h2 bdi').count()).toBe(1);
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    await row(RTL).click();
    await page.keyboard.press('Control+c');
    await expect.poll(() => toastTexts('info')).toContainEqual(expect.stringContaining('“invoice⟨U+202E⟩txt.exe”: paste with Ctrl+V'));
    await dismissToasts();
  });

  it('an account name with a bidi control is shown with it visible, in the sidebar and the breadcrumbs', async () => {
    await localAccount().getByTestId('account-menu').click();
    await localAccount().getByTestId('account-rename').click();
    await page.getByTestId('prompt-input').fill('Bank\u202Egnp.exe');
    await page.getByTestId('prompt-ok').click();
    await expect.poll(() => localAccount().locator('.account-name').innerText()).toBe('Bank⟨U+202E⟩gnp.exe');
    await expect.poll(() => page.getByTestId('breadcrumbs').innerText()).toBe('Bank⟨U+202E⟩gnp.exe');
    expect(await localAccount().getByTestId('account-menu').getAttribute('aria-label')).toBe('Options for Bank⟨U+202E⟩gnp.exe');
    await shot('account-name');
  });

  it('a long name without spaces wraps in a dialog, and keeps its extension visible in the list', async () => {
    const name = row(LONG).getByTestId('file-name');
    await name.scrollIntoViewIfNeeded();
    const ext = await name.evaluate((el) => {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      let last: Text | null = null;
      for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.textContent) last = n as Text;
      const range = document.createRange();
      range.setStart(last!, last!.length - 4);
      range.setEnd(last!, last!.length);
      const r = range.getBoundingClientRect();
      const box = el.getBoundingClientRect();
      return { text: range.toString(), left: r.left, right: r.right, boxLeft: box.left, boxRight: box.right };
    });
    expect(ext.text).toBe('.pdf');
    expect(ext.right, JSON.stringify(ext)).toBeLessThanOrEqual(ext.boxRight + 0.5);
    expect(ext.left, JSON.stringify(ext)).toBeGreaterThanOrEqual(ext.boxLeft);
    expect(await name.getAttribute('title')).toBe(LONG);
    // Names that fit are shown whole, without an ellipsis.
    const cut = await page.$$eval('[data-testid=file-row] .name-head', (heads) => heads.filter((h) => h.scrollWidth > h.clientWidth).map((h) => h.closest('[data-testid=file-row]')!.getAttribute('data-name')));
    expect(cut).toEqual([LONG]);

    await row(LONG).click();
    await page.keyboard.press('Delete');
    const dialog = page.getByTestId('delete-dialog');
    await dialog.waitFor();
    const fit = await dialog.evaluate((d) => {
      const over = (el: Element) => el.scrollWidth - el.clientWidth;
      const ok = d.querySelector('[data-testid=confirm-ok]')!.getBoundingClientRect();
      const box = d.getBoundingClientRect();
      return { dialog: over(d), title: over(d.querySelector('h2')!), item: over(d.querySelector('[data-testid=delete-items] li')!), okInside: ok.right <= box.right && ok.left >= box.left };
    });
    await shot('long-name-dialog');
    expect(fit).toEqual({ dialog: 0, title: 0, item: 0, okInside: true });
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
  });
});

// docs/ui.md, "Keyboard" (dialogs)
describe('closing a dialog gives the focus back (Keyboard)', () => {
  it('Escape on the delete confirmation: focus is on the list again, and the arrows work at once', async () => {
    const list = page.getByTestId('file-list');
    await list.focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('Delete');
    await page.getByTestId('delete-dialog').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('delete-dialog').count()).toBe(0);
    expect(await focused()).toBe('file-list');
    const before = await page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-index');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-index')).toBe(String(Number(before) + 1));
  });

  it('Cancel on New folder, Escape on Connect account and Settings: focus returns to the button that opened them', async () => {
    await page.getByTestId('new-folder').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('mkdir-dialog').waitFor();
    await page.getByTestId('mkdir-dialog').getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByTestId('mkdir-dialog').count()).toBe(0);
    expect(await focused()).toBe('new-folder');

    for (const [opener, dialog] of [
      ['connect-account', 'connect-dialog'],
      ['settings-open', 'settings-dialog'],
    ]) {
      await page.getByTestId(opener).focus();
      await page.keyboard.press('Enter');
      await page.getByTestId(dialog).waitFor();
      await page.keyboard.press('Escape');
      await expect.poll(() => page.getByTestId(dialog).count()).toBe(0);
      expect(await focused(), dialog).toBe(opener);
    }
  });

  it('the account menu: Escape returns to ⋯, Tab closes it, and Rename… returns to ⋯ when cancelled', async () => {
    const button = localAccount().getByTestId('account-menu');
    const menu = localAccount().getByRole('menu');
    await button.focus();
    await page.keyboard.press('Enter');
    await menu.waitFor();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Escape');
    await expect.poll(() => menu.count()).toBe(0);
    expect(await focused()).toBe('account-menu');

    await page.keyboard.press('Enter');
    await menu.waitFor();
    await page.keyboard.press('Tab');
    await expect.poll(() => menu.count()).toBe(0);
    expect(await focused()).not.toBe('BODY');

    await button.focus();
    await page.keyboard.press('Enter');
    await menu.waitFor();
    await page.keyboard.press('Enter'); // Rename…
    await page.getByTestId('prompt-input').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('prompt-input').count()).toBe(0);
    expect(await focused()).toBe('account-menu');
  });
});

// docs/ui.md, "A broken account"
describe('a server that goes down after its folder was listed (A broken account)', () => {
  it('shows the account pane with Retry and no Upload or New folder; Retry after it is back shows the files', async () => {
    apache.place('report.pdf', Buffer.from('report'));
    await connectWebdav(page, apache, 'DAV');
    await row('report.pdf').waitFor();
    await apache.kill();
    const problem = page.getByTestId('account-problem');
    try {
      await page.keyboard.press('F5');
      await expect.poll(() => problem.count(), { timeout: 20_000 }).toBe(1);
      expect(await problem.getAttribute('data-reason')).toBe('service_not_available');
      expect(await problem.getByTestId('account-retry').count()).toBe(1);
      for (const id of ['upload', 'new-folder', 'file-list']) expect(await page.getByTestId(id).count(), id).toBe(0);
      expect(await davAccount().innerText()).not.toContain('needs reconnecting');
      await shot('server-down');
    } finally {
      await apache.restart();
    }
    await problem.getByTestId('account-retry').click();
    await row('report.pdf').waitFor();
    expect(await page.getByTestId('account-problem').count()).toBe(0);
  });
});
