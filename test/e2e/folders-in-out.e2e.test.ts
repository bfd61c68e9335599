/**
 * Folders in and out, end to end in Chromium against headless mode and Apache WebDAV: a folder
 * dropped from the desktop (a real OS-style drag of a directory, through the DevTools protocol,
 * so the page reads it with webkitGetAsEntry) uploads recursively as one transfer group with
 * total progress, and again as "name (1)" when the name is taken; a selection of a folder and a
 * file downloads as one zip stream whose entries are the tree, byte for byte.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectWebdav, row } from './live-helpers';

let apache: ApacheServer;
let app: OpenApp;
let page: Page;
let scratch: string;
const big = randomBytes(3 * 1024 * 1024 + 17);
const tree: Record<string, Buffer> = {
  'a.txt': Buffer.from('first file'),
  'sub/b.bin': big,
  'sub/deeper/c.txt': Buffer.from('third file, two levels down'),
};

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  scratch = mkdtempSync(join(tmpdir(), 'tributary-e2e-folders-'));
  const album = join(scratch, 'Album');
  for (const [rel, bytes] of Object.entries(tree)) {
    mkdirSync(join(album, rel, '..'), { recursive: true });
    writeFileSync(join(album, rel), bytes);
  }
  mkdirSync(join(album, 'empty'));
  apache = await startApache();
  app = await openApp('folders');
  page = app.page;
  await connectWebdav(page, apache, 'Photos DAV');
  await page.getByTestId('list-empty').waitFor();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await apache?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Drags a folder of the disk onto the file list the way the OS does (Chromium's own drag data). */
async function dropFolder(path: string): Promise<void> {
  const box = (await page.getByTestId('file-list').boundingBox())!;
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2;
  const cdp = await page.context().newCDPSession(page);
  const data = { items: [], files: [path], dragOperationsMask: 1 };
  for (const type of ['dragEnter', 'dragOver', 'drop'] as const) await cdp.send('Input.dispatchDragEvent', { type, x, y, data });
  await cdp.detach();
}

const totalBytes = Object.values(tree).reduce((n, b) => n + b.length, 0);

describe('folders in and out (spec 1, Upload a file; Download a file)', () => {
  it('a dropped folder uploads recursively as one transfer group with total progress', async () => {
    await page.getByTestId('transfers-toggle').click();
    await dropFolder(join(scratch, 'Album'));
    const group = page.locator('[data-testid=transfer-row][data-name="Album"]');
    await expect.poll(() => group.getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
    expect(Number(await group.getAttribute('data-total'))).toBe(totalBytes);
    expect(Number(await group.getAttribute('data-done'))).toBe(totalBytes);
    // One row for the folder, none per file.
    expect(await page.locator('[data-testid=transfer-row][data-name="b.bin"]').count()).toBe(0);
    for (const [rel, bytes] of Object.entries(tree)) expect(readFileSync(join(apache.root, 'Album', rel)).equals(bytes), rel).toBe(true);
    expect(statSync(join(apache.root, 'Album', 'empty')).isDirectory()).toBe(true);
    await row(page, 'Album').waitFor();
    await page.screenshot({ path: join(RESULTS, 'e2e-folders-uploaded.png') });
  });

  it('dropped again, the folder is kept beside the first as "Album (1)" and the panel says so', async () => {
    await dropFolder(join(scratch, 'Album'));
    const group = page.locator('[data-testid=transfer-row][data-name="Album"][data-saved-as="Album (1)"]');
    await expect.poll(() => group.getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
    expect(await group.innerText()).toContain('Saved as Album (1)');
    expect(readFileSync(join(apache.root, 'Album (1)', 'sub/deeper/c.txt')).equals(tree['sub/deeper/c.txt'])).toBe(true);
  });

  it('a folder and a file selected download as one zip stream holding the tree', async () => {
    writeFileSync(join(apache.root, 'notes.txt'), 'loose file');
    await row(page, 'notes.txt').waitFor();
    await row(page, 'Album').click();
    await row(page, 'notes.txt').click({ modifiers: ['Control'] });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('toolbar-download').click()]);
    expect(download.suggestedFilename()).toMatch(/\.zip$/);
    const zip = join(scratch, 'selection.zip');
    await download.saveAs(zip);
    const out = join(scratch, 'unzipped');
    const r = spawnSync('unzip', ['-q', zip, '-d', out], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const [rel, bytes] of Object.entries(tree)) expect(readFileSync(join(out, 'Album', rel)).equals(bytes), rel).toBe(true);
    expect(statSync(join(out, 'Album', 'empty')).isDirectory()).toBe(true);
    expect(readFileSync(join(out, 'notes.txt'), 'utf8')).toBe('loose file');
    expect(existsSync(join(out, 'Album (1)'))).toBe(false);
    await page.screenshot({ path: join(RESULTS, 'e2e-folders-zip-selection.png') });
    await page.setViewportSize({ width: 800, height: 600 });
    await page.screenshot({ path: join(RESULTS, 'e2e-folders-800x600.png') });
  });
});
