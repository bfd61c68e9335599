// The server says BYE (Dovecot: `doveadm kick`) and its socket closes a moment later, as over a
// slow network. In between, a mail operation must go to a fresh connection, never be skipped on
// the closing one (spec 2 Folders: create; docs/mail.md, "One writer per account").
import { rmSync } from 'node:fs';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { answered } from '../../src-main/connectors/imap/answered';
import { ImapConnector } from '../../src-main/connectors/imap/connector';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { tcpProxy, type TcpProxy } from '../servers/tcp-proxy';
import { scratchDir, until } from '../servers/util';

describe('a BYE before the socket closes (docs/mail.md, connection loss; Dovecot)', () => {
  let dovecot: DovecotServer;
  let smtp: SmtpRelay;
  let proxy: TcpProxy;
  let app: App;
  let dataDir: string;
  let alice: number;

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' } });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    proxy = await tcpProxy(dovecot.imapPort);
    dataDir = scratchDir('mail-bye');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { notify: false, followIntervalMs: 600_000, followSafetyMs: 600_000, prefetchBodies: 0 } });
    alice = (await app.accounts.connect({ service: 'imap', options: { host: '127.0.0.1', port: proxy.port, tls: 'none', user: 'alice', password: 'secret', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' } })).id;
    await app.mail.sync(alice);
  });

  afterAll(async () => {
    await app?.close();
    await proxy?.stop();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a folder created between the BYE and the close is created on the server (spec 2 Folders: create)', async () => {
    expect(await app.mail.watching(alice)).toEqual(['INBOX']);
    proxy.holdMs = 5_000;
    const before = proxy.closedByServer;
    dovecot.doveadm(['kick', 'alice']);
    // Both connections (commands, IDLE on the inbox) have had their BYE; their sockets stay open.
    await until(() => proxy.closedByServer - before >= 2, 10_000, 'the server to drop both connections');
    await new Promise((r) => setTimeout(r, 300));
    const created = await app.mail.folders.create(alice, 'Made after BYE');
    expect(created.name).toBe('Made after BYE');
    proxy.holdMs = 0;
    const other = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
    await other.connect();
    expect((await other.list()).map((f) => f.path)).toContain('Made after BYE');
    await other.logout();
  });

  it('a command imapflow skipped after a BYE is run again on a fresh connection, once (spec 2 Drafts)', async () => {
    const connector = new ImapConnector({ host: '127.0.0.1', port: proxy.port, tls: 'none', user: 'alice', password: 'secret' });
    const subject = `Appended after BYE ${Date.now()}`;
    const raw = Buffer.from(`From: alice@example.com\r\nSubject: ${subject}\r\n\r\nbody\r\n`);
    const skipped: unknown[] = [];
    let attempts = 0;
    try {
      proxy.holdMs = 3_000;
      const result = await connector.withClient(async (c) => {
        attempts++;
        answered(await c.mailboxOpen('Drafts'), 'Opening Drafts');
        if (attempts === 1) {
          // The BYE lands between two commands of one operation; the socket stays open.
          dovecot.doveadm(['kick', 'alice']);
          await until(() => c.state === c.states.LOGOUT, 10_000, 'imapflow to read the BYE');
          skipped.push(await c.append('Drafts', raw));
        }
        return answered(await c.append('Drafts', raw), 'Appending to Drafts');
      });
      // imapflow's answer to a command it did not send: no error, nothing.
      expect(skipped).toHaveLength(1);
      expect(skipped[0]).toBeFalsy();
      expect(attempts).toBe(2);
      expect(result.destination).toBe('Drafts');
    } finally {
      proxy.holdMs = 0;
      await connector.close();
    }
    const other = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
    await other.connect();
    const lock = await other.getMailboxLock('Drafts');
    try {
      expect(await other.search({ subject }, { uid: true })).toHaveLength(1);
    } finally {
      lock.release();
      await other.logout();
    }
  });
});
