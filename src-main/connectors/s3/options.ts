/** The options of an `s3` account (the connection form's fields). */
import { z } from 'zod';

const bool = z.preprocess((v) => (typeof v === 'string' ? ['1', 'true', 'yes', 'on'].includes(v.toLowerCase()) : v), z.boolean());

export const options = z.object({
  accessKeyId: z.string().min(1).meta({ title: 'Access key id' }),
  secretAccessKey: z.string().min(1).meta({ title: 'Secret access key', secret: true }),
  endpoint: z.url().optional().meta({ title: 'Endpoint', description: 'Leave empty for AWS; e.g. https://minio.example.com', placeholder: 'https://s3.amazonaws.com' }),
  region: z.string().min(1).default('us-east-1').meta({ title: 'Region' }),
  bucket: z.string().min(1).meta({ title: 'Bucket' }),
  pathStyle: bool.default(false).meta({ title: 'Path-style addressing', description: 'Needed by most self-hosted servers.' }),
  prefix: z.string().optional().meta({ title: 'Key prefix', description: 'Use only the keys below this prefix as the account root.' }),
});
export type S3Options = z.infer<typeof options>;
