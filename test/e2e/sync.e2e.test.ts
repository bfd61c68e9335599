/**
 * End to end, in real Chromium against headless mode: the Sync view (docs/sync.md). Add a pair
 * (a folder ↔ a folder of the first-run local account, picked in its folders), see a file appear on the other side,
 * make a conflict by changing a file on both sides, resolve it with Keep mine; the file browser
 * badges the synced file "synced" and the conflicted one "conflict"; a folder ticked out of the
 * pair and back in (selective sync). Screenshots of
 * each state at 1440×900 and 800×600 in test-results/e2e-sync-*.png.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULTS, openApp, type OpenApp } from './harness';
import { until } from '../servers/util';

describe('E2E Sync view in Chromium against headless mode', () => {
  let app: OpenApp;
  let mine: string;
  const errors: string[] = [];
  const shots = async (name: string) => {
    for (const [w, h] of [
      [1440, 900],
      [800, 600],
    ]) {
      await app.page.setViewportSize({ width: w, height: h });
      await app.page.screenshot({ path: join(RESULTS, `e2e-sync-${name}-${w}x${h}.png`) });
    }
  };

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    app = await openApp('sync');
    app.page.on('pageerror', (e) => errors.push(e.message));
    mine = mkdtempSync(join(tmpdir(), 'tributary-e2e-sync-mine-'));
    mkdirSync(join(app.localFolder, 'Shared'));
  });
  afterAll(async () => {
    await app?.close();
    if (mine) rmSync(mine, { recursive: true, force: true });
  });

  it('adds a pair, syncs a file across, and resolves a conflict with Keep mine', async () => {
    const { page } = app;
    await page.getByTestId('sync-toggle').click();
    await page.getByTestId('sync-view').waitFor();
    await shots('empty');

    await page.getByTestId('sync-local').fill(mine);
    // docs/sync.md, "Pairs": add a pair, picking the local folder and the remote one; the remote one is picked
    // in the account's folders.
    await page.getByTestId('sync-remote-choose').click();
    const picker = page.getByTestId('folder-picker');
    await picker.locator('[data-testid=picker-folder][data-name="Shared"]').click();
    await expect.poll(() => picker.getByTestId('picker-here').textContent()).toBe('Shared');
    await shots('pick-remote');
    await picker.getByTestId('picker-ok').click();
    await picker.waitFor({ state: 'detached' });
    expect(await page.getByTestId('sync-remote').inputValue()).toBe('/Shared');
    await page.getByTestId('sync-add-submit').click();
    const pair = page.locator('[data-testid^="sync-pair-"]');
    await pair.waitFor();
    writeFileSync(join(mine, 'hello.txt'), 'hello from this folder');
    const there = join(app.localFolder, 'Shared', 'hello.txt');
    await until(() => existsSync(there));
    expect(readFileSync(there, 'utf8')).toBe('hello from this folder');
    await expect.poll(() => pair.getByTestId('sync-state').textContent(), { timeout: 20_000 }).toContain('Up to date');
    await shots('up-to-date');

    // docs/sync.md, "Badges": the pair's remote folder in the file browser.
    const badge = (name: string) => page.locator(`[data-testid=file-row][data-name="${name}"]`).getByTestId('sync-file-badge');
    await page.getByTestId('sync-toggle').click();
    // The root was listed before the test made /Shared.
    await page.getByTestId('refresh').click();
    await expect.poll(() => badge('Shared').getAttribute('data-state'), { timeout: 20_000 }).toBe('synced');
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.locator('[data-testid=file-row][data-name="Shared"]').click();
    await page.keyboard.press('Enter');
    await page.getByTestId('breadcrumbs').getByText('Shared').waitFor();
    await expect.poll(() => badge('hello.txt').getAttribute('data-state'), { timeout: 20_000 }).toBe('synced');
    expect(await badge('hello.txt').textContent()).toBe('synced');
    await shots('badge-synced');
    await page.getByTestId('sync-toggle').click();
    await page.getByTestId('sync-view').waitFor();

    // Changed on both sides before the engine looks: a conflict, both versions kept.
    writeFileSync(join(mine, 'notes.txt'), 'v0');
    await until(() => existsSync(join(app.localFolder, 'Shared', 'notes.txt')));
    await expect.poll(() => pair.getByTestId('sync-state').textContent(), { timeout: 20_000 }).toContain('Up to date');
    await page.getByTestId('sync-pause').click();
    await page.getByTestId('sync-resume').waitFor();
    writeFileSync(join(mine, 'notes.txt'), 'mine, longer');
    writeFileSync(join(app.localFolder, 'Shared', 'notes.txt'), 'theirs');
    await page.getByTestId('sync-resume').click();
    const conflict = page.getByTestId('sync-conflict');
    await conflict.waitFor({ timeout: 20_000 });
    await expect.poll(() => conflict.textContent()).toContain('/notes.txt');
    await expect.poll(() => pair.getByTestId('sync-conflict-count').textContent(), { timeout: 20_000 }).toBe('1 conflict');
    await shots('conflict');

    await page.getByTestId('sync-toggle').click();
    await expect.poll(() => badge('notes.txt').getAttribute('data-state'), { timeout: 20_000 }).toBe('conflict');
    expect(await badge('hello.txt').getAttribute('data-state')).toBe('synced');
    await shots('badge-conflict');
    await page.getByTestId('sync-toggle').click();
    await page.getByTestId('sync-view').waitFor();

    await conflict.getByTestId('keep-mine').click();
    await until(() => readFileSync(join(app.localFolder, 'Shared', 'notes.txt'), 'utf8') === 'mine, longer');
    await expect.poll(() => page.getByTestId('sync-conflict').count(), { timeout: 20_000 }).toBe(0);
    expect(readFileSync(join(mine, 'notes.txt'), 'utf8')).toBe('mine, longer');
    await shots('resolved');
    expect(errors).toEqual([]);
  });
  // docs/sync.md, "What is synced": folders ticked out of a pair after it was made (selective
  // sync); the copies stay on both sides, and ticked back in the folder syncs again. Uses the pair
  // of the test above.
  it('ticks a folder out of the pair and back in', async () => {
    const { page } = app;
    const there = (...p: string[]) => join(app.localFolder, 'Shared', ...p);
    const pair = page.locator('[data-testid^="sync-pair-"]');
    mkdirSync(join(mine, 'photos'));
    mkdirSync(join(mine, 'work'));
    writeFileSync(join(mine, 'photos', 'beach.txt'), 'beach');
    writeFileSync(join(mine, 'work', 'plan.txt'), 'plan');
    await until(() => existsSync(there('photos', 'beach.txt')) && existsSync(there('work', 'plan.txt')));
    await expect.poll(() => pair.getByTestId('sync-state').textContent(), { timeout: 20_000 }).toContain('Up to date');

    await pair.getByTestId('sync-folders-toggle').click();
    const photos = page.locator('[data-testid=sync-folder][data-path="/photos"]');
    await photos.waitFor();
    expect(await photos.isChecked()).toBe(true);
    await photos.uncheck();
    await expect.poll(() => pair.getByTestId('sync-folders-toggle').textContent(), { timeout: 20_000 }).toContain('1 left out');
    expect(await page.locator('[data-testid=sync-folder][data-path="/photos"]').isChecked()).toBe(false);
    await shots('folder-unticked');

    // The unticked folder no longer syncs; the other one does, and nothing was deleted.
    writeFileSync(join(mine, 'photos', 'hike.txt'), 'hike');
    writeFileSync(join(mine, 'work', 'notes.txt'), 'notes');
    await until(() => existsSync(there('work', 'notes.txt')));
    await expect.poll(() => pair.getByTestId('sync-state').textContent(), { timeout: 20_000 }).toContain('Up to date');
    expect(existsSync(there('photos', 'hike.txt'))).toBe(false);
    expect(readFileSync(there('photos', 'beach.txt'), 'utf8')).toBe('beach');
    expect(readFileSync(join(mine, 'photos', 'beach.txt'), 'utf8')).toBe('beach');

    await page.locator('[data-testid=sync-folder][data-path="/photos"]').check();
    await until(() => existsSync(there('photos', 'hike.txt')));
    expect(readFileSync(there('photos', 'hike.txt'), 'utf8')).toBe('hike');
    await expect.poll(() => pair.getByTestId('sync-folders-toggle').textContent(), { timeout: 20_000 }).toBe('Folders');
    await expect.poll(() => pair.getByTestId('sync-state').textContent(), { timeout: 20_000 }).toContain('Up to date');
    expect(await page.getByTestId('sync-conflict').count()).toBe(0);
    await shots('folder-ticked-in');
    expect(errors).toEqual([]);
  });
});
