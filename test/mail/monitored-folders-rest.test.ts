// spec 3 Subscription `monitored_resources` over REST for a mail account (Dovecot): folder ids of
// spec 2 `GET /email/folders` are accepted and match the activity of that folder (mail another
// client APPENDs into Sent); an id that names no folder is 400 with the documented error body
// (spec 1, Errors: {status_code, error_code, message, id}).
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isErrorBody, startRest, type RestServer } from '../rest/harness';
import { imapOptions, startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';

describe('monitored_resources of a mail account are folder ids (spec 3 Subscriptions; REST)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let s: RestServer;
  let alice: number;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    s = await startRest();
    alice = (await s.app.accounts.connect({ service: 'imap', options: imapOptions(dovecot, smtp) })).id;
  });

  afterAll(async () => {
    await s?.stop();
    await smtp?.stop();
    await dovecot?.stop();
  });

  it('refuses an unknown folder id with 400 invalid_parameters, accepts a folder id and records that folder', async () => {
    const bad = await s.call('POST', `/v2/accounts/${alice}/subscriptions`, { body: { monitored_resources: [{ resource: 'not-a-folder' }] } });
    expect(bad.status, bad.text).toBe(400);
    expect(isErrorBody(bad.json, 400), bad.text).toBe(true);
    expect(bad.json.error_code).toBe('invalid_parameters');

    const folders = await s.call('GET', `/v1/accounts/${alice}/email/folders`);
    const sent = folders.json.objects.find((f: { name: string }) => f.name === 'Sent');
    const sub = await s.call('POST', `/v2/accounts/${alice}/subscriptions`, { body: { monitored_resources: [{ resource: sent.id }] } });
    expect(sub.status, sub.text).toBe(201);
    expect(sub.json.monitored_resources).toEqual([{ resource: sent.id }]);

    const other = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
    await other.connect();
    try {
      await other.append('Sent', Buffer.from('From: alice@example.test\r\nTo: x@example.test\r\nSubject: Sent from a phone\r\n\r\nhi\r\n'), ['\\Seen']);
    } finally {
      await other.logout();
    }
    const end = Date.now() + 15_000;
    let names: string[] = [];
    while (Date.now() < end) {
      const r = await s.call('GET', `/v2/accounts/${alice}/subscriptions/default/activity`);
      expect(r.status, r.text).toBe(200);
      names = r.json.objects.map((o: { target?: { name?: string } }) => o.target?.name);
      if (names.includes('Sent from a phone')) break;
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(names).toContain('Sent from a phone');
  });
});
