/**
 * Shared links (`/l/{token}`, spec 1 "Links"): a shared file's content never runs on the UI's
 * origin, and a link's password cannot be guessed quickly nor stall the server.
 */
import { execFileSync } from 'node:child_process';
import { constants, openSync, closeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD_TRIES } from '../../src-main/services/links';
import { importMemory, startRest, type RestServer } from './harness';

let s: RestServer;
let account = 0;

async function upload(name: string, body: string): Promise<string> {
  const r = await s.call('POST', `/v2/accounts/${account}/storage/files`, { raw: body, headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name }) } });
  expect(r.status).toBe(201);
  return r.json.id;
}

async function share(fileId: string, options: Record<string, unknown> = {}): Promise<string> {
  const r = await s.call('POST', `/v1/accounts/${account}/storage/links`, { body: { file_id: fileId, ...options } });
  expect(r.status).toBe(201);
  return new URL(r.json.url).pathname;
}

beforeAll(async () => {
  s = await startRest();
  account = (await importMemory(s, `links-${Date.now()}`)).id;
});
afterAll(async () => {
  await s?.stop();
});

describe('link content never runs on the UI origin (spec 1, Links: direct links)', () => {
  const html = '<!doctype html><script>fetch("/ws?token=" + sessionStorage.getItem("tributary.token"))</script><h1>hi</h1>';
  const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script><rect width="10" height="10"/></svg>';

  for (const [name, body, type] of [
    ['page.html', html, 'text/html'],
    ['logo.svg', svg, 'image/svg+xml'],
    ['feed.xml', '<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>', 'xml'],
    ['app.js', 'alert(1)', 'javascript'],
  ] as const) {
    it(`a direct link to ${name} is a sandboxed attachment, never rendered inline`, async () => {
      const path = await share(await upload(name, body), { direct: true });
      const r = await s.call('GET', path, { auth: null });
      expect(r.status).toBe(200);
      expect(r.text).toBe(body);
      expect(String(r.headers['content-type'])).toContain(type);
      expect(r.headers['content-disposition']).toMatch(/^attachment;/);
      expect(r.headers['content-security-policy']).toMatch(/^sandbox\b/);
      expect(r.headers['content-security-policy']).toContain("default-src 'none'");
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      // The download page variant (non-direct link, ?download=1) too.
      const page = await share(await upload(`p-${name}`, body));
      const d = await s.call('GET', `${page}?download=1`, { auth: null });
      expect(d.headers['content-disposition']).toMatch(/^attachment;/);
      expect(d.headers['content-security-policy']).toMatch(/^sandbox\b/);
      expect(d.headers['x-content-type-options']).toBe('nosniff');
    });
  }

  it('a direct link to a passive type (PNG, plain text) is shown inline, still sandboxed', async () => {
    for (const name of ['pic.png', 'notes.txt']) {
      const r = await s.call('GET', await share(await upload(name, 'x'), { direct: true }), { auth: null });
      expect(r.headers['content-disposition'], name).toMatch(/^inline;/);
      expect(r.headers['content-security-policy']).toMatch(/^sandbox\b/);
      expect(r.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('the download page of a link is sandboxed too', async () => {
    const r = await s.call('GET', await share(await upload('q.html', html)), { auth: null });
    expect(r.headers['content-type']).toContain('text/html');
    expect(r.text).not.toContain('<script');
    expect(r.headers['content-security-policy']).toMatch(/^sandbox\b/);
  });
});

/**
 * Holds every thread of libuv's pool in open() of a FIFO that has no writer yet: work that runs
 * in the pool (scrypt) cannot finish until the returned function releases them; work on the
 * main thread still can.
 */
function holdPool(label: string): () => Promise<void> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const fifos = Array.from({ length: threads }, (_, i) => join(s.dir, `hold-${label}-${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const held: Promise<FileHandle>[] = fifos.map((f) => open(f, 'r'));
  return async () => {
    for (const f of fifos) {
      // ENXIO: that reader has not reached open() yet (its thread is still busy); try again.
      for (;;) {
        try {
          closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENXIO') throw e;
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }
    await Promise.all(held.map(async (h) => (await h).close()));
  };
}

describe('link passwords (spec 1, Links: password)', () => {
  it(`after ${PASSWORD_TRIES} wrong passwords the link answers 429 too_many_requests with Retry-After, even to the right one`, async () => {
    const path = await share(await upload('secret.txt', 'top secret'), { password: 'right-password', direct: true });
    expect((await s.call('GET', `${path}?password=right-password`, { auth: null })).text).toBe('top secret');
    for (let i = 0; i < PASSWORD_TRIES; i++) {
      const r = await s.call('GET', `${path}?password=wrong-${i}`, { auth: null });
      expect(r.status).toBe(403);
    }
    const limited = await s.call('GET', `${path}?password=wrong-again`, { auth: null });
    expect(limited.status).toBe(429);
    expect(limited.json).toMatchObject({ status_code: 429, error_code: 'too_many_requests' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await s.call('GET', `${path}?password=right-password`, { auth: null })).status).toBe(429);
    // Another link is not affected.
    const other = await share(await upload('other.txt', 'other'), { password: 'pw-2', direct: true });
    expect((await s.call('GET', `${other}?password=pw-2`, { auth: null })).status).toBe(200);
  });

  it('the password hash runs off the main thread: with every libuv pool thread held, the check waits and other requests are answered', async () => {
    const path = await share(await upload('held.txt', 'held'), { password: 'pw', direct: true });
    const release = holdPool('a');
    let answered = false;
    const guess = s.call('GET', `${path}?password=pw`, { auth: null }).then((r) => ((answered = true), r));
    // Other callers are served meanwhile (a full REST call, auth and database included)...
    for (let i = 0; i < 3; i++) expect((await s.call('GET', '/v2/accounts')).status).toBe(200);
    // ...while the password's answer cannot come before the pool is free again.
    expect(answered).toBe(false);
    await release();
    const r = await guess;
    expect(r.status).toBe(200);
    expect(r.text).toBe('held');

    // Once given right, the password is remembered for a while: fetching the link again runs
    // no scrypt, so it is answered even while the pool is held.
    const releaseAgain = holdPool('b');
    const again = await s.call('GET', `${path}?password=pw`, { auth: null });
    expect(again.status).toBe(200);
    await releaseAgain();
  });
});
