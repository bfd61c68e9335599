/** What an SMB account is: its server, share, user and protection (the connect form and the stored options). */
import { z } from 'zod';

export const options = z.object({
  host: z.string().trim().min(1).max(255).meta({ title: 'Server', placeholder: 'nas.local' }),
  port: z.coerce.number().int().min(1).max(65535).default(445).meta({ title: 'Port' }),
  share: z
    .string()
    .trim()
    .min(1)
    .max(80)
    .regex(/^[^\\/"*:<>?|;]+$/, 'A share name cannot contain \\ / " * : < > ? | or ;.')
    .meta({ title: 'Share', placeholder: 'photos' }),
  workgroup: z.string().trim().max(255).default('WORKGROUP').meta({ title: 'Domain or workgroup' }),
  username: z.string().max(255).default('').meta({ title: 'User name', description: 'Empty for guest access.' }),
  password: z.string().max(4096).default('').meta({ title: 'Password', secret: true }),
  protection: z
    .enum(['auto', 'sign', 'encrypt'])
    .default('auto')
    .meta({ title: 'Protection', description: 'Require SMB signing or SMB3 encryption; "auto" uses what the server asks for.' }),
  smbclient: z.string().max(1024).default('smbclient').meta({ title: 'smbclient program', description: 'Path of Samba\'s smbclient.', internal: true }),
});
export type SmbOptions = z.infer<typeof options>;
