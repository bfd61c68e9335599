/** The options of a `webdav` account (the connection form's fields). */
import { z } from 'zod';

export const options = z.object({
  protocol: z.enum(['http', 'https']).default('https').meta({ title: 'Protocol' }),
  host: z.string().min(1).max(253).meta({ title: 'Server', placeholder: 'dav.example.com' }),
  port: z.number().int().min(1).max(65535).optional().meta({ title: 'Port', description: '443 for https, 80 for http when empty.' }),
  path: z.string().default('/').meta({ title: 'Path', description: 'Base path of the WebDAV share.', placeholder: '/remote.php/dav/files/me' }),
  username: z.string().min(1).meta({ title: 'User name' }),
  password: z.string().meta({ title: 'Password', secret: true }),
  ca: z.string().optional().meta({ title: 'CA certificate (PEM)', description: 'For servers with a private certificate authority.' }),
  rejectUnauthorized: z.boolean().default(true).meta({ title: 'Verify the server certificate' }),
});
export type WebDavOptions = z.infer<typeof options>;
