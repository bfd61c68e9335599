/**
 * spec 3, JSON webhook: the receivers Tributary posts to. A private address is refused unless
 * Settings → Network allows it (creation fails, a delivery is recorded as failed with the
 * reason), and a receiver's answer is read only up to a few KB: a receiver answering 200 MB
 * is cut off, so neither memory nor the socket carry it.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES } from '../../src-main/activity/webhooks';
import { SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import { freePort } from '../servers/util';
import { generated, makeHarness, until, type Harness } from './helpers';

const MB = 1 << 20;
let h: Harness | undefined;
let server: Server | undefined;
afterEach(async () => {
  await h?.close();
  if (server) await new Promise<void>((ok) => server!.close(() => ok()));
  h = undefined;
  server = undefined;
});

async function setup() {
  h = await makeHarness({ signingKey: () => 'key' });
  const acc = await h.app.accounts.connect({ service: 'memory', options: { store: `outbound-${Math.random()}` } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  return { h, acc, sub };
}

/** A receiver on 127.0.0.1 that answers the creation test with the application id and every notification with `notify`. */
async function receiver(appId: () => string, notify: (res: import('node:http').ServerResponse) => void) {
  const bodies: string[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      if (body === '{}') res.writeHead(200, { 'content-type': 'text/plain' }).end(appId());
      else notify(res);
    });
  });
  const port = await freePort();
  await new Promise<void>((ok) => server!.listen(port, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${port}/hook`, bodies };
}

describe('spec 3, JSON webhook: private receivers and large answers', () => {
  it('a receiver on a private address is refused by default: not created, and a delivery is recorded as failed with the reason', async () => {
    const { h, acc, sub } = await setup();
    const rx = await receiver(() => h.activity.webhooks.applicationId(), (res) => res.writeHead(200).end('ok'));
    await expect(h.activity.webhooks.create({ url: rx.url })).rejects.toMatchObject({ code: 'invalid_parameters', message: expect.stringMatching(/127\.0\.0\.1 is a loopback address/) });
    expect(h.activity.webhooks.list()).toEqual([]);
    expect(rx.bodies).toEqual([]);

    // Created while allowed; then the setting is switched off again.
    h.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
    const hook = await h.activity.webhooks.create({ url: rx.url });
    h.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, false);
    h.activity.log.append(sub.id, acc.id, generated(1));
    const attempt = await until(() => h.activity.webhooks.attempts(hook.id).find((a) => a.kind === 'notify'), 10_000, 'a delivery attempt');
    expect(attempt).toMatchObject({ ok: false, status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) });
    expect(rx.bodies).toEqual(['{}']); // only the creation test ever reached it
  });

  it('a receiver answering 200 MB is read only up to a few KB: it gets to write far less than 200 MB', async () => {
    const { h, acc, sub } = await setup();
    h.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
    const TOTAL = 200 * MB;
    const chunk = Buffer.alloc(256 * 1024, 'x');
    let written = 0;
    let finished: (n: number) => void;
    const done = new Promise<number>((r) => (finished = r));
    const rx = await receiver(
      () => h.activity.webhooks.applicationId(),
      (res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(TOTAL) });
        // Counts what the socket accepted until the client hung up (or all of it was sent).
        const pump = () => {
          while (written < TOTAL && !res.destroyed) {
            const ok = res.write(chunk, (err) => {
              if (!err) written += chunk.length;
            });
            if (!ok) return void res.once('drain', pump);
          }
          if (written >= TOTAL) res.end();
        };
        res.once('close', () => finished(written));
        pump();
      },
    );
    const hook = await h.activity.webhooks.create({ url: rx.url });
    const rssBefore = process.memoryUsage().rss;
    h.activity.log.append(sub.id, acc.id, generated(1));
    const attempt = await until(() => h.activity.webhooks.attempts(hook.id).find((a) => a.kind === 'notify'), 30_000, 'a delivery attempt');
    const sent = await done;
    const rssGrowth = process.memoryUsage().rss - rssBefore;
    console.log(`webhook answer of 200 MB: receiver wrote ${(sent / MB).toFixed(1)} MB before the socket closed; RSS grew ${(rssGrowth / MB).toFixed(1)} MB`);
    expect(attempt).toMatchObject({ ok: true, status: 200 });
    expect(MAX_ANSWER_BYTES).toBeLessThanOrEqual(64 * 1024);
    expect(sent).toBeLessThan(32 * MB); // socket buffers at most; all 200 MB without the cap
    expect(rssGrowth).toBeLessThan(48 * MB);
  }, 60_000);
});
