/**
 * `s3` as registered: options, import mapping and description, without the AWS SDK, which
 * index.ts imports and `create` loads on first use.
 */
import { z } from 'zod';
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';

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

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

export default defineConnector<'storage', S3Options>({
  id: 's3',
  name: 'Amazon S3 (and compatible)',
  kind: 'storage',
  group: 'object_store',
  options,
  // spec 1, Import: `token` is the access key id, `token_secret` the secret access key.
  credentialsOf: (o) => ({ token: o.accessKeyId, token_secret: o.secretAccessKey }),
  fromImport: (body) => ({
    accessKeyId: str(body.token),
    secretAccessKey: str(body.token_secret),
    endpoint: str(body.endpoint),
    region: str(body.region),
    bucket: str(body.bucket),
    pathStyle: body.path_style ?? undefined,
    prefix: str(body.prefix),
  }),
  describe: (o) => `${o.bucket}@${o.endpoint ? new URL(o.endpoint).host : `s3.${o.region}.amazonaws.com`}`,
  // The SDK (about 20 MB in memory) is loaded with the first S3 account used.
  create: async (o): Promise<StorageConnector> => new (await import('./index')).S3Connector(o),
});
