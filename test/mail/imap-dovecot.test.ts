// spec 2 (email) conformance of the `imap` connector against a real Dovecot (IMAP + LMTP) and an
// SMTP server relaying to Dovecot's LMTP (notes/test-servers.md §1, §2B).
import { ImapFlow } from 'imapflow';
import { mailConformance } from '../conformance/mail-suite';
import { startDovecot } from '../servers/dovecot';
import { startSmtpRelay } from '../servers/smtp-relay';

mailConformance('imap on Dovecot + SMTP relay', async () => {
  const dovecot = await startDovecot({ users: { alice: 'secret', bob: 'secret' } });
  const smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
  const clients: ImapFlow[] = [];
  return {
    options: (user) => ({
      host: dovecot.host,
      port: dovecot.imapPort,
      tls: 'none',
      user,
      password: dovecot.users[user],
      email: `${user}@example.test`,
      smtp_host: smtp.host,
      smtp_port: smtp.port,
      smtp_tls: 'none',
    }),
    deliver: (raw, to) => dovecot.deliver(raw, to),
    async kick(user) {
      dovecot.doveadm(['kick', user]);
    },
    async external(user) {
      const c = new ImapFlow({ host: dovecot.host, port: dovecot.imapPort, secure: false, auth: { user, pass: dovecot.users[user]! }, logger: false });
      await c.connect();
      clients.push(c);
      return c;
    },
    smtpReceived: () => smtp.received,
    async stop() {
      await Promise.all(clients.map((c) => c.logout().catch(() => c.close())));
      await smtp.stop();
      await dovecot.stop();
    },
  };
});
