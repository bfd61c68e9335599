/**
 * Live folders bench: the time from a change made outside Tributary to its row on screen, in
 * Chromium against `serve`. Local account (the watch; target < 0.5 s) and Apache WebDAV (the
 * poll of the open folder at the default interval; target ≤ interval + 1 s). The page stamps
 * the moment a row appears (MutationObserver, Date.now()) so Playwright's own polling is not
 * measured. BENCH_LIVE_ROUNDS rounds each (default 5).
 *   npm run bench live-folders
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { DEFAULT_POLL_SECONDS } from '../../src-main/services/folder-watch';
import { openApp } from '../e2e/harness';
import { connectWebdav } from '../e2e/live-helpers';
import { startApache } from '../servers/apache';

const ROUNDS = Number(process.env.BENCH_LIVE_ROUNDS ?? 5);

/** Starts stamping when rows appear: window.rowSeen[name] = Date.now(). */
async function stampRows(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: Record<string, number> = {};
    (window as unknown as { rowSeen: Record<string, number> }).rowSeen = seen;
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('[data-testid=file-row]')) {
        const name = el.getAttribute('data-name');
        if (name && !(name in seen)) seen[name] = Date.now();
      }
    }).observe(document.body, { subtree: true, childList: true });
  });
}

async function measure(page: Page, write: (name: string) => void, label: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const name = `${label}-${i}-${Date.now()}.txt`;
    // Rounds start at random offsets against the poll's rhythm.
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
    const t0 = Date.now();
    write(name);
    await page.waitForFunction((n) => n in (window as unknown as { rowSeen: Record<string, number> }).rowSeen, name, { timeout: 30_000 });
    out.push((await page.evaluate((n) => (window as unknown as { rowSeen: Record<string, number> }).rowSeen[n], name)) - t0);
  }
  return out;
}

const summary = (ms: number[]) => {
  const s = ms.slice().sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]} ms, max ${s.at(-1)} ms (${s.join(', ')})`;
};

export async function main(): Promise<void> {
  const apache = await startApache();
  const app = await openApp('bench-live');
  try {
    await stampRows(app.page);
    const local = await measure(app.page, (n) => writeFileSync(join(app.localFolder, n), 'x'), 'local');
    console.log(`local folder (watch), outside write → row on screen: ${summary(local)}   target < 500 ms`);
    await connectWebdav(app.page, apache, 'Bench DAV');
    await app.page.getByTestId('list-empty').waitFor();
    const dav = await measure(app.page, (n) => writeFileSync(join(apache.root, n), 'x'), 'dav');
    console.log(`WebDAV (poll every ${DEFAULT_POLL_SECONDS} s), outside write → row on screen: ${summary(dav)}   target ≤ ${DEFAULT_POLL_SECONDS * 1000 + 1000} ms`);
  } finally {
    await app.close();
    await apache.stop();
  }
}
