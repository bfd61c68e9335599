/**
 * Startup bench: time from starting `serve` to the first listing painted in the browser, and
 * the server's RSS after browsing a folder of 100,000 entries (BENCH_ENTRIES), with the time
 * until every entry is listed. Figures only; the peer here is the same machine's `ls`.
 * Each RSS is read twice: right after the step, and once the server has sat idle for IDLE_S
 * seconds with the page open (V8 hands back the memory of its young generation and of the
 * step's garbage some seconds after the work stops). "Idle" is the second.
 *   npm run bench startup
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, launchChromium, startServe, stopChild } from '../e2e/harness';
import { summary } from './ratio';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 100_000);
/** Seconds without activity before the idle RSS is read (BENCH_IDLE_S). */
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 15);
const idle = () => new Promise((r) => setTimeout(r, IDLE_S * 1000));

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

export async function main(): Promise<void> {
  ensureBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-bench-start-'));
  const local = mkdtempSync(join(tmpdir(), 'tributary-bench-start-local-'));
  writeFileSync(join(local, 'hello.txt'), 'hi');
  const big = join(local, 'big');
  mkdirSync(big);
  for (let i = 0; i < ENTRIES; i++) writeFileSync(join(big, `file-${i}.txt`), '');
  const browser = await launchChromium();
  try {
    // Cold start: spawn → URL printed → page loaded → first row painted.
    const t0 = performance.now();
    const serve = await startServe(dataDir, local);
    const tUrl = performance.now();
    const page = await browser.newPage();
    await page.goto(serve.url);
    await page.locator('[data-testid=file-row]').first().waitFor();
    const tPaint = performance.now();
    const rssPainted = rssMb(serve.child.pid!);
    await idle();
    const rssIdle = rssMb(serve.child.pid!);

    // Browse the big folder until the footer counts every entry.
    const tOpen = performance.now();
    await page.locator('[data-testid=file-row][data-name="big"]').dblclick();
    await page.locator('[data-testid=file-row]').first().waitFor();
    const tFirst = performance.now();
    await page.waitForFunction((n) => document.body.innerText.includes(`${n.toLocaleString()} items`) || document.body.innerText.includes(`${n} items`), ENTRIES, { timeout: 300_000 });
    const tAll = performance.now();
    const rssBrowsed = rssMb(serve.child.pid!);
    await idle();
    const rssBrowsedIdle = rssMb(serve.child.pid!);

    const ls = performance.now();
    spawnSync('ls', ['-f', big], { stdio: 'ignore' });
    const lsMs = performance.now() - ls;

    console.log(`serve → URL printed:            ${(tUrl - t0).toFixed(0)} ms`);
    console.log(`serve → first listing painted:  ${(tPaint - t0).toFixed(0)} ms`);
    console.log(`RSS of serve, first listing:    ${rssPainted.toFixed(0)} MB, ${IDLE_S} s later (idle) ${rssIdle.toFixed(0)} MB`);
    console.log(`${ENTRIES} entries: first rows ${(tFirst - tOpen).toFixed(0)} ms, all listed in the browser ${(tAll - tOpen).toFixed(0)} ms (for scale: ls -f of the folder ${lsMs.toFixed(0)} ms)`);
    console.log(`RSS of serve after browsing:    ${rssBrowsed.toFixed(0)} MB, ${IDLE_S} s later (idle) ${rssBrowsedIdle.toFixed(0)} MB`);
    summary([
      { row: 'memory', column: `\`serve\` RSS, idle (${IDLE_S} s after the first listing)`, value: rssIdle, unit: 'MB' },
      { row: 'memory', column: '`serve` RSS right as the first listing is painted', value: rssPainted, unit: 'MB' },
      { row: 'startup', column: '`serve` → first listing painted', value: tPaint - t0, unit: 'ms' },
      { row: 'memory', column: `\`serve\` RSS after browsing ${ENTRIES} entries`, value: rssBrowsed, unit: 'MB' },
      { row: 'memory', column: `\`serve\` RSS after browsing ${ENTRIES} entries, ${IDLE_S} s idle`, value: rssBrowsedIdle, unit: 'MB' },
    ]);
    await stopChild(serve.child);
  } finally {
    await browser.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(local, { recursive: true, force: true });
  }
}
