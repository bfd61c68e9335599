/**
 * Big files (spec 1, Multipart upload), end to end in Chromium against headless mode: connect an S3
 * bucket (s3rver) through the form, drop a 60 MB file onto a folder of it, watch the transfers
 * panel show progress, and see the file appear with its size; the object in the bucket is
 * byte-identical. The browser's upload is throttled (Chromium network emulation) so progress is
 * observable rather than over in an instant.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3rver, type S3Server } from '../servers/s3';
import { RESULTS, formatBytes, openApp, type OpenApp } from './harness';

const SIZE = 60 * 1024 * 1024;

/** The file's bytes, made the same way here and in the page: a xorshift32 stream. */
function pattern(size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = 2463534242;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  return out;
}

let s3: S3Server;
let app: OpenApp;
let page: Page;

beforeAll(async () => {
  s3 = await startS3rver('e2e-transfers');
  app = await openApp('transfers');
  page = app.page;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await s3?.stop();
});

describe('a big file into S3 from the browser (spec 1, Multipart upload; Transfers UI)', () => {
  it('connects the bucket through the form, uploads 60 MB with visible progress, and the object is byte-identical', async () => {
    // spec 1, Import an account (s3): the generated form, with "Test connection" first.
    await page.getByTestId('connect-account').click();
    await page.getByTestId('connector-s3').click();
    const form = page.getByTestId('connect-dialog');
    await form.getByTestId('field-accessKeyId').fill(s3.accessKeyId);
    await form.getByTestId('field-secretAccessKey').fill(s3.secretAccessKey);
    await form.getByTestId('field-endpoint').fill(s3.endpoint);
    await form.getByTestId('field-region').fill(s3.region);
    await form.getByTestId('field-bucket').fill(s3.bucket);
    await form.getByTestId('field-pathStyle').check();
    await form.getByTestId('field-account-name').fill('Bucket');
    await form.getByTestId('test-connection').click();
    await expect.poll(() => form.getByTestId('connect-status').innerText()).toBe('Connection works.');
    await form.getByTestId('connect-submit').click();
    await expect.poll(() => page.getByTestId('breadcrumbs').innerText()).toContain('Bucket');

    // A folder (a prefix with a marker object) to drop into.
    await page.getByTestId('new-folder').click();
    await page.getByTestId('prompt-input').fill('Videos');
    await page.getByTestId('prompt-ok').click();
    await page.locator('[data-testid=file-row][data-name="Videos"]').dblclick();
    await page.getByTestId('list-empty').waitFor();

    // Record every progress value the transfers panel shows for the file.
    await page.getByTestId('transfers-toggle').click();
    await page.evaluate(() => {
      const seen: number[] = [];
      (window as unknown as { progressSeen: number[] }).progressSeen = seen;
      new MutationObserver(() => {
        const bar = document.querySelector('[data-testid=transfer-row][data-name="big.bin"] [role=progressbar]');
        const v = bar?.getAttribute('aria-valuenow');
        if (v !== null && v !== undefined && seen.at(-1) !== Number(v)) seen.push(Number(v));
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-valuenow'] });
    });

    // Throttle the browser's upload to ~20 MB/s so the transfer lasts a few seconds.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 20 * 1024 * 1024 });

    // Drop it the way the OS does, the bytes made inside the page.
    const dataTransfer = await page.evaluateHandle((size) => {
      const data = new Uint8Array(size);
      const words = new Uint32Array(data.buffer);
      let x = 2463534242;
      for (let i = 0; i < words.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        words[i] = x >>> 0;
      }
      const dt = new DataTransfer();
      dt.items.add(new File([data], 'big.bin', { type: 'application/octet-stream' }));
      return dt;
    }, SIZE);
    for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('[data-testid=file-list]', type, { dataTransfer });
    await dataTransfer.dispose();

    const row = page.locator('[data-testid=transfer-row][data-name="big.bin"]');
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 120_000 }).toBe('done');
    const seen = await page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen);
    expect(seen.some((v) => v > 0 && v < 100), `progress values seen: ${seen.join(', ')}`).toBe(true);
    expect(seen.at(-1)).toBe(100);

    // The file is listed with its size.
    const listed = page.locator('[data-testid=file-row][data-name="big.bin"]');
    await expect.poll(() => listed.count()).toBe(1);
    expect(await listed.innerText()).toContain(formatBytes(SIZE));
    await page.screenshot({ path: join(RESULTS, 'e2e-transfers-s3.png') });

    // And the object in the bucket is the very bytes dropped.
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'Videos/big.bin' }));
      const hash = createHash('sha256');
      for await (const chunk of object.Body as AsyncIterable<Buffer>) hash.update(chunk);
      expect(hash.digest('hex')).toBe(createHash('sha256').update(pattern(SIZE)).digest('hex'));
    } finally {
      client.destroy();
    }
  });

  it('pauses and resumes a big upload from the panel (the session keeps its parts), then announces the end while the page is in the background', async () => {
    // Settings: announce every transfer that ends (0 s), so this one is announced.
    await page.getByTestId('settings-open').click();
    const dialog = page.getByTestId('settings-dialog');
    await dialog.getByTestId('setting-notify-after').fill('0');
    await dialog.getByTestId('setting-notify-save').click();
    await expect.poll(() => dialog.getByTestId('setting-notify-after').inputValue()).toBe('0');
    await dialog.getByTestId('settings-close').click();

    // The page is in the background, and notifications are allowed: record what it shows.
    await page.evaluate(() => {
      const shown: { title: string; body: string }[] = [];
      (window as unknown as { notices: typeof shown }).notices = shown;
      class RecordingNotification {
        static permission = 'granted';
        static requestPermission = async () => 'granted';
        onclick: (() => void) | null = null;
        constructor(title: string, options: { body: string }) {
          shown.push({ title, body: options.body });
        }
      }
      Object.assign(window, { Notification: RecordingNotification });
      document.hasFocus = () => false;
    });

    // Record every progress value the row shows.
    await page.evaluate(() => {
      const seen: number[] = [];
      (window as unknown as { pausableSeen: number[] }).pausableSeen = seen;
      new MutationObserver(() => {
        const v = document.querySelector('[data-testid=transfer-row][data-name="pausable.bin"] [role=progressbar]')?.getAttribute('aria-valuenow');
        if (v !== null && v !== undefined && seen.at(-1) !== Number(v)) seen.push(Number(v));
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-valuenow'] });
    });

    // 48 MiB in six 8 MiB parts, four at a time, at ~12 MB/s: pause once the first four are in.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 12 * 1024 * 1024 });
    const size = 48 * 1024 * 1024;
    const dataTransfer = await page.evaluateHandle((n) => {
      const data = new Uint8Array(n);
      for (let i = 0; i < n; i += 1024) data[i] = (i / 1024) & 0xff;
      const dt = new DataTransfer();
      dt.items.add(new File([data], 'pausable.bin', { type: 'application/octet-stream' }));
      return dt;
    }, size);
    for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('[data-testid=file-list]', type, { dataTransfer });
    await dataTransfer.dispose();

    const row = page.locator('[data-testid=transfer-row][data-name="pausable.bin"]');
    const percent = async () => Number(await row.getByRole('progressbar').getAttribute('aria-valuenow'));
    await expect.poll(percent, { timeout: 30_000 }).toBeGreaterThanOrEqual(70);
    await row.getByRole('button', { name: 'Pause pausable.bin' }).click();
    await expect.poll(() => row.getAttribute('data-state')).toBe('paused');
    expect(await row.innerText()).toContain('Paused');
    // Paused, the row shows the confirmed parts only: a whole number of the six parts (the bytes
    // of parts in flight are dropped). How many the server had confirmed when the page had sent
    // 70 % of the bytes depends on the machine's load, so any whole number short of six will do.
    const atPause = await percent();
    const wholeParts = [1, 2, 3, 4, 5].map((k) => (k * 100) / 6);
    expect(wholeParts.some((p) => Math.abs(atPause - p) < 1), `progress at pause: ${atPause}`).toBe(true);
    const seenAtPause = await page.evaluate(() => (window as unknown as { pausableSeen: number[] }).pausableSeen.length);
    // Nothing moves while paused, and the badge no longer counts it as active.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await percent()).toBeLessThanOrEqual(atPause);
    expect(await row.getAttribute('data-state')).toBe('paused');
    expect(await page.getByTestId('transfers-badge').count()).toBe(0);

    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await row.getByRole('button', { name: 'Resume pausable.bin' }).click();
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
    // Resumed from the parts the session kept: progress never went back below them.
    const afterResume = (await page.evaluate(() => (window as unknown as { pausableSeen: number[] }).pausableSeen)).slice(seenAtPause);
    expect(Math.min(...afterResume), `progress after resume: ${afterResume.join(', ')}`).toBeGreaterThanOrEqual(atPause);
    expect(afterResume.at(-1)).toBe(100);
    const notices = await page.evaluate(() => (window as unknown as { notices: { title: string; body: string }[] }).notices);
    expect(notices).toEqual([{ title: 'Upload finished', body: expect.stringMatching(/^pausable\.bin \(48\.0 MB\) in \d+/) }]);

    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'Videos/pausable.bin' }));
      const got = Buffer.from(await object.Body!.transformToByteArray());
      const expected = Buffer.alloc(size);
      for (let i = 0; i < size; i += 1024) expected[i] = (i / 1024) & 0xff;
      expect(got.length).toBe(size);
      expect(got.equals(expected)).toBe(true);
    } finally {
      client.destroy();
    }
    await page.screenshot({ path: join(RESULTS, 'e2e-transfers-paused-resumed.png') });
  });
});
