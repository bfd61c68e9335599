/**
 * spec 3, Activity v2 ("The full object of a target ... can be fetched with its `id`, `type` and
 * `api`") for email tracking (spec 2, Send `tracking`): the target of an `email_open` is
 * Tributary's id of the sent message, which the message routes answer, not its RFC Message-ID.
 * Against a real Dovecot and an SMTP relay that delivers into it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imapOptions, startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { startRest, type RestServer } from '../rest/harness';

let s: RestServer;
let dovecot: DovecotServer;
let smtp: SmtpRelay;
let alice: number;

beforeAll(async () => {
  dovecot = await startDovecot({ users: { alice: 'secret' } });
  smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
  s = await startRest();
  s.app.settings.set('mail.trackingBaseUrl', s.url);
  alice = (await s.app.accounts.connect({ service: 'imap', options: imapOptions(dovecot, smtp) })).id;
}, 60_000);

afterAll(async () => {
  await s?.stop();
  await smtp?.stop();
  await dovecot?.stop();
});

describe('spec 3 Activity v2: email tracking targets are fetchable message ids', () => {
  it('the target id of an email_open (v2) and the metadata id (v1) open the sent message on the message routes', async () => {
    const sub = await s.call('POST', `/v1/accounts/${alice}/subscriptions`, { body: { subscription_type: 'analytics' } });
    expect(sub.status, sub.text).toBe(201);
    const sent = await s.call('POST', `/v1/accounts/${alice}/email/messages/send`, {
      body: { to: [{ email: 'alice@example.test' }], subject: 'Tracked target', body: '<p>Hi</p>', tracking: { opens: true, subscription_id: sub.json.id } },
    });
    expect(sent.status, sent.text).toBe(201);
    const open = /\/t\/o\/([A-Za-z0-9_.-]+)/.exec(sent.json.body as string)?.[1];
    expect((await s.call('GET', `/t/o/${open}`, { auth: null })).status).toBe(200);

    const v2 = await s.call('GET', `/v2/accounts/${alice}/subscriptions/${sub.json.id}/activity`);
    expect(v2.status, v2.text).toBe(200);
    const [activity] = v2.json.objects as { event_subtype: string; target: { id: string; type: string; api: string } }[];
    expect(activity!.event_subtype).toBe('email_open');
    expect(activity!.target).toMatchObject({ id: sent.json.id, type: 'message', api: 'email' });
    const fetched = await s.call('GET', `/v1/accounts/${alice}/email/messages/${encodeURIComponent(activity!.target.id)}`);
    expect(fetched.status, fetched.text).toBe(200);
    expect(fetched.json.subject).toBe('Tracked target');

    const v1 = await s.call('GET', `/v1/accounts/${alice}/subscriptions/${sub.json.id}/activity`);
    expect(v1.json.objects[0].metadata.id).toBe(sent.json.id);
  });
});
