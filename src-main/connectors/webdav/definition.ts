/**
 * `webdav` as registered: options, import mapping and description, without undici and the XML
 * parser, which index.ts imports and `create` loads on first use.
 */
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';
import { options, type WebDavOptions } from './options';

export default defineConnector<'storage', WebDavOptions>({
  id: 'webdav',
  name: 'WebDAV',
  kind: 'storage',
  group: 'file_store',
  options,
  // spec 1, Import an account: account → username, token → password, plus connection facts.
  fromImport: (body) => ({
    username: body.account,
    password: body.token,
    protocol: body.protocol,
    host: body.host,
    port: typeof body.port === 'string' && /^\d+$/.test(body.port) ? Number(body.port) : body.port,
    path: body.path,
  }),
  describe: (o) => `${o.username}@${o.host}${o.port ? `:${o.port}` : ''}`,
  create: async (o): Promise<StorageConnector> => new (await import('./index')).WebDavConnector(o),
});
