/**
 * spec 2, List messages (`after`, `before`): a message's time is its Date header, which is the
 * sender's text — a clock days ahead, 2099, 1969. The mailbox asks for every date a message can
 * carry (ALL_DATES), so such mail is listed like any other, not found only by search. Against a
 * real Dovecot.
 */
import { rmSync } from 'node:fs';
import MailComposer from 'nodemailer/lib/mail-composer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { ALL_DATES } from '../../src-main/contract/limits';
import { mailHandlers } from '../../src-main/rpc/mail';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir } from '../servers/util';

describe('mail with odd dates is listed (spec 2, List messages)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let app: App;
  let dataDir: string;
  let account: number;

  beforeAll(async () => {
    dovecot = await startDovecot();
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dataDir = scratchDir('odd-dates');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { live: false } });
    account = (await app.accounts.connect({ service: 'imap', options: { host: dovecot.host, port: dovecot.imapPort, tls: 'none', user: 'alice', password: 'secret', email: 'alice@example.test', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
    const dates: [string, Date][] = [
      ['today', new Date()],
      ['three days ahead', new Date(Date.now() + 3 * 86_400_000)],
      ['in 2099', new Date(Date.UTC(2099, 0, 1))],
      ['in 1969', new Date(Date.UTC(1969, 6, 20))],
    ];
    for (const [subject, date] of dates) {
      const raw = await new MailComposer({ from: 'Someone <someone@example.test>', to: 'alice@example.test', subject, text: subject, date }).compile().build();
      await dovecot.deliver(raw, ['alice']);
    }
    await app.mail.sync(account);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('the inbox lists all four, newest first', async () => {
    const h = mailHandlers(app.mail, app.storage, app.settings);
    const inbox = (await h['mail.folders']({ account })).find((f) => f.name.toLowerCase() === 'inbox')!;
    const page = await h['mail.list']({ account, folderId: inbox.id, pageSize: 50, ...ALL_DATES });
    expect(page.objects.map((m) => m.subject)).toEqual(['in 2099', 'three days ahead', 'today', 'in 1969']);
  });
});
