// Every folder current, against a real Dovecot: mail another client APPENDs into Sent, and a
// folder another client creates, show up without a restart, by NOTIFY (RFC 5465) and, with
// NOTIFY off, by the interval pass (LIST-STATUS + QRESYNC). spec 2 Folders ("every level") and
// spec 3 `monitored_resources` given as folder ids of GET /email/folders.
import { rmSync } from 'node:fs';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { MailChange } from '../../src-main/mail/engine';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir } from '../servers/util';

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const raw = (subject: string) => Buffer.from(`From: other@example.test\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.test>\r\n\r\nbody\r\n`);
const ALL = { after: '1970-01-01T00:00:00Z', before: '2100-01-01T00:00:00Z', bodies: false };

for (const mode of ['NOTIFY', 'interval pass'] as const) {
  describe(`every folder current by ${mode} (spec 2 Folders; Dovecot)`, () => {
    let dovecot: DovecotServer;
    let smtp: SmtpRelay;
    let app: App;
    let dataDir: string;
    let alice: number;
    let other: ImapFlow;
    const recorded: MailChange[] = [];

    beforeAll(async () => {
      dovecot = await startDovecot({ users: { alice: 'secret' } });
      smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
      dataDir = scratchDir('mail-current');
      app = await createApp({
        dataDir,
        defaultLocalFolder: false,
        // NOTIFY mode: the interval pass is far away, so only NOTIFY can bring the changes in.
        mail: mode === 'NOTIFY' ? { followIntervalMs: 600_000, followSafetyMs: 600_000 } : { notify: false, followIntervalMs: 300 },
      });
      const recordMailChanges = app.activity.recordMailChanges.bind(app.activity);
      app.activity.recordMailChanges = (account, changes) => (recorded.push(...changes), recordMailChanges(account, changes));
      alice = (await app.accounts.connect({ service: 'imap', options: { host: dovecot.host, port: dovecot.imapPort, tls: 'none', user: 'alice', password: 'secret', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
      other = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
      await other.connect();
      await app.mail.folders.list(alice);
    });

    afterAll(async () => {
      await other?.logout().catch(() => {});
      await app?.close();
      await smtp?.stop();
      await dovecot?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it(`follows every folder by ${mode === 'NOTIFY' ? 'NOTIFY where Dovecot offers it' : 'the interval pass when NOTIFY is off'}`, async () => {
      expect(await app.mail.notifying(alice)).toBe(mode === 'NOTIFY');
      // IDLE watches only the inbox: Sent is not among its folders.
      expect(await app.mail.watching(alice)).toEqual(['INBOX']);
    });

    it('a no-change pass syncs no folder', async () => {
      await app.mail.sync(alice);
      expect(await app.mail.refresh(alice)).toEqual([]);
    });

    it('shows mail another client APPENDs into Sent without a restart', async () => {
      await other.append('Sent', raw(`Sent elsewhere ${mode}`), ['\\Seen']);
      const sent = (await app.mail.folders.list(alice)).find((f) => f.specialUse === 'sent')!;
      const m = await until('the message in Sent', async () => (await app.mail.messages.list(alice, { ...ALL, folder_id: sent.id })).objects.find((x) => x.subject === `Sent elsewhere ${mode}`));
      expect(m.folder).toBe('Sent');
    });

    it('finds a folder another client creates, with the mail put in it', async () => {
      await other.mailboxCreate(`Projects ${mode}`);
      await other.append(`Projects ${mode}`, raw(`Filed ${mode}`));
      const folder = await until('the new folder', async () => (await app.mail.folders.list(alice)).find((f) => f.name === `Projects ${mode}`));
      const m = await until('its message', async () => (await app.mail.messages.list(alice, { ...ALL, folder_id: folder.id })).objects.find((x) => x.subject === `Filed ${mode}`));
      expect(m.folderId).toBe(folder.id);
    });

    it('spec 3 monitored_resources: a folder id of GET /email/folders matches; an unknown one is 400', async () => {
      const folders = await app.mail.folders.list(alice);
      const junk = folders.find((f) => f.specialUse === 'junk')!;
      await expect(app.activity.subscriptions.create(alice, { monitoredResources: [{ resource: 'not-a-folder-id' }] })).rejects.toMatchObject({ code: 'invalid_parameters', status: 400 });
      await expect(app.activity.subscriptions.create(alice, { monitoredResources: [{ resource: junk.id.slice(0, -2) + 'AA' }] })).rejects.toMatchObject({ code: 'invalid_parameters' });
      const sub = await app.activity.subscriptions.create(alice, { monitoredResources: [{ resource: junk.id }] });
      expect(sub.monitoredResources).toEqual([{ resource: junk.id }]);
      await other.append('Junk', raw(`Spam ${mode}`));
      await other.append('INBOX', raw(`Not monitored ${mode}`));
      const page = await until('the Junk activity', () => {
        const p = app.activity.log.list(alice, sub.id, {}).records;
        return p.some((o) => o.metadata?.name === `Spam ${mode}`) ? p : undefined;
      });
      expect(page.some((o) => o.metadata?.name === `Not monitored ${mode}`)).toBe(false);
      expect(recorded.some((c) => c.folder === 'Junk' && c.folderId === junk.id)).toBe(true);
    });
  });
}
