/** The options of an `azure` account (the connection form's fields). */
import { z } from 'zod';

export const options = z
  .object({
    accountName: z.string().min(1).optional().meta({ title: 'Storage account name' }),
    accountKey: z.string().min(1).optional().meta({ title: 'Account key', secret: true }),
    sasToken: z.string().min(1).optional().meta({ title: 'SAS token', secret: true, description: 'Instead of the account key.' }),
    connectionString: z.string().min(1).optional().meta({ title: 'Connection string', secret: true, description: 'Instead of name and key.' }),
    endpoint: z.url().optional().meta({ title: 'Blob endpoint', placeholder: 'https://ACCOUNT.blob.core.windows.net' }),
    container: z.string().min(1).meta({ title: 'Container' }),
  })
  .refine((o) => o.connectionString || (o.accountName && (o.accountKey || o.sasToken)), {
    message: 'Give a connection string, or the account name with its key or a SAS token',
  });
export type AzureOptions = z.infer<typeof options>;
