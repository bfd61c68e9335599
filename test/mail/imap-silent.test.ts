// A network path that dies without a close (a laptop's sleep, a changed Wi-Fi, a NAT entry
// dropped) against a real Dovecot: the kept IDLE connection finds the silence, opens a fresh
// connection and brings in what arrived meanwhile, and the next operation does not wait on the
// dead shared connection (docs/mail.md, Connection loss; spec 2 Messages).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { tcpProxy, type TcpProxy } from '../servers/tcp-proxy';
import { scratchDir, until } from '../servers/util';

const raw = (subject: string) => Buffer.from(`From: other@example.test\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.test>\r\n\r\nbody\r\n`);

describe('a connection that goes silent without a close (docs/mail.md, Connection loss; Dovecot)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let proxy: TcpProxy;
  let app: App;
  let dataDir: string;
  let alice: number;

  const stored = (subject: string) => app.mail.store.db.prepare('SELECT 1 FROM mail_messages WHERE account_id = ? AND subject = ?').get(alice, subject) !== undefined;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    proxy = await tcpProxy(dovecot.imapPort);
    dataDir = scratchDir('mail-silent');
    // No NOTIFY and no interval pass within the test: only the IDLE connection can bring mail in.
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { notify: false, followIntervalMs: 600_000, followSafetyMs: 600_000, prefetchBodies: 0, keptQuietMs: 1_000 } });
    alice = (await app.accounts.connect({ service: 'imap', options: { host: '127.0.0.1', port: proxy.port, tls: 'none', user: 'alice', password: 'secret', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
    await dovecot.deliver(raw('Seed'), ['alice']);
    await app.mail.sync(alice);
  });

  afterAll(async () => {
    await app?.close();
    await proxy?.stop();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('mail delivered after the path died comes in over a fresh IDLE connection, and a sync after it answers', async () => {
    expect(await app.mail.watching(alice)).toEqual(['INBOX']);
    expect(stored('Seed')).toBe(true);
    proxy.cut();
    await dovecot.deliver(raw('After the cut'), ['alice']);
    // 1 s of silence, a NOOP with no answer for 1 s more, then a fresh connection and its sync.
    await until(() => stored('After the cut'), 20_000, 'the message delivered after the cut');
    await dovecot.deliver(raw('Later still'), ['alice']);
    const synced = await Promise.race([app.mail.sync(alice).then(() => 'synced'), new Promise((r) => setTimeout(() => r('still waiting'), 15_000))]);
    expect(synced).toBe('synced');
    expect(stored('Later still')).toBe(true);
  });
});
