/** What an SFTP account is: its server, user, credentials and folder (the connect form and the stored options). */
import { z } from 'zod';

export const options = z.object({
  host: z.string().trim().min(1).max(255).meta({ title: 'Server', placeholder: 'files.example.org' }),
  port: z.coerce.number().int().min(1).max(65535).default(22).meta({ title: 'Port' }),
  username: z.string().min(1).max(255).meta({ title: 'User name' }),
  password: z.string().max(4096).optional().meta({ title: 'Password', secret: true }),
  privateKey: z
    .string()
    .max(64 * 1024)
    .optional()
    .meta({ title: 'Private key', description: 'PEM or OpenSSH format ("-----BEGIN ...").', secret: true }),
  passphrase: z.string().max(4096).optional().meta({ title: 'Key passphrase', secret: true }),
  hostKeyFingerprint: z
    .string()
    .trim()
    .max(100)
    .optional()
    .meta({
      title: 'Host key fingerprint',
      description: 'SHA256 fingerprint as `ssh-keygen -l` prints it. Optional; set it to accept a changed host key.',
      placeholder: 'SHA256:…',
    }),
  root: z.string().max(4096).optional().meta({ title: 'Folder', description: 'Folder on the server to show as the account root; the login folder when empty.' }),
});
export type SftpOptions = z.infer<typeof options>;
