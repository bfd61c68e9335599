/**
 * Every transfer shows real progress, end to end in Chromium against headless mode and Apache
 * WebDAV behind a proxy that lets bytes reach the server at a fixed, observable rate: a
 * cross-account copy (local → WebDAV) and a web upload to WebDAV show bytes as they reach the
 * server — never far ahead of what the server received, never 100 % while bytes are still on
 * their way — with speed and time left, and the panel shows the name the file was saved under.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { startThrottle, type Throttle } from '../servers/throttle';
import { RESULTS, openApp, type OpenApp } from './harness';
import { connectWebdav, dragRowsCopy, row } from './live-helpers';

const MB = 1024 * 1024;
/** What the server receives per second through the proxy. */
const RATE = 4 * MB;
/**
 * How far the shown bytes may run ahead of what reached the proxy: Tributary's socket send
 * buffer (tcp_wmem, up to 4 MB), the WebDAV connector's 1 MB feed, one write's stream buffers,
 * and what the proxy forwards between its reports (every 50 ms).
 */
const AHEAD = 7 * MB + RATE / 20;

let apache: ApacheServer;
let throttle: Throttle;
let app: OpenApp;
let page: Page;

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  apache = await startApache();
  throttle = await startThrottle(apache.port, RATE);
  app = await openApp('progress');
  page = app.page;
  await connectWebdav(page, apache, 'Slow DAV', throttle.port);
  await page.getByTestId('list-empty').waitFor();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await throttle?.stop();
  await apache?.stop();
});

interface Sample {
  state: string;
  done: number;
  percent: number;
  forwarded: number;
  detail: string;
}

/** Samples a transfer row every 100 ms until it ends, with what the proxy forwarded meanwhile. */
async function follow(transfer: Locator, total: number, screenshot?: string): Promise<Sample[]> {
  const samples: Sample[] = [];
  let shot = false;
  await transfer.waitFor();
  for (;;) {
    // One read of the row, so that state, bytes and percent belong together.
    const seen = await transfer.evaluate((el) => ({
      state: el.getAttribute('data-state') ?? '',
      done: Number(el.getAttribute('data-done')),
      percent: Number(el.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow')),
      detail: (el.querySelector('.transfer-detail') as HTMLElement | null)?.innerText ?? '',
    }));
    // Read after the row: on a loaded machine reading the page takes a while, and the bytes that
    // reached the server meanwhile belong to what the row may already show.
    const forwarded = throttle.forwarded();
    const { state, done, percent, detail } = seen;
    samples.push({ state, done, percent, forwarded, detail });
    if (screenshot && !shot && state === 'running' && detail.endsWith(' left')) {
      shot = true;
      await page.screenshot({ path: join(RESULTS, screenshot) });
    }
    if (state !== 'running' && state !== 'queued') return samples;
    if (samples.length > 600) throw new Error(`still running after 60 s: ${JSON.stringify(samples.at(-1))} of ${total}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * What the samples must show: never ahead of the server (beyond its buffers) nor 100 % before
 * it confirmed; when `moving`, bytes, speed and time left while they stream.
 */
function checkTruthful(samples: Sample[], total: number, label: string, moving = true): void {
  const running = samples.filter((s) => s.state === 'running');
  const trace = samples.map((s) => `${s.state[0]}:${(s.done / MB).toFixed(1)}/${(s.forwarded / MB).toFixed(1)}`).join(' ');
  expect(samples.at(-1)!.state, trace).toBe('done');
  // Bytes shown while they stream, not "0 B of …" until Done.
  if (moving) expect(running.some((s) => s.done > 0 && s.done < total), `${label}: ${trace}`).toBe(true);
  // Never (far) ahead of the bytes that reached the server, and never all of them while running.
  for (const s of running) {
    expect(s.done - (s.forwarded - forwardedBefore), `${label}: ${trace}`).toBeLessThanOrEqual(AHEAD);
    expect(s.percent, `${label}: ${trace}`).toBeLessThan(100);
  }
  if (moving) expect(running.some((s) => /\/s · .+ left/.test(s.detail)), `${label}: speed and time left: ${running.map((s) => s.detail).join(' | ')}`).toBe(true);
}

let forwardedBefore = 0;

describe('transfers show the bytes where they move (Transfers panel)', () => {
  it('a cross-account copy (local → WebDAV) shows its bytes as they reach the server, and the name it was saved under', async () => {
    const size = 24 * MB;
    const bytes = randomBytes(size);
    // The copy lands where a file of that name already is: it is saved as "movie (1).bin".
    writeFileSync(join(apache.root, 'movie.bin'), 'taken');
    await page.locator('[data-testid=account-item][data-service=local]').click();
    writeFileSync(join(app.localFolder, 'movie.bin'), bytes);
    await row(page, 'movie.bin').waitFor();
    await page.getByTestId('transfers-toggle').click();
    forwardedBefore = throttle.forwarded();
    await dragRowsCopy(page, ['movie.bin'], '[data-testid=account-item][data-name="Slow DAV"]');
    // The name is taken: the drop asks, and Keep both saves it beside the other.
    await page.getByTestId('conflict-keep-both').click();
    const transfer = page.locator('[data-testid=transfer-row][data-name="movie.bin"]');
    const samples = await follow(transfer, size, 'e2e-progress-copy-running.png');
    checkTruthful(samples, size, 'copy');
    await page.screenshot({ path: join(RESULTS, 'e2e-progress-copy-done.png') });
    expect(await transfer.getAttribute('data-saved-as')).toBe('movie (1).bin');
    expect(await transfer.innerText()).toContain('Saved as movie (1).bin');
    expect(readFileSync(join(apache.root, 'movie (1).bin')).equals(bytes)).toBe(true);
  });

  it('a web upload to WebDAV shows the bytes written to the server, not those the browser sent (a big file: staged parts, then the upload to the server)', async () => {
    const size = 32 * MB;
    await page.locator('[data-testid=account-item][data-name="Slow DAV"]').click();
    await row(page, 'movie (1).bin').waitFor();
    forwardedBefore = throttle.forwarded();
    await dropPattern(page, 'upload big.bin', size);
    const samples = await follow(page.locator('[data-testid=transfer-row][data-name="upload big.bin"]'), size, 'e2e-progress-upload-running.png');
    checkTruthful(samples, size, 'big web upload');
    expect(readFileSync(join(apache.root, 'upload big.bin')).equals(pattern(size))).toBe(true);
  });

  // 5 MB fit in the buffers between Tributary and the server (socket, connector): the bytes
  // leave at once, and the row must then wait for the server rather than show 100 %.
  it('a small web upload (one request) to WebDAV is not 100 % before the server confirmed it', async () => {
    const size = 5 * MB - 1;
    forwardedBefore = throttle.forwarded();
    await dropPattern(page, 'upload small.bin', size);
    const samples = await follow(page.locator('[data-testid=transfer-row][data-name="upload small.bin"]'), size);
    checkTruthful(samples, size, 'small web upload', false);
    expect(samples.some((s) => s.state === 'running' && s.detail.includes('waiting for the server to confirm'))).toBe(true);
    await page.screenshot({ path: join(RESULTS, 'e2e-progress-uploads-done.png') });
    expect(readFileSync(join(apache.root, 'upload small.bin')).equals(pattern(size))).toBe(true);
  });
});

/** Bytes i of the test files: (i >> 10) & 0xff, made the same way in the page. */
function pattern(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i >> 10) & 0xff;
  return out;
}

/** Drops a file of `pattern` bytes, made in the page, onto the open folder's list. */
async function dropPattern(page: Page, name: string, size: number): Promise<void> {
  const dt = await page.evaluateHandle(
    ({ name, size }) => {
      const data = new Uint8Array(size);
      for (let i = 0; i < size; i++) data[i] = (i >> 10) & 0xff;
      const t = new DataTransfer();
      t.items.add(new File([data], name, { type: 'application/octet-stream' }));
      return t;
    },
    { name, size },
  );
  for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('[data-testid=file-list]', type, { dataTransfer: dt });
  await dt.dispose();
}
