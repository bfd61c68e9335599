// The `imap` connector over TLS and STARTTLS with a custom CA (docs/mail.md), against Dovecot
// with a self-signed certificate; SMTP through the plain relay (§2B).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { MailService } from '../../src-main/mail/service';
import { startDovecot } from '../servers/dovecot';
import { startSmtpRelay, type SmtpRelay } from '../servers/smtp-relay';
import { scratchDir } from '../servers/util';

describe('imap connector: TLS, STARTTLS, custom CA', () => {
  let dovecot: Awaited<ReturnType<typeof startDovecot>>;
  let smtp: SmtpRelay;
  let app: App;
  let mail: MailService;
  let dataDir: string;
  const base = () => ({ host: '127.0.0.1', user: 'alice', password: 'secret', smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' });

  beforeAll(async () => {
    dovecot = await startDovecot({ users: { alice: 'secret' }, tls: true });
    smtp = await startSmtpRelay({ lmtpPort: dovecot.lmtpPort, users: dovecot.users });
    dataDir = scratchDir('mail-tls');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { live: false, prefetchBodies: 0 } });
    mail = app.mail;
    await dovecot.deliver('Subject: over tls\r\nMessage-ID: <tls1@example.test>\r\n\r\nsecure\r\n', ['alice']);
  });

  afterAll(async () => {
    await app?.close();
    await smtp?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('implicit TLS with the server certificate as custom CA syncs the mailbox', async () => {
    const acc = await app.accounts.connect({ service: 'imap', options: { ...base(), port: dovecot.tls!.imapsPort, tls: 'tls', ca: dovecot.tls!.ca } });
    await mail.sync(acc.id);
    const page = await mail.messages.list(acc.id, { bodies: false });
    expect(page.objects.map((m) => m.subject)).toEqual(['over tls']);
  });

  it('STARTTLS with the custom CA works too', async () => {
    await expect(app.accounts.test('imap', { ...base(), port: dovecot.imapPort, tls: 'starttls', ca: dovecot.tls!.ca })).resolves.toBeUndefined();
  });

  it('without the CA the self-signed certificate is refused (no silent downgrade)', async () => {
    const err = await app.accounts.test('imap', { ...base(), port: dovecot.tls!.imapsPort, tls: 'tls' }).catch((e) => e);
    expect(err).toMatchObject({ code: expect.stringMatching(/service_not_available|upstream_error/) });
    expect(String(err.message)).toMatch(/certificate/i);
  });
});
