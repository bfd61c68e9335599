/**
 * spec 3, Subscription (mail rules) and Activity (email): an IMAP account on a real Dovecot gets
 * INBOX as its default monitored resource, may have an `analytics` subscription but not `crawl`,
 * and the mail sync engine's hook records message activity inside the caller's transaction
 * (rolled back with it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { freePort } from '../servers/util';
import * as ep from '../../src-main/rest/activity';
import { makeHarness, type Harness } from './helpers';

let dove: DovecotServer;
let h: Harness;
let smtp: SMTPServer;
let smtpPort: number;
beforeAll(async () => {
  dove = await startDovecot();
  // The account check also reaches SMTP; a plain loopback submission server is enough here.
  smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], onAuth: (_a, _s, cb) => cb(null, { user: 'alice' }) });
  smtpPort = await freePort();
  await new Promise<void>((ok) => smtp.listen(smtpPort, '127.0.0.1', ok));
  h = await makeHarness();
});
afterAll(async () => {
  await h?.close();
  await dove?.stop();
  await new Promise<void>((ok) => smtp.close(() => ok()));
});

describe('spec 3, mail subscriptions and email activity', () => {
  it('type rules, INBOX default, and recordMailChanges in the caller’s transaction', async () => {
    const acc = await h.app.accounts.connect({ service: 'imap', options: { host: dove.host, port: dove.imapPort, tls: 'none', user: 'alice', password: 'secret', smtp_host: '127.0.0.1', smtp_port: smtpPort, smtp_tls: 'none' } });
    await expect(h.activity.subscriptions.create(acc.id, { subscriptionType: 'crawl' })).rejects.toThrow(/only for storage/);
    const analytics = await h.activity.subscriptions.create(acc.id, { subscriptionType: 'analytics' });
    expect(analytics.monitoredResources).toEqual([{ resource: 'INBOX' }]);
    h.activity.subscriptions.delete(acc.id, analytics.id);
    const sub = await h.activity.subscriptions.create(acc.id, {});
    expect(ep.getSubscription(h.activity, acc.id, 'default', 2).body).toMatchObject({ monitored_resource_api: 'email', monitored_resources: [{ resource: 'INBOX' }] });

    const batch = [
      { type: 'add' as const, folder: 'INBOX', uid: 7, subject: 'Hello', size: 812, date: '2026-11-21T06:00:00.000Z' },
      { type: 'add' as const, folder: 'Junk', uid: 3, subject: 'not monitored' },
    ];
    // A rolled-back sync batch leaves no activity behind.
    expect(() =>
      h.app.db.transaction(() => {
        h.activity.recordMailChanges(acc.id, batch);
        throw new Error('sync batch failed');
      })(),
    ).toThrow('sync batch failed');
    expect(h.activity.log.list(acc.id, sub.id, {}).records).toEqual([]);
    h.app.db.transaction(() => h.activity.recordMailChanges(acc.id, batch))();
    const v1 = ep.listActivity(h.activity, acc.id, 'default', {}, 1).body as { objects: Record<string, unknown>[] };
    expect(v1.objects).toHaveLength(1);
    expect(v1.objects[0]).toMatchObject({ type: 'add', metadata: { type: 'message', api: 'email', name: 'Hello', size: 812 } });
    const v2 = ep.listActivity(h.activity, acc.id, 'default', {}, 2).body as { objects: Record<string, unknown>[] };
    expect(v2.objects[0]).toMatchObject({ event_category: 'email', event_type: 'add', target: { type: 'message', api: 'email' } });
  }, 60_000);
});
