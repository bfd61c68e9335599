/**
 * spec 2 (Email API v1) over REST, against a real Dovecot (IMAP + LMTP) and an SMTP relay that
 * delivers into it: every email route, ephemeral attachments round-tripped byte for byte through
 * the storage download route, labels, folders, parameter errors, the public tracking endpoints,
 * and the split between email and storage accounts. Responses are normalised (ids, timestamps)
 * and compared with their documented shapes, golden style.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restServices } from '../../src-main/rest';
import { PIXEL } from '../../src-main/mail/tracking';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { Normaliser } from './golden';
import { importLocal, isErrorBody, startRest, type CallResult, type RestServer } from './harness';

const ALL_TIME = 'after=1970-01-01T00:00:00Z&before=2100-01-01T00:00:00Z';

const MESSAGE_KEYS = ['api', 'attachments', 'bcc', 'body', 'cc', 'created', 'folder_id', 'from', 'id', 'labels', 'raw', 'rfc822', 'snippet', 'subject', 'text_body', 'thread_id', 'to', 'type'];

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

function expectError(res: CallResult, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(isErrorBody(res.json, status), res.text).toBe(true);
  expect(res.json.error_code).toBe(code);
}

describe('REST email API v1 on Dovecot + SMTP relay (spec 2)', () => {
  let s: RestServer;
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let alice: number;
  let bob: number;
  let aliceToken: string;
  let local: number;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret', bob: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    s = await startRest();
    s.app.settings.set('mail.trackingBaseUrl', s.url);
    const options = (user: string) => ({
      host: dovecot.host,
      port: dovecot.imapPort,
      tls: 'none',
      user,
      password: dovecot.users[user],
      email: `${user}@example.test`,
      smtp_host: smtp.host,
      smtp_port: smtp.port,
      smtp_tls: 'none',
    });
    alice = (await s.app.accounts.connect({ service: 'imap', options: options('alice') })).id;
    bob = (await s.app.accounts.connect({ service: 'imap', options: options('bob') })).id;
    aliceToken = restServices(s.app).apiKeys.bearerToken(alice);
    local = (await importLocal(s, 'plain-files')).id;
    const raw = (n: number) =>
      [`From: Bob <bob@example.test>`, `To: alice@example.test`, `Subject: Greeting ${n}`, `Message-ID: <greet-${n}@example.test>`, `Date: ${new Date(Date.now() - (4 - n) * 60_000).toUTCString()}`, '', `hello zebra${n} quartz`, ''].join('\r\n');
    for (const n of [1, 2, 3]) await dovecot.deliver(raw(n), ['alice']);
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    await smtp?.stop();
    await dovecot?.stop();
  });

  const v1 = (account: number, rest: string) => `/v1/accounts/${account}/email/${rest}`;

  // spec 2, Messages: List messages (and the list wrapper). `created` is the message's Date
  // header (arrival time when it has none): 1, 2, 3 were written a minute apart, so 3 is the newest.
  it('lists messages newest first, pages with next_page, and has the documented shapes', async () => {
    const first = await until('three messages', async () => {
      const r = await s.call('GET', v1(alice, `messages/?${ALL_TIME}&page_size=2`));
      expect(r.status, r.text).toBe(200);
      return r.json.objects.length === 2 && r.json.next_page ? r : undefined;
    });
    const n = new Normaliser();
    expect(Object.keys(first.json).sort()).toEqual(['api', 'count', 'next_page', 'objects', 'page', 'total', 'type']);
    expect({ ...first.json, objects: undefined, next_page: typeof first.json.next_page }).toEqual({ api: 'email', type: 'object_list', total: 3, count: 2, page: '1', next_page: 'string', objects: undefined });
    const m = first.json.objects[0];
    expect(Object.keys(m).sort()).toEqual(MESSAGE_KEYS);
    expect(n.value({ type: m.type, api: m.api, subject: m.subject, from: m.from, to: m.to, created: m.created, labels: m.labels })).toEqual({
      type: 'message',
      api: 'email',
      subject: 'Greeting 3',
      from: { email: 'bob@example.test', name: 'Bob', type: 'person', api: 'email' },
      to: [{ email: 'alice@example.test', name: null, type: 'person', api: 'email' }],
      created: '<timestamp>',
      labels: [],
    });
    expect(m.rfc822).toMatchObject({ type: 'file', api: 'storage', mime_type: 'message/rfc822', name: 'raw_content.rfc822' });
    expect(m.rfc822.href).toBe(`${s.url}/v1/accounts/${alice}/storage/files/${encodeURIComponent(m.rfc822.id)}`);
    expect(first.json.objects[1].subject).toBe('Greeting 2');
    // `page=1` is the first page, as clients of this API family send it.
    const pageOne = await s.call('GET', v1(alice, `messages?${ALL_TIME}&page_size=2&page=1`));
    expect(pageOne.json.objects.map((o: any) => o.id)).toEqual(first.json.objects.map((o: any) => o.id));
    const second = await s.call('GET', v1(alice, `messages?${ALL_TIME}&page_size=2&page=${encodeURIComponent(first.json.next_page)}`));
    expect(second.status).toBe(200);
    expect(second.json.objects.map((o: any) => o.subject)).toEqual(['Greeting 1']);
    expect(second.json.next_page).toBeNull();
    // The rfc822 href is a working storage file.
    const rawFile = await s.call('GET', `/v1/accounts/${alice}/storage/files/${encodeURIComponent(m.rfc822.id)}/contents`);
    expect(rawFile.status).toBe(200);
    expect(rawFile.text).toContain('Subject: Greeting 3');
  });

  // spec 2, Messages: default time window (three days before `before`)
  it('applies after/before and thread_id filters', async () => {
    const none = await s.call('GET', v1(alice, 'messages?before=2000-01-01T00:00:00Z'));
    expect(none.status).toBe(200);
    expect(none.json.objects).toEqual([]);
    const recent = await s.call('GET', v1(alice, 'messages'));
    expect(recent.json.objects.length).toBe(3);
    const thread = recent.json.objects[1].thread_id;
    const byThread = await s.call('GET', v1(alice, `messages?${ALL_TIME}&thread_id=${encodeURIComponent(thread)}`));
    expect(byThread.json.objects.map((o: any) => o.thread_id)).toEqual([thread]);
  });

  // spec 2, Search (answered from the local index, also for IMAP)
  it('searches from the local index', async () => {
    const r = await s.call('GET', v1(alice, 'search?q=zebra2'));
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ type: 'object_list', api: 'email', count: 1, page: '1', next_page: null });
    expect(r.json.objects[0].subject).toBe('Greeting 2');
    const paged = await s.call('GET', v1(alice, 'search?q=quartz&page_size=2'));
    expect(paged.json.objects.length).toBe(2);
    const rest = await s.call('GET', v1(alice, `search?q=quartz&page_size=2&page=${paged.json.next_page}`));
    expect(rest.json.objects.length).toBe(1);
    expect(rest.json.next_page).toBeNull();
  });

  // spec 2, Messages: Retrieve, Update a message; Labels
  it('retrieves a message, labels it, filters by label, renames and deletes the label', async () => {
    const list = await s.call('GET', v1(alice, `messages?${ALL_TIME}`));
    const target = list.json.objects.find((o: any) => o.subject === 'Greeting 3');
    const got = await s.call('GET', v1(alice, `messages/${encodeURIComponent(target.id)}`));
    expect(got.status).toBe(200);
    expect(got.json.id).toBe(target.id);
    expect(got.json.text_body).toContain('hello zebra3 quartz');
    expect(got.json.body).toContain('<pre>');

    const created = await s.call('POST', v1(alice, 'labels'), { body: { name: 'urgent' } });
    expect(created.status, created.text).toBe(201);
    expect(new Normaliser().value(created.json)).toEqual({ id: '<id 1>', name: 'urgent', type: 'label', api: 'email' });
    expectError(await s.call('POST', v1(alice, 'labels'), { body: { name: 'urgent' } }), 409, 'naming_conflict');
    expectError(await s.call('POST', v1(alice, 'labels'), { body: { name: 'two words' } }), 400, 'invalid_parameters');
    const labels = await s.call('GET', v1(alice, 'labels'));
    expect(labels.json).toMatchObject({ type: 'object_list', api: 'email', next_page: null });
    expect(labels.json.objects).toContainEqual(created.json);
    expect((await s.call('GET', v1(alice, `labels/${created.json.id}`))).json).toEqual(created.json);

    const patched = await s.call('PATCH', v1(alice, `messages/${encodeURIComponent(target.id)}`), { body: { label_names: ['urgent'] } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.labels.map((l: any) => l.name)).toEqual(['urgent']);
    expectError(await s.call('PATCH', v1(alice, `messages/${encodeURIComponent(target.id)}`), { body: { label_names: 'urgent' } }), 400, 'invalid_parameters');
    const tagged = await s.call('GET', v1(alice, `messages?${ALL_TIME}&labels=urgent`));
    expect(tagged.json.objects.map((o: any) => o.id)).toEqual([target.id]);
    const both = await s.call('GET', v1(alice, `messages?${ALL_TIME}&labels=urgent&labels=other`));
    expect(both.json.objects).toEqual([]);

    const renamed = await s.call('PATCH', v1(alice, `labels/${created.json.id}`), { body: { name: 'important' } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json.name).toBe('important');
    expect((await s.call('GET', v1(alice, `messages/${encodeURIComponent(target.id)}`))).json.labels.map((l: any) => l.name)).toEqual(['important']);
    const del = await s.call('DELETE', v1(alice, `labels/${renamed.json.id}`));
    expect(del.status).toBe(204);
    expectError(await s.call('GET', v1(alice, `labels/${renamed.json.id}`)), 404, 'not_found');
    expect((await s.call('GET', v1(alice, `messages/${encodeURIComponent(target.id)}`))).json.labels).toEqual([]);
    expectError(await s.call('GET', v1(alice, 'messages/not-a-message-id')), 404, 'not_found');
  });

  // spec 2, Folders
  it('creates, lists, renames and deletes folders', async () => {
    const list = await s.call('GET', v1(alice, 'folders'));
    expect(list.status).toBe(200);
    expect(list.json.objects.map((f: any) => f.name)).toContain('INBOX');
    const inbox = list.json.objects.find((f: any) => f.name === 'INBOX');
    expect(new Normaliser().value(inbox)).toEqual({ id: '<id 1>', name: 'INBOX', type: 'folder', api: 'email' });
    const inInbox = await s.call('GET', v1(alice, `messages?${ALL_TIME}&folder_id=${encodeURIComponent(inbox.id)}`));
    expect(inInbox.json.objects.every((m: any) => m.folder_id === inbox.id)).toBe(true);
    expect(inInbox.json.objects.length).toBeGreaterThanOrEqual(3);

    const created = await s.call('POST', v1(alice, 'folders'), { body: { name: 'Projects' } });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ name: 'Projects', type: 'folder', api: 'email' });
    expectError(await s.call('POST', v1(alice, 'folders'), { body: { name: 'Projects' } }), 409, 'naming_conflict');
    expectError(await s.call('POST', v1(alice, 'folders'), { body: {} }), 400, 'invalid_parameters');
    // Names Dovecot itself refuses ('/', adjacent hierarchy separators, too long) are the
    // caller's error, with the server's reason, not an upstream failure.
    for (const [name, reason] of [['a/b', "must not have '/'"], ['x..y', 'adjacent hierarchy'], ['n'.repeat(600), 'too long']]) {
      const r = await s.call('POST', v1(alice, 'folders'), { body: { name } });
      expectError(r, 400, 'invalid_parameters');
      expect(r.json.message).toContain(reason);
    }
    expect((await s.call('GET', v1(alice, `folders/${encodeURIComponent(created.json.id)}`))).json).toEqual(created.json);
    const renamed = await s.call('PATCH', v1(alice, `folders/${encodeURIComponent(created.json.id)}`), { body: { name: 'Projects2' } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json.name).toBe('Projects2');
    expectError(await s.call('GET', v1(alice, `folders/${encodeURIComponent(created.json.id)}`)), 404, 'not_found');
    expect((await s.call('DELETE', v1(alice, `folders/${encodeURIComponent(renamed.json.id)}`))).status).toBe(204);
    expectError(await s.call('GET', v1(alice, `folders/${encodeURIComponent(renamed.json.id)}`)), 404, 'not_found');
    expectError(await s.call('DELETE', v1(alice, `folders/${encodeURIComponent(inbox.id)}`)), 400, 'invalid_parameters');
  });

  // spec 2, Send: attachments are ephemeral storage uploads (spec 1, Upload a file)
  it('sends with an ephemeral attachment that arrives byte-identical in the INBOX', async () => {
    const bytes = randomBytes(50_000);
    const up = await s.call('POST', `/v1/accounts/${alice}/storage/files/`, {
      headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'ephemeral', name: 'data.bin' }), 'content-type': 'application/octet-stream' },
      raw: bytes,
    });
    expect(up.status, up.text).toBe(201);
    const sent = await s.call('POST', v1(alice, 'messages/send'), {
      auth: `Bearer ${aliceToken}`,
      body: { to: [{ email: 'bob@example.test', name: 'Bob' }], subject: 'With attachment', text_body: 'see attached', attachments: [{ id: up.json.id }] },
    });
    expect(sent.status, sent.text).toBe(201);
    expect(Object.keys(sent.json).sort()).toEqual(MESSAGE_KEYS);
    expect(sent.json).toMatchObject({ subject: 'With attachment', type: 'message', api: 'email', to: [{ email: 'bob@example.test', name: 'Bob', type: 'person', api: 'email' }] });
    expect(sent.json.attachments).toHaveLength(1);
    expect(sent.json.attachments[0]).toMatchObject({ name: 'data.bin', type: 'file', api: 'storage' });

    const received = await until('the message in bob’s INBOX', async () => {
      const r = await s.call('GET', v1(bob, `messages?${ALL_TIME}`));
      return r.json.objects.find((o: any) => o.subject === 'With attachment');
    });
    const full = await s.call('GET', v1(bob, `messages/${encodeURIComponent(received.id)}`));
    const att = full.json.attachments[0];
    expect(att).toMatchObject({ name: 'data.bin', size: bytes.length, type: 'file', api: 'storage' });
    expect(att.href).toBe(`${s.url}/v1/accounts/${bob}/storage/files/${encodeURIComponent(att.id)}`);
    const meta = await s.call('GET', new URL(att.href).pathname);
    expect(meta.status, meta.text).toBe(200);
    expect(meta.json).toMatchObject({ id: att.id, name: 'data.bin', type: 'file' });
    const dl = await s.call('GET', `${new URL(att.href).pathname}/contents`);
    expect(dl.status).toBe(200);
    expect(dl.buffer.equals(bytes)).toBe(true);
    // Over SMTP: exactly one delivery to bob, no Bcc in sight.
    expect(smtp.received.filter((m) => m.to.includes('bob@example.test')).length).toBeGreaterThanOrEqual(1);
  });

  // spec 2, Email activity; spec 3, Activity list (mail accounts monitor INBOX by default)
  it('lists new mail as `add` activity of a mail account subscription, in v1 and v2', async () => {
    const sub = await s.call('POST', `/v2/accounts/${bob}/subscriptions`, { body: { active: true } });
    expect(sub.status, sub.text).toBe(201);
    expect(sub.json).toMatchObject({ monitored_resources: [{ resource: 'INBOX' }], monitored_resource_api: 'email', subscription_type: 'changes' });
    const start = (await s.call('GET', `/v2/accounts/${bob}/subscriptions/default/activity`)).json.cursor;
    const raw = ['From: alice@example.test', 'To: bob@example.test', 'Subject: Watched', 'Message-ID: <watched@example.test>', '', 'new mail', ''].join('\r\n');
    await dovecot.deliver(raw, ['bob']);
    const q = start ? `?cursor=${encodeURIComponent(start)}` : '';
    const v2 = await until('mail activity', async () => {
      const r = await s.call('GET', `/v2/accounts/${bob}/subscriptions/default/activity${q}`);
      expect(r.status, r.text).toBe(200);
      return r.json.objects.some((o: any) => o.target?.name === 'Watched') ? r : undefined;
    });
    const add = v2.json.objects.find((o: any) => o.target?.name === 'Watched');
    expect(add).toMatchObject({ type: 'activity', api: 'activity', event_category: 'email', event_type: 'add', target: { type: 'message', api: 'email' } });
    // The activity's message id is the email API's id of that message.
    const msg = await s.call('GET', v1(bob, `messages/${encodeURIComponent(add.target.id)}`));
    expect(msg.status, msg.text).toBe(200);
    expect(msg.json.subject).toBe('Watched');
    const v1Page = await s.call('GET', `/v1/accounts/${bob}/subscriptions/${sub.json.id}/activity${q}`);
    expect(v1Page.json.objects.find((o: any) => o.metadata?.name === 'Watched')).toMatchObject({ type: 'add', subscription: sub.json.id, metadata: { type: 'message', api: 'email' } });
  });

  // spec 2, Send; Errors (documented in docs/rest.md)
  it('answers invalid_parameters for bad parameters and bodies', async () => {
    for (const q of ['page_size=0', 'page_size=1001', 'page_size=abc', 'after=yesterday', 'before=2024-13-45', 'page=not-a-page']) {
      expectError(await s.call('GET', v1(alice, `messages?${q}`)), 400, 'invalid_parameters');
    }
    expectError(await s.call('GET', v1(alice, 'search')), 400, 'invalid_parameters');
    expectError(await s.call('GET', v1(alice, 'search?q=x&page_size=1001')), 400, 'invalid_parameters');
    expectError(await s.call('POST', v1(alice, 'messages/send'), { body: { subject: 'no recipient' } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', v1(alice, 'messages/send'), { body: { to: [{ email: 'not an address' }], subject: 'x' } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', v1(alice, 'messages/send'), { body: { to: [{ email: 'bob@example.test' }], subject: 'x', attachments: [{ id: 'nope' }] } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', v1(alice, 'messages/send'), { body: { to: [{ email: 'bob@example.test' }], subject: 'x', attachments: 'x' } }), 400, 'invalid_parameters');
    expectError(await s.call('POST', v1(alice, 'messages/send'), { raw: '{not json' }), 400, 'bad_request');
    // A refused send leaves its ephemeral attachment in place for the corrected retry.
    const up = await s.call('POST', `/v1/accounts/${alice}/storage/files`, { headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'ephemeral', name: 'keep.txt' }) }, raw: 'keep me' });
    expect(up.status).toBe(201);
    expectError(await s.call('POST', v1(alice, 'messages/send'), { body: { to: [], subject: 'x', attachments: [{ id: up.json.id }] } }), 400, 'invalid_parameters');
    const kept = await s.call('GET', `/v1/accounts/${alice}/storage/files/${encodeURIComponent(up.json.id)}/contents`);
    expect(kept.status).toBe(200);
    expect(kept.text).toBe('keep me');
  });

  // spec 1, Authentication; spec 2 is v1 only
  it('scopes bearer tokens, serves v1 only, and separates mail from storage accounts', async () => {
    expectError(await s.call('GET', v1(bob, 'labels'), { auth: `Bearer ${aliceToken}` }), 403, 'forbidden');
    const me = await s.call('GET', '/v1/accounts/me/email/labels', { auth: `Bearer ${aliceToken}` });
    expect(me.status).toBe(200);
    expectError(await s.call('GET', v1(alice, 'labels'), { auth: null }), 401, 'unauthorized');
    expectError(await s.call('GET', `/v2/accounts/${alice}/email/labels`), 404, 'not_found');
    expectError(await s.call('DELETE', v1(alice, 'search')), 405, 'method_not_allowed');
    // Email routes on a storage account, storage routes on a mail account: 501.
    expectError(await s.call('GET', v1(local, 'messages')), 501, 'not_implemented');
    expectError(await s.call('GET', v1(local, 'folders')), 501, 'not_implemented');
    expectError(await s.call('GET', `/v1/accounts/${alice}/storage/folders/root/contents`), 501, 'not_implemented');
  });

  // spec 2, Send `tracking`; public tracking endpoints
  it('tracks opens (always the pixel) and clicks (302 only to the signed target, 404 otherwise)', async () => {
    // spec 2, Send: tracking.subscription_id names an `analytics` subscription (spec 3).
    const analytics = await s.call('POST', `/v1/accounts/${alice}/subscriptions`, { body: { subscription_type: 'analytics' } });
    expect(analytics.status, analytics.text).toBe(201);
    const send = (tracking: unknown) =>
      s.call('POST', v1(alice, 'messages/send'), {
        body: { to: [{ email: 'bob@example.test' }], subject: 'Tracked', body: '<p>Read <a href="https://example.com/page?x=1">this</a></p>', tracking },
      });
    expectError(await send({ opens: true, subscription_id: 999_999 }), 400, 'invalid_parameters');
    expectError(await send({ opens: 'yes' }), 400, 'invalid_parameters');
    expectError(await send([true]), 400, 'invalid_parameters');
    const tracked: { kind: string; subscriptionId: string | null; url: string | null }[] = [];
    const off = s.app.events.on('mail.tracked', (e) => tracked.push(e));
    // The spec's subscription ids are integers: sent as a number, carried as its id string.
    const sent = await send({ opens: true, clicks: true, subscription_id: analytics.json.id });
    expect(sent.status, sent.text).toBe(201);
    const html: string = sent.json.body;
    const open = /\/t\/o\/([A-Za-z0-9_.-]+)/.exec(html)?.[1];
    const click = /\/t\/c\/([A-Za-z0-9_.-]+)/.exec(html)?.[1];
    expect(open && click, html).toBeTruthy();
    expect(html).toContain(`${s.url}/t/c/`);

    const pixel = await s.call('GET', `/t/o/${open}`, { auth: null });
    expect(pixel.status).toBe(200);
    expect(pixel.headers['content-type']).toBe('image/gif');
    expect(pixel.buffer.equals(PIXEL)).toBe(true);
    const junkPixel = await s.call('GET', '/t/o/forged.token', { auth: null });
    expect(junkPixel.status).toBe(200);
    expect(junkPixel.buffer.equals(PIXEL)).toBe(true);

    const go = await s.call('GET', `/t/c/${click}`, { auth: null });
    expect(go.status).toBe(302);
    expect(go.headers.location).toBe('https://example.com/page?x=1');
    // A forged payload with the real signature, a truncated token, an open token, garbage: 404, no Location.
    const [, mac] = click!.split('.');
    const forged = `${Buffer.from(JSON.stringify({ a: alice, m: '<x@y>', k: 'c', u: 'https://evil.example/' })).toString('base64url')}.${mac}`;
    for (const bad of [forged, click!.slice(0, -2), open!, 'garbage']) {
      const r = await s.call('GET', `/t/c/${bad}`, { auth: null });
      expectError(r, 404, 'not_found');
      expect(r.headers.location).toBeUndefined();
    }
    off();
    const head = await s.call('HEAD', `/t/o/${open}`, { auth: null });
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('image/gif');
    expectError(await s.call('GET', '/t/c/', { auth: null }), 404, 'not_found');
    // One open and one click were recorded, for the analytics subscription; forgeries recorded nothing.
    expect(tracked.map((e) => [e.kind, e.subscriptionId, e.url])).toEqual([
      ['email_open', String(analytics.json.id), null],
      ['email_click', String(analytics.json.id), 'https://example.com/page?x=1'],
    ]);
    // ...and they are activity of that subscription (spec 3: email_open / email_click, the
    // click with a Hyperlink object carrying the link and its text).
    const activity = await s.call('GET', `/v2/accounts/${alice}/subscriptions/${analytics.json.id}/activity`);
    expect(activity.status, activity.text).toBe(200);
    const events = (activity.json.objects as Record<string, any>[]).map((a) => [a.event_category, a.event_type, a.event_subtype, a.metadata]);
    expect(events).toEqual([
      ['email', 'access', 'email_open', null],
      ['email', 'access', 'email_click', [{ tag: '<a href="https://example.com/page?x=1">', link: 'https://example.com/page?x=1', text: 'this', type: 'hyperlink', api: 'email' }]],
    ]);
  });

  // spec 2, Send `tracking`: opens and clicks are activity of the account's `analytics`
  // subscription, also when the send names none.
  it('a tracked send without subscription_id records on the account\'s analytics subscription', async () => {
    const subs = await s.call('GET', `/v1/accounts/${alice}/subscriptions`);
    let analytics = (subs.json.objects as { id: number; subscription_type: string }[]).find((x) => x.subscription_type === 'analytics');
    if (!analytics) analytics = (await s.call('POST', `/v1/accounts/${alice}/subscriptions`, { body: { subscription_type: 'analytics' } })).json;
    const before = await s.call('GET', `/v2/accounts/${alice}/subscriptions/${analytics!.id}/activity`);
    // Booleans in bodies read as in the query: "True" is true (docs/rest.md, Booleans).
    const sent = await s.call('POST', v1(alice, 'messages/send'), { body: { to: [{ email: 'bob@example.test' }], subject: 'Tracked, no subscription named', body: '<p>Hi</p>', tracking: { opens: 'True' } } });
    expect(sent.status, sent.text).toBe(201);
    const open = /\/t\/o\/([A-Za-z0-9_.-]+)/.exec(sent.json.body as string)?.[1];
    expect((await s.call('GET', `/t/o/${open}`, { auth: null })).status).toBe(200);
    const after = await s.call('GET', `/v2/accounts/${alice}/subscriptions/${analytics!.id}/activity?cursor=${encodeURIComponent(before.json.cursor)}`);
    expect((after.json.objects as { event_subtype: string }[]).map((a) => a.event_subtype)).toEqual(['email_open']);
  });
});
