/**
 * spec 1, Paging wrappers, for the email lists of spec 2 against a real Dovecot: like every other
 * paged list, message lists and search carry `total`, take page numbers (`page=2`) besides their
 * `next_page` tokens, and a page past the end is 404 `not_found`; page 1 of an empty list is an
 * empty 200. Label and folder lists are one page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imapOptions, startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { isErrorBody, startRest, type CallResult, type RestServer } from './harness';

const ALL_TIME = 'after=1970-01-01T00:00:00Z&before=2100-01-01T00:00:00Z';

function expectNotFound(res: CallResult): void {
  expect(res.status, res.text).toBe(404);
  expect(isErrorBody(res.json, 404), res.text).toBe(true);
  expect(res.json.error_code).toBe('not_found');
}

describe('spec 1 paging on the spec 2 email lists (Dovecot)', () => {
  let s: RestServer;
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let alice: number;
  const v1 = (rest: string) => `/v1/accounts/${alice}/email/${rest}`;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    s = await startRest();
    alice = (await s.app.accounts.connect({ service: 'imap', options: imapOptions(dovecot, smtp) })).id;
    const raw = (n: number) =>
      ['From: Bob <bob@example.test>', 'To: alice@example.test', `Subject: Page ${n}`, `Message-ID: <page-${n}@example.test>`, `Date: ${new Date(Date.now() - n * 60_000).toUTCString()}`, '', `walnut ${n}`, ''].join('\r\n');
    for (const n of [1, 2, 3]) await dovecot.deliver(raw(n), ['alice']);
    const end = Date.now() + 20_000;
    for (;;) {
      const r = await s.call('GET', v1(`messages?${ALL_TIME}`));
      if (r.json?.objects?.length === 3) break;
      if (Date.now() > end) throw new Error(`three messages did not arrive: ${r.text}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    await smtp?.stop();
    await dovecot?.stop();
  });

  it('messages: total on every page, page numbers, and the page after the last is 404 not_found', async () => {
    const p1 = await s.call('GET', v1(`messages?${ALL_TIME}&page_size=2&page=1`));
    expect(p1.json).toMatchObject({ total: 3, count: 2, page: '1' });
    expect(p1.json.objects.map((o: any) => o.subject)).toEqual(['Page 1', 'Page 2']);
    const p2 = await s.call('GET', v1(`messages?${ALL_TIME}&page_size=2&page=2`));
    expect(p2.status, p2.text).toBe(200);
    expect(p2.json).toMatchObject({ total: 3, count: 1, page: '2', next_page: null });
    expect(p2.json.objects.map((o: any) => o.subject)).toEqual(['Page 3']);
    expectNotFound(await s.call('GET', v1(`messages?${ALL_TIME}&page_size=2&page=3`)));
    // A next_page token whose page has since emptied (here: a filter that leaves nothing after it).
    const token = p1.json.next_page as string;
    expectNotFound(await s.call('GET', v1(`messages?${ALL_TIME}&page_size=2&page=${encodeURIComponent(token)}&thread_id=${encodeURIComponent(p1.json.objects[0].thread_id)}`)));
    // A filter counts into total; page 1 of an empty list is an empty 200.
    const one = await s.call('GET', v1(`messages?${ALL_TIME}&thread_id=${encodeURIComponent(p1.json.objects[0].thread_id)}`));
    expect(one.json).toMatchObject({ total: 1, count: 1 });
    const none = await s.call('GET', v1('messages?before=2000-01-01T00:00:00Z'));
    expect(none.status).toBe(200);
    expect(none.json).toMatchObject({ total: 0, count: 0, page: '1', next_page: null, objects: [] });
  });

  it('search: total, page numbers, past the end 404', async () => {
    const p1 = await s.call('GET', v1('search?q=walnut&page_size=2'));
    expect(p1.json).toMatchObject({ total: 3, count: 2, page: '1' });
    const p2 = await s.call('GET', v1('search?q=walnut&page_size=2&page=2'));
    expect(p2.json).toMatchObject({ total: 3, count: 1, next_page: null });
    expectNotFound(await s.call('GET', v1('search?q=walnut&page_size=2&page=3')));
    const none = await s.call('GET', v1('search?q=nosuchword'));
    expect(none.json).toMatchObject({ total: 0, count: 0, objects: [] });
  });

  it('labels and folders are one page: total, and page 2 is 404', async () => {
    const folders = await s.call('GET', v1('folders'));
    expect(folders.json.total).toBe(folders.json.objects.length);
    expect(folders.json.total).toBeGreaterThan(0);
    expectNotFound(await s.call('GET', v1('folders?page=2')));
    const labels = await s.call('GET', v1('labels?page=1'));
    expect(labels.status).toBe(200);
    expect(labels.json.total).toBe(labels.json.objects.length);
    expectNotFound(await s.call('GET', v1('labels?page=2')));
  });
});
