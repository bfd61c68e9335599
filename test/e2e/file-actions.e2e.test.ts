/**
 * Every file action asks and works from the keyboard, end to end in Chromium against `serve`,
 * the first-run local folder and Apache WebDAV:
 * - rename, move and copy into a taken name ask Keep both / Replace / Skip ("apply to all" for a
 *   selection), and Replace really replaces;
 * - a context menu (right click, Shift+F10, the Menu key) with Open … Copy link, Cut/Copy/Paste
 *   across folders and accounts, a folder picker, type-ahead and a filter box;
 * - Back/Forward (Alt+←/→), deep links that survive a reload, a resizable and collapsible
 *   accounts pane, usable at 800×600;
 * - the delete dialog lists the items and says "trash" or "permanently" per account, and a trash
 *   move offers Undo.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { RESULTS, openApp, scratchDataHome, type OpenApp } from './harness';
import { connectWebdav } from './live-helpers';

let app: OpenApp;
let page: Page;
let apache: ApacheServer;
let local: string;
let dataHome: ReturnType<typeof scratchDataHome> | undefined;
const pageErrors: string[] = [];

const row = (name: string) => page.locator(`[data-testid=file-row][data-name="${name}"]`);
const here = async () => (await page.getByTestId('breadcrumbs').locator('[aria-current=location]').innerText()).trim();
const shot = (name: string) => page.screenshot({ path: join(RESULTS, `e2e-file-actions-${name}.png`) });
const read = (...p: string[]) => readFileSync(join(...p), 'utf8');
const localAccount = () => page.locator('[data-testid=account-item][data-service=local]');
const davAccount = () => page.locator('[data-testid=account-item][data-service=webdav]');

beforeAll(async () => {
  dataHome = scratchDataHome('actions');
  apache = await startApache();
  app = await openApp('actions');
  page = app.page;
  local = app.localFolder;
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(app.url).origin });

  writeFileSync(join(local, 'a.txt'), 'A local');
  writeFileSync(join(local, 'b.txt'), 'B');
  writeFileSync(join(local, 'one.txt'), '1 local');
  writeFileSync(join(local, 'two.txt'), '2 local');
  mkdirSync(join(local, 'docs'));
  writeFileSync(join(local, 'docs', 'a.txt'), 'A docs');
  writeFileSync(join(local, 'docs', 'one.txt'), '1 docs');
  writeFileSync(join(local, 'docs', 'two.txt'), '2 docs');
  await page.reload();
  await row('a.txt').waitFor();

  // The WebDAV account, through the generated form.
  await connectWebdav(page, apache, 'Team');
  await localAccount().locator('button').first().click();
  await row('a.txt').waitFor();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await apache?.stop();
  dataHome?.restore();
});

describe('conflicts ask, everywhere (spec 1, Rename / move, Copy: name conflicts)', () => {
  it('a rename onto a taken name asks; Skip changes nothing, Replace really replaces', async () => {
    const rename = async () => {
      await row('b.txt').click();
      await page.keyboard.press('F2');
      await page.getByTestId('rename-input').fill('a.txt');
      await page.keyboard.press('Enter');
      await page.getByTestId('conflict-dialog').waitFor();
    };
    await rename();
    expect(await page.getByTestId('conflict-dialog').innerText()).toContain('“a.txt” already exists');
    await shot('conflict-rename');
    await page.getByTestId('conflict-skip').click();
    await expect.poll(() => page.getByTestId('conflict-dialog').count()).toBe(0);
    expect(read(local, 'a.txt')).toBe('A local');
    expect(read(local, 'b.txt')).toBe('B');

    await rename();
    await page.getByTestId('conflict-overwrite').click();
    await expect.poll(() => row('b.txt').count()).toBe(0);
    expect(read(local, 'a.txt')).toBe('B');
    expect(existsSync(join(local, 'b.txt'))).toBe(false);
    // Nothing was left behind by the replace (no "a (1).txt", no hidden temporary file).
    expect(readdirSync(local).sort()).toEqual(['a.txt', 'docs', 'one.txt', 'two.txt']);
  });

  it('type-ahead selects by name; the filter box narrows the list', async () => {
    await page.getByTestId('file-list').focus();
    await page.keyboard.type('tw');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-name')).toBe('two.txt');
    await page.keyboard.type('o');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-name')).toBe('two.txt');
    await page.getByTestId('filter').fill('ONE');
    await expect.poll(() => page.locator('[data-testid=file-row]').count()).toBe(1);
    expect(await page.locator('[data-testid=file-row]').getAttribute('data-name')).toBe('one.txt');
    await shot('filter');
    await page.getByTestId('filter').press('Escape');
    await expect.poll(() => page.locator('[data-testid=file-row]').count()).toBe(4);
  });

  it('Ctrl+X, then Ctrl+V in another folder, asks once with "apply to all", and replaces both', async () => {
    await row('one.txt').click();
    await row('two.txt').click({ modifiers: ['Control'] });
    await page.keyboard.press('Control+x');
    // Cut items are shown faded until they are pasted.
    await expect.poll(() => row('two.txt').getAttribute('class')).toContain('cut');
    // A filter belongs to its folder: opening another one clears it.
    await page.getByTestId('filter').fill('o');
    await expect.poll(() => page.locator('[data-testid=file-row]').count()).toBe(3);
    await row('docs').dblclick();
    await row('a.txt').waitFor();
    expect(await page.getByTestId('filter').inputValue()).toBe('');
    await page.getByTestId('file-list').focus();
    await page.keyboard.press('Control+v');
    const dialog = page.getByTestId('conflict-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('other 1 item');
    await dialog.getByTestId('conflict-all').check();
    await shot('conflict-apply-to-all');
    await dialog.getByTestId('conflict-overwrite').click();
    // Both replaced, nothing left behind (no "one (1).txt", no hidden set-aside file).
    await expect.poll(() => [...readdirSync(join(local, 'docs')).sort(), read(local, 'docs', 'two.txt')]).toEqual(['a.txt', 'one.txt', 'two.txt', '2 local']);
    expect(existsSync(join(local, 'one.txt')) || existsSync(join(local, 'two.txt'))).toBe(false);
    expect(read(local, 'docs', 'one.txt')).toBe('1 local');
    expect(read(local, 'docs', 'two.txt')).toBe('2 local');
    expect(await dialog.count()).toBe(0);
  });
});

describe('uploads ask the same way (spec 1, Upload: name conflicts)', () => {
  it('Skip uploads only the files whose names are free', async () => {
    await page.getByTestId('upload-input').setInputFiles([
      { name: 'one.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded one') },
      { name: 'fresh.txt', mimeType: 'text/plain', buffer: Buffer.from('fresh') },
    ]);
    const dialog = page.getByTestId('conflict-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('"one.txt" already exists');
    await dialog.getByTestId('conflict-skip').click();
    await expect.poll(() => existsSync(join(local, 'docs', 'fresh.txt'))).toBe(true);
    expect(read(local, 'docs', 'fresh.txt')).toBe('fresh');
    expect(read(local, 'docs', 'one.txt')).toBe('1 local');
    await row('fresh.txt').waitFor();
    // The upload opened the transfers panel; close it for what follows.
    if ((await page.getByTestId('transfers-toggle').getAttribute('aria-pressed')) === 'true') await page.getByTestId('transfers-toggle').click();
  });
});

describe('everything without a mouse drag: context menu, folder picker (WAI-ARIA menu)', () => {
  it('Shift+F10 opens a menu on the focused row; arrows move, Escape closes and gives focus back', async () => {
    const list = page.getByTestId('file-list');
    await list.focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+F10');
    const menu = page.getByRole('menu');
    await menu.waitFor();
    const labels = await menu.getByRole('menuitem').allInnerTexts();
    for (const l of ['Open', 'Download', 'Rename', 'Move to…', 'Copy to…', 'Cut', 'Copy', 'Paste', 'Copy link', 'Delete']) {
      expect(labels.some((t) => t.startsWith(l)), `menu items: ${labels.join(' | ')}`).toBe(true);
    }
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Open');
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Download');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('DeleteDel');
    await shot('context-menu');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('menu').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('file-list');
  });

  it('the Menu key → Copy to… → the folder picker copies into the WebDAV account; again asks, and Keep both makes "a (1).txt"', async () => {
    const copyTo = async () => {
      await row('a.txt').click();
      await page.keyboard.press('ContextMenu');
      await page.getByRole('menu').waitFor();
      for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowDown');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Copy to…');
      await page.keyboard.press('Enter');
      const picker = page.getByTestId('folder-picker');
      await picker.waitFor();
      await picker.getByTestId('picker-account').selectOption({ label: 'Team' });
      await expect.poll(() => picker.getByTestId('picker-here').innerText()).toBe('Team');
      await expect.poll(() => picker.getByTestId('picker-ok').isEnabled()).toBe(true);
      return picker;
    };
    const picker = await copyTo();
    await shot('folder-picker');
    await picker.getByTestId('picker-ok').click();
    await expect.poll(() => existsSync(join(apache.root, 'a.txt'))).toBe(true);
    expect(read(apache.root, 'a.txt')).toBe('A docs');

    await (await copyTo()).getByTestId('picker-ok').click();
    await page.getByTestId('conflict-dialog').waitFor();
    await page.getByTestId('conflict-keep-both').click();
    await expect.poll(() => existsSync(join(apache.root, 'a (1).txt'))).toBe(true);
    expect(read(apache.root, 'a (1).txt')).toBe('A docs');
    // The transfers panel names the copy by the name it was saved under.
    const toggle = page.getByTestId('transfers-toggle');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-pressed')).toBe('true');
    await expect.poll(() => page.locator('[data-testid=transfer-row][data-saved-as="a (1).txt"]').getAttribute('data-state')).toBe('done');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-pressed')).toBe('false');
  });

  it('right click → Move to… the parent folder (Up in the picker) asks, and Keep both keeps both', async () => {
    await row('a.txt').click({ button: 'right' });
    await page.getByTestId('menu-move-to').click();
    const picker = page.getByTestId('folder-picker');
    await picker.waitFor();
    await picker.getByTestId('picker-up').click();
    await expect.poll(() => picker.getByTestId('picker-here').innerText()).not.toBe('docs');
    await picker.locator('[data-testid=picker-folder][data-name="docs"]').waitFor();
    await picker.getByTestId('picker-ok').click();
    await page.getByTestId('conflict-dialog').waitFor();
    await page.getByTestId('conflict-keep-both').click();
    await expect.poll(() => existsSync(join(local, 'a (1).txt'))).toBe(true);
    expect(read(local, 'a (1).txt')).toBe('A docs');
    expect(read(local, 'a.txt')).toBe('B');
    expect(existsSync(join(local, 'docs', 'a.txt'))).toBe(false);
  });

  it('Copy, then Paste into another account (Ctrl+C in the local folder, Ctrl+V in WebDAV)', async () => {
    await row('one.txt').click();
    await page.keyboard.press('Control+c');
    await davAccount().locator('button').first().click();
    await row('a (1).txt').waitFor();
    await page.getByTestId('file-list').focus();
    await page.keyboard.press('Control+v');
    await expect.poll(() => existsSync(join(apache.root, 'one.txt'))).toBe(true);
    expect(read(apache.root, 'one.txt')).toBe('1 local');
    expect(existsSync(join(local, 'docs', 'one.txt'))).toBe(true);
  });
});

describe('delete says what happens (spec 1, Delete: to the trash where the account has one)', () => {
  it('WebDAV has no trash: the dialog lists the items and says "permanently"; no Undo', async () => {
    await row('a.txt').click();
    await row('one.txt').click({ modifiers: ['Control'] });
    await page.keyboard.press('Delete');
    const dialog = page.getByTestId('delete-dialog');
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('delete-where').innerText()).toContain('deleted permanently');
    expect(await dialog.getByTestId('delete-items').locator('li').allInnerTexts()).toEqual(['a.txt', 'one.txt']);
    expect(await dialog.getByTestId('confirm-ok').innerText()).toBe('Delete permanently');
    await shot('delete-permanently');
    await dialog.getByTestId('confirm-ok').click();
    await expect.poll(() => existsSync(join(apache.root, 'a.txt')) || existsSync(join(apache.root, 'one.txt'))).toBe(false);
    await expect.poll(() => page.getByTestId('toast-info').last().innerText()).toContain('deleted permanently');
    expect(await page.getByTestId('toast-action').count()).toBe(0);
  });

  it('the local folder has a trash: the dialog says so, and Undo puts the folder back', async () => {
    await localAccount().locator('button').first().click();
    await row('docs').click();
    await page.keyboard.press('Delete');
    const dialog = page.getByTestId('delete-dialog');
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('delete-where').innerText()).toContain('trash');
    expect(await dialog.getByTestId('delete-items').innerText()).toContain('docs (folder, with everything inside)');
    await shot('delete-to-trash');
    await dialog.getByTestId('confirm-ok').click();
    await expect.poll(() => existsSync(join(local, 'docs'))).toBe(false);
    expect(readdirSync(join(dataHome!.dir, 'Trash', 'files'))).toContain('docs');
    const undo = page.getByTestId('toast-action');
    await undo.waitFor();
    await shot('delete-undo');
    await undo.click();
    await expect.poll(() => existsSync(join(local, 'docs', 'two.txt'))).toBe(true);
    expect(read(local, 'docs', 'two.txt')).toBe('2 local');
    await row('docs').waitFor();
  });
});

describe('navigation: Back/Forward, deep links, panes, 800×600', () => {
  it('Alt+← and Alt+→ go back and forward between folders; the address survives a reload', async () => {
    await row('docs').dblclick();
    await expect.poll(here).toBe('docs');
    await page.keyboard.press('Alt+ArrowLeft');
    await expect.poll(here).not.toBe('docs');
    await row('docs').waitFor();
    await page.keyboard.press('Alt+ArrowRight');
    await expect.poll(here).toBe('docs');
    expect(new URL(page.url()).hash).toMatch(/^#\/account\/\d+\/folder\//);
    await page.reload();
    await expect.poll(here).toBe('docs');
    await row('two.txt').waitFor();
    await page.getByTestId('nav-back').click();
    await expect.poll(here).not.toBe('docs');
    await expect.poll(() => page.getByTestId('nav-forward').isEnabled()).toBe(true);
    await page.getByTestId('nav-forward').click();
    await expect.poll(here).toBe('docs');
  });

  it('Copy link gives an address that opens the folder with the item selected', async () => {
    await row('two.txt').click({ button: 'right' });
    await page.getByTestId('menu-copy-link').click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toMatch(/#\/account\/\d+\/folder\/.+\/item\//);
    const link = await page.evaluate(() => navigator.clipboard.readText());
    await page.goto(app.url.replace(/\/\?token=.*$/, '/'));
    await page.getByTestId('file-list').waitFor();
    await page.goto(link);
    await expect.poll(here).toBe('docs');
    await expect.poll(() => page.locator('[data-testid=file-row][aria-selected=true]').getAttribute('data-name')).toBe('two.txt');
  });

  it('the accounts pane resizes from the keyboard and by drag, and collapses; both are kept after a reload', async () => {
    const pane = page.getByTestId('accounts-pane');
    const before = (await pane.boundingBox())!.width;
    await page.getByTestId('pane-splitter').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await expect.poll(async () => (await pane.boundingBox())!.width).toBe(before + 32);
    // And by dragging the bar.
    const bar = (await page.getByTestId('pane-splitter').boundingBox())!;
    await page.mouse.move(bar.x + bar.width / 2, bar.y + 200);
    await page.mouse.down();
    await page.mouse.move(bar.x + bar.width / 2 - 20, bar.y + 200, { steps: 2 });
    await page.mouse.move(bar.x + bar.width / 2 - 40, bar.y + 200, { steps: 2 });
    await page.mouse.up();
    await expect.poll(async () => (await pane.boundingBox())!.width).toBe(before - 8);
    await page.reload();
    await expect.poll(async () => (await page.getByTestId('accounts-pane').boundingBox())?.width).toBe(before - 8);
    await page.getByTestId('pane-toggle').click();
    await expect.poll(() => page.getByTestId('accounts-pane').count()).toBe(0);
    await page.reload();
    await page.getByTestId('file-list').waitFor();
    expect(await page.getByTestId('accounts-pane').count()).toBe(0);
    await shot('pane-collapsed');
    await page.getByTestId('pane-toggle').click();
    await page.getByTestId('accounts-pane').waitFor();
  });

  it('at 800×600 and 1440×900 no toolbar control is clipped', async () => {
    for (const [width, height] of [
      [800, 600],
      [1440, 900],
    ]) {
      await page.setViewportSize({ width, height });
      await row('two.txt').click();
      const controls = page.locator('.topbar button, .browser .toolbar button, .browser .toolbar input:not([hidden])');
      const boxes = await controls.evaluateAll((els) => els.map((e) => ({ name: e.getAttribute('aria-label') ?? e.textContent, ...JSON.parse(JSON.stringify(e.getBoundingClientRect())) })));
      expect(boxes.length).toBeGreaterThan(8);
      for (const b of boxes) {
        expect(b.width, `${b.name} at ${width}×${height}`).toBeGreaterThan(0);
        expect(b.right, `${b.name} at ${width}×${height}`).toBeLessThanOrEqual(width);
        expect(b.left, `${b.name} at ${width}×${height}`).toBeGreaterThanOrEqual(0);
      }
      // The list keeps room to show rows.
      expect((await page.getByTestId('file-list').boundingBox())!.height).toBeGreaterThan(150);
      await shot(`${width}x${height}`);
    }
  });

  it('raised no page errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
