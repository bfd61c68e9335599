// Storage files attached to a message by the mail procedures (mail.send, mail.queue,
// mail.saveDraft) are opened before the message is checked: a refused message, or an attachment
// that cannot be opened, must still close every file opened for it. Against a real Dovecot and
// an SMTP relay into it, with the files on a local-folder account (spec 2, Send: attachments).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { mailHandlers, type MailHandlers } from '../../src-main/rpc/mail';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { openOn, scratchDir } from '../servers/util';

describe('attachments from storage are closed whatever becomes of the send (spec 2, Send)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let app: App;
  let h: MailHandlers;
  let dataDir: string;
  let alice: number;
  let files: number;
  let reportId: string;
  const home = scratchDir('send-attachments-home');
  const report = join(home, 'report.pdf');
  /** Every attachment stream opened, kept so that only closing it (never its collection) frees the file. */
  const opened: Readable[] = [];

  beforeAll(async () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(report, Buffer.alloc(100_000, 1));
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dataDir = scratchDir('send-attachments-data');
    app = await createApp({ dataDir, defaultLocalFolder: home, mail: { live: false } });
    files = app.accounts.list()[0].id;
    reportId = (await app.storage.list(files, 'root')).items.find((i) => i.name === 'report.pdf')!.id;
    alice = (await app.accounts.connect({ service: 'imap', options: { host: dovecot.host, port: dovecot.imapPort, tls: 'none', user: 'alice', password: 'secret', email: 'alice@example.test', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
    h = mailHandlers(
      app.mail,
      {
        download: async (account, id) => {
          const r = await app.storage.download(account, id);
          opened.push(r.stream);
          return r;
        },
      },
      app.settings,
    );
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a message refused for a bad address leaves no file open (send, queue and draft)', async () => {
    const message = { account: alice, to: [{ name: null, email: 'not an address' }], subject: 'Report', textBody: 'attached', attachments: [{ account: files, id: reportId }] };
    await expect(h['mail.send'](message)).rejects.toMatchObject({ code: 'invalid_parameters' });
    await expect(h['mail.queue'](message)).rejects.toMatchObject({ code: 'invalid_parameters' });
    await expect(h['mail.saveDraft'](message)).rejects.toMatchObject({ code: 'invalid_parameters' });
    expect(opened).toHaveLength(3);
    expect(opened.map((s) => s.destroyed)).toEqual([true, true, true]);
    await expect.poll(() => openOn(report), { timeout: 10_000 }).toEqual([]);
  });

  it('an attachment that cannot be opened closes the ones that could', async () => {
    opened.length = 0;
    const attachments = [
      { account: files, id: reportId },
      { account: files, id: 'no-such-file' },
    ];
    await expect(h['mail.send']({ account: alice, to: [{ name: null, email: 'alice@example.test' }], subject: 'Two files', textBody: 'attached', attachments })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect.poll(() => opened.map((s) => s.destroyed), { timeout: 10_000 }).toEqual([true]);
    await expect.poll(() => openOn(report), { timeout: 10_000 }).toEqual([]);
    expect(smtp.received).toEqual([]);
  });

  it('a message sent carries the file, and leaves it closed', async () => {
    await h['mail.send']({ account: alice, to: [{ name: null, email: 'alice@example.test' }], subject: 'Sent report', textBody: 'attached', attachments: [{ account: files, id: reportId }] });
    expect(smtp.received.map((m) => m.raw.toString('latin1').includes('filename=report.pdf'))).toEqual([true]);
    await expect.poll(() => openOn(report), { timeout: 10_000 }).toEqual([]);
  });
});
