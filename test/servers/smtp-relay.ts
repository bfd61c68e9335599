/**
 * An SMTP server (npm smtp-server, in the test process) that requires AUTH and relays every
 * message to Dovecot over LMTP: notes/test-servers.md §2B. It records each envelope so tests
 * can check what went over the wire (Bcc only in the envelope, never in the headers).
 */
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { freePort } from './util';

export interface SmtpRelay {
  host: string;
  port: number;
  received: { from: string; to: string[]; raw: Buffer }[];
  stop(): Promise<void>;
}

export async function startSmtpRelay(options: { lmtpPort: number; users: Record<string, string> }): Promise<SmtpRelay> {
  const lmtp = nodemailer.createTransport({ host: '127.0.0.1', port: options.lmtpPort, lmtp: true, ignoreTLS: true });
  const received: SmtpRelay['received'] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, cb) {
      const user = (auth.username ?? '').split('@')[0]!;
      if (options.users[user] !== undefined && options.users[user] === auth.password) cb(null, { user });
      else cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const to = session.envelope.rcptTo.map((r) => r.address);
        const raw = Buffer.concat(chunks);
        received.push({ from, to, raw });
        lmtp.sendMail({ envelope: { from, to }, raw }).then(
          () => cb(),
          (e: Error) => cb(e),
        );
      });
    },
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    host: '127.0.0.1',
    port,
    received,
    async stop() {
      lmtp.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
