/**
 * Messages whose structure the IMAP client or the MIME parser refuses, against a real Dovecot.
 * Spec 2, "List messages" (every message of the mailbox is listed), "Retrieve a message" (a
 * message answers with what is known of it), "Search" (the text of prefetched bodies is
 * searchable).
 *
 * - A body nested 22 multiparts deep: the FETCH answer that carries its BODYSTRUCTURE is deeper
 *   than the IMAP response parser goes. The message is still listed and opens, and the count
 *   check agrees with the server afterwards (no UID SEARCH, nothing left stale for the next pass).
 * - A message of 1,001 MIME parts, which mailparser refuses: the bodies of the other messages are
 *   still prefetched, a REST list page with bodies answers 200, and the message itself answers
 *   with its headers and a note saying why its text is missing.
 */
import { ImapFlow } from 'imapflow';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startRest, type RestServer } from '../rest/harness';
import { imapOptions, startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir } from '../servers/util';

const all = { after: '1970-01-01T00:00:00Z', before: '2100-01-01T00:00:00Z' };
const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const date = (minute: number) => new Date(Date.UTC(2026, 2, 2, 0, minute)).toUTCString();

const plain = (subject: string, text: string, minute: number) =>
  crlf(`From: Sender <s@example.test>\nTo: alice@example.test\nDate: ${date(minute)}\nSubject: ${subject}\nMIME-Version: 1.0\nContent-Type: text/plain\n\n${text}\n`);

/** `depth` multipart/mixed parts, each inside the one before, around one text part. */
function nested(subject: string, depth: number, minute: number): Buffer {
  let body = 'Content-Type: text/plain\n\ninner leaf text\n';
  for (let i = depth; i > 0; i--) body = `Content-Type: multipart/mixed; boundary="b${i}"\n\n--b${i}\n${body}\n--b${i}--\n`;
  return crlf(`From: Sender <s@example.test>\nTo: alice@example.test\nDate: ${date(minute)}\nSubject: ${subject}\nMIME-Version: 1.0\n${body}`);
}

/** A multipart/mixed message of `parts` small attachments. */
function manyParts(subject: string, parts: number, minute: number): Buffer {
  const body = Array.from({ length: parts }, (_, i) => `--Q\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="f${i}.bin"\n\nx${i}\n`).join('');
  return crlf(`From: Sender <s@example.test>\nTo: alice@example.test\nDate: ${date(minute)}\nSubject: ${subject}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="Q"\n\n${body}--Q--\n`);
}

describe('a message nested deeper than the IMAP parser goes is synced and opens (spec 2, List messages; Retrieve a message)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let app: App;
  let dataDir: string;
  let alice: number;
  const subjects = async () => (await app.mail.messages.list(alice, { ...all, page_size: 1000, bodies: false })).objects;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dataDir = scratchDir('unusual-nested');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { live: false, prefetchBodies: 0 } });
    alice = (await app.accounts.connect({ service: 'imap', options: imapOptions(dovecot, smtp) })).id;
  }, 60_000);

  afterEach(() => vi.restoreAllMocks());

  afterAll(async () => {
    await app?.close();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('the first sync lists it among the others, and it opens with its text', async () => {
    await dovecot.deliver(plain('before the deep one', 'first', 1), ['alice']);
    await dovecot.deliver(nested('twenty-two deep', 22, 2), ['alice']);
    await dovecot.deliver(plain('after the deep one', 'last', 3), ['alice']);
    await app.mail.sync(alice);
    const list = await subjects();
    expect(list.map((m) => m.subject).sort()).toEqual(['after the deep one', 'before the deep one', 'twenty-two deep']);
    const deep = list.find((m) => m.subject === 'twenty-two deep')!;
    expect(deep.created).toBe(new Date(date(2)).toISOString());
    const opened = await app.mail.messages.get(alice, deep.id);
    expect(opened.textBody).toContain('inner leaf text');
    expect(opened.attachments).toEqual([]);
  });

  it('the next sync and the pass over every folder find the cache complete: no UID SEARCH, nothing stale', async () => {
    const search = vi.spyOn(ImapFlow.prototype, 'search');
    await app.mail.sync(alice);
    expect(await app.mail.refresh(alice)).toEqual([]);
    expect(search).not.toHaveBeenCalled();
  });

  it('new mail nested deep arrives by an incremental sync, and the one after is quiet again', async () => {
    await dovecot.deliver(nested('thirty deep', 30, 4), ['alice']);
    await dovecot.deliver(plain('after thirty', 'x', 5), ['alice']);
    await app.mail.sync(alice);
    expect((await subjects()).map((m) => m.subject)).toEqual(expect.arrayContaining(['thirty deep', 'after thirty']));
    expect(await app.mail.messages.get(alice, (await subjects()).find((m) => m.subject === 'thirty deep')!.id)).toMatchObject({ textBody: expect.stringContaining('inner leaf text') });
    const search = vi.spyOn(ImapFlow.prototype, 'search');
    await app.mail.sync(alice);
    expect(await app.mail.refresh(alice)).toEqual([]);
    expect(search).not.toHaveBeenCalled();
  });
});

describe('a message the MIME parser refuses costs no other message its body (spec 2, Search; List messages; Retrieve a message)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let s: RestServer;
  let alice: number;
  const NORMAL = 60;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    // Normal messages minutes 0..59; the refused one newest, so it is in the first chunk of bodies fetched.
    for (let i = 0; i < NORMAL; i++) await dovecot.deliver(plain(`normal ${i}`, `body of normal message marker${i}`, i), ['alice']);
    await dovecot.deliver(manyParts('a thousand and one parts', 1001, 120), ['alice']);
    s = await startRest();
    alice = (await s.app.accounts.connect({ service: 'imap', options: imapOptions(dovecot, smtp) })).id;
  }, 120_000);

  afterAll(async () => {
    await s?.stop();
    await smtp?.stop();
    await dovecot?.stop();
  });

  const q = new URLSearchParams(all).toString();

  it('the background prefetch still caches the bodies of the others: a word of the oldest is found', async () => {
    // The oldest message is past the first chunk of 50 the prefetch fetches.
    let total = 0;
    for (let i = 0; i < 60 && total === 0; i++) {
      await s.app.mail.sync(alice);
      const r = await s.call('GET', `/v1/accounts/${alice}/email/search?q=marker0`);
      expect(r.status, r.text).toBe(200);
      total = r.json.total;
      if (!total) await new Promise((r) => setTimeout(r, 250));
    }
    expect(total).toBe(1);
  }, 60_000);

  it('a REST list page with bodies answers 200, the refused message in it with its headers and a note', async () => {
    const r = await s.call('GET', `/v1/accounts/${alice}/email/messages?${q}&page_size=100`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.objects).toHaveLength(NORMAL + 1);
    const bad = r.json.objects.find((m: { subject: string }) => m.subject === 'a thousand and one parts');
    expect(bad.from).toMatchObject({ email: 's@example.test' });
    expect(bad.text_body).toMatch(/could not be read/);
    expect(bad.rfc822).not.toBeNull();
    const normal = r.json.objects.find((m: { subject: string }) => m.subject === 'normal 7');
    expect(normal.text_body).toContain('marker7');
  });

  it('retrieving the refused message answers 200 with the note, its source downloadable', async () => {
    const list = await s.app.mail.messages.list(alice, { ...all, page_size: 100, bodies: false });
    const bad = list.objects.find((m) => m.subject === 'a thousand and one parts')!;
    const r = await s.call('GET', `/v1/accounts/${alice}/email/messages/${encodeURIComponent(bad.id)}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.subject).toBe('a thousand and one parts');
    expect(r.json.text_body).toMatch(/could not be read/);
    const raw = await s.app.mail.messages.openFile(alice, r.json.rfc822.id);
    expect(raw.file.size).toBeGreaterThan(1001 * 50);
    raw.stream.destroy();
  });
});
