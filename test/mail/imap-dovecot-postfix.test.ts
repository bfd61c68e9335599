// spec 2 (email) conformance of the `imap` connector against a real Dovecot (IMAP + LMTP), sending
// through a real Postfix that delivers to Dovecot over LMTP (notes/test-servers.md §1, §2A).
import { ImapFlow } from 'imapflow';
import { mailConformance } from '../conformance/mail-suite';
import { startDovecot } from '../servers/dovecot';
import { startPostfix } from '../servers/postfix';

mailConformance('imap on Dovecot + Postfix', async () => {
  const dovecot = await startDovecot({ users: { alice: 'secret', bob: 'secret' } });
  const postfix = await startPostfix({ lmtpPort: dovecot.lmtpPort }).catch(async (e) => {
    await dovecot.stop();
    throw e;
  });
  const clients: ImapFlow[] = [];
  return {
    options: (user) => ({
      host: dovecot.host,
      port: dovecot.imapPort,
      tls: 'none',
      user,
      password: dovecot.users[user],
      email: `${user}@example.test`,
      smtp_host: postfix.host,
      smtp_port: postfix.port,
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
    smtpReceived: () => null,
    async stop() {
      await Promise.all(clients.map((c) => c.logout().catch(() => c.close())));
      await postfix.stop();
      await dovecot.stop();
    },
  };
});
