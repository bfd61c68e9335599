// Live updates (docs/mail.md, "How the cache stays current"; spec 2 Messages) against a real
// Dovecot: the IDLE connection on the inbox keeps reporting new mail whatever happened on it
// before. NOTIFY and the interval pass are off, so a stored message can only come from IDLE.
import { spawnSync } from 'node:child_process';
import { chownSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir, until, waitPort, waitPortClosed } from '../servers/util';

const raw = (subject: string) => Buffer.from(`From: other@example.test\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.test>\r\n\r\nbody\r\n`);

/** Established TCP connections to a local port (the server's side of each), from /proc/net/tcp. */
const connectionsTo = (port: number) =>
  readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .filter((line) => {
      const [, local, , state] = line.trim().split(/\s+/);
      return state === '01' && local?.endsWith(`:${port.toString(16).toUpperCase().padStart(4, '0')}`);
    }).length;

describe('IDLE on the inbox stays live (docs/mail.md, Live updates; Dovecot)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let app: App;
  let dataDir: string;
  let alice: number;
  let other: ImapFlow;
  let inboxId: string;
  const changed: string[] = [];

  const stored = (subject: string) => app.mail.store.db.prepare('SELECT 1 FROM mail_messages WHERE account_id = ? AND subject = ?').get(alice, subject) !== undefined;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dataDir = scratchDir('mail-idle');
    // No NOTIFY and no interval pass within the test: only IDLE can bring mail in.
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { notify: false, followIntervalMs: 600_000, followSafetyMs: 600_000, prefetchBodies: 0 } });
    alice = (await app.accounts.connect({ service: 'imap', options: { host: dovecot.host, port: dovecot.imapPort, tls: 'none', user: 'alice', password: 'secret', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
    for (const s of ['Seed 1', 'Seed 2', 'Seed 3']) await dovecot.deliver(raw(s), ['alice']);
    await app.mail.sync(alice);
    inboxId = (await app.mail.folders.list(alice)).find((f) => f.specialUse === 'inbox')!.id;
    app.events.on('mail.changed', (e) => {
      if (e.account === alice && e.folder === inboxId) changed.push(e.kind);
    });
    other = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
    await other.connect();
    await other.mailboxOpen('INBOX');
  });

  afterAll(async () => {
    await other?.logout().catch(() => {});
    await app?.close();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a message expunged elsewhere, then one delivered: the delivery still raises mail.changed (QRESYNC VANISHED, then EXISTS of the same count)', async () => {
    expect(await app.mail.watching(alice)).toEqual(['INBOX']);
    for (const round of [1, 2]) {
      // Another client expunges one message. With QRESYNC enabled the IDLE connection hears
      // VANISHED (RFC 7162 §3.2.10), which lowers the message count like EXPUNGE does.
      const [uid] = (await other.search({ subject: `Seed ${round}` }, { uid: true })) || [];
      await other.messageDelete(String(uid), { uid: true });
      await until(() => !stored(`Seed ${round}`), 15_000, `IDLE to report the expunge of Seed ${round}`);
      // One message arrives: the count is back where it was, and the server says EXISTS with it.
      const mark = changed.length;
      await dovecot.deliver(raw(`Live ${round}`), ['alice']);
      await until(() => stored(`Live ${round}`), 15_000, `IDLE to bring in Live ${round}`);
      expect(changed.slice(mark)).toContain('messages');
    }
  });

  it('the server restarts while an operation fails: IDLE comes back and brings in what arrived meanwhile', async () => {
    const conf = join(dovecot.dir, 'dovecot.conf');
    await other.logout();
    dovecot.doveadm(['stop']);
    await waitPortClosed(dovecot.imapPort);
    // The master is gone; its imap processes close their clients a moment later (on a busy
    // machine, seconds later).
    await until(() => connectionsTo(dovecot.imapPort) === 0, 40_000, 'the IMAP connections to close');
    // Mail filed while the server is down (as an MTA that writes the Maildir would).
    const file = join(dovecot.maildir('alice'), 'new', `${Date.now()}.restart.itest`);
    writeFileSync(file, raw('While down'));
    chownSync(file, 65534, 65534);
    // Something needs the server meanwhile (the user, or the pass over every folder): it fails.
    await expect(app.mail.sync(alice, inboxId)).rejects.toMatchObject({ code: 'service_not_available' });
    const mark = changed.length;
    expect(spawnSync('/usr/sbin/dovecot', ['-c', conf], { stdio: 'ignore' }).status).toBe(0);
    await waitPort(dovecot.imapPort);
    // Only the IDLE connection, reconnecting with back-off, can bring it in: its first step is a sync.
    await until(() => stored('While down'), 30_000, 'IDLE to reconnect and sync');
    expect(changed.slice(mark)).toContain('messages');
    expect(await app.mail.watching(alice)).toEqual(['INBOX']);
    // And it goes on reporting new mail.
    await dovecot.deliver(raw('After restart'), ['alice']);
    await until(() => stored('After restart'), 15_000, 'IDLE after the restart');
  }, 120_000);
});
