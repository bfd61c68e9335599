/**
 * `s3` as registered: options, import mapping and description, without the AWS SDK, which
 * index.ts imports and `create` loads on first use.
 */
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';
import { options, type S3Options } from './options';

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
  create: async (o, context): Promise<StorageConnector> => new (await import('./index')).S3Connector(o, context),
});
