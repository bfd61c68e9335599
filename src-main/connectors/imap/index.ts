/**
 * `imap`: a mail account over IMAP (reading, sync, IDLE) and SMTP (sending). The connector owns
 * connections only; sync, cache, search and the spec 2 behaviour live in src-main/mail/.
 */
import { z } from 'zod';
import { ServiceError } from '../../errors';
import { defineConnector } from '../registry';
import type { ImportBody } from '../types';
import { defaultAddress } from './address';
import type { ImapOptions, MailConnector } from './connector';

declare module '../types' {
  interface ConnectorKinds {
    mail: MailConnector;
  }
}

const security = z.enum(['tls', 'starttls', 'none']);

export const imapOptions = z
  .object({
    host: z.string().min(1).max(255).meta({ title: 'IMAP server', placeholder: 'imap.example.com' }),
    port: z.coerce.number().int().min(1).max(65535).optional().meta({ title: 'IMAP port', description: '993 with TLS, 143 otherwise' }),
    tls: security.default('tls').meta({ title: 'IMAP security', description: 'tls (implicit), starttls or none' }),
    user: z.string().min(1).max(320).meta({ title: 'User name' }),
    password: z.string().min(1).max(4096).optional().meta({ title: 'Password', secret: true }),
    accessToken: z.string().min(1).max(16384).optional().meta({ title: 'OAuth 2.0 access token (XOAUTH2)', secret: true }),
    ca: z.string().max(65536).optional().meta({ title: 'Custom CA certificate (PEM)' }),
    email: z.string().max(320).optional().meta({ title: 'E-mail address', description: 'The From address; the user name when omitted' }),
    smtp_host: z.string().min(1).max(255).optional().meta({ title: 'SMTP server', description: 'The IMAP server when omitted' }),
    smtp_port: z.coerce.number().int().min(1).max(65535).optional().meta({ title: 'SMTP port', description: '465 with TLS, 587 with STARTTLS, 25 otherwise' }),
    smtp_tls: security.optional().meta({ title: 'SMTP security', description: 'The IMAP security when omitted' }),
    name: z.string().max(200).optional().meta({ title: 'Display name', description: 'Shown with the address in From' }),
    signature: z.string().max(10_000).optional().meta({ title: 'Signature', description: 'Added below new messages and above the quote in replies (plain text)', multiline: true }),
  })
  .refine((o) => o.password || o.accessToken, { message: 'a password or an access token is required', path: ['password'] });

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

export default defineConnector<'mail', ImapOptions>({
  id: 'imap',
  name: 'IMAP/SMTP',
  kind: 'mail',
  group: 'email',
  options: imapOptions as unknown as z.ZodType<ImapOptions>,
  fromImport(body: ImportBody) {
    // The docs' `tls` is a boolean (JSON true/false, or the strings): true = implicit TLS, false =
    // STARTTLS (never silently the default, implicit TLS). A security name is taken as it is.
    const tls = body.tls === true ? 'true' : body.tls === false ? 'false' : str(body.tls);
    return {
      user: str(body.account),
      password: str(body.token),
      host: str(body.host),
      port: str(body.port),
      smtp_host: str(body.smtp_host),
      smtp_port: str(body.smtp_port),
      tls: tls === 'true' || tls === 'True' ? 'tls' : tls === 'false' || tls === 'False' ? 'starttls' : tls,
      email: str(body.email),
      name: str(body.name),
    };
  },
  describe: (o) => o.email || defaultAddress(o.user, o.host),
  // imapflow and nodemailer (about 35 MB in memory) are loaded with the first mail account used.
  create: async (o) => new (await import('./connector')).ImapConnector(o),
  async verify(instance) {
    const { ImapConnector } = await import('./connector');
    if (!(instance instanceof ImapConnector)) throw new ServiceError('internal_error', 'Not an IMAP connector.');
    await instance.verify();
  },
});
