/**
 * `sftp` as registered: options, import mapping and description, without ssh2, which index.ts
 * imports and `create` loads on first use.
 */
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';
import { options, type SftpOptions } from './options';

export default defineConnector<'storage', SftpOptions>({
  id: 'sftp',
  name: 'SFTP',
  kind: 'storage',
  group: 'file_store',
  options,
  // spec 1, Import: `token` is the password or the private key, `token_secret` the key's passphrase.
  credentialsOf: (o) => ({ token: o.password ?? o.privateKey, token_secret: o.passphrase }),
  fromImport: (body) => {
    const token = typeof body.token === 'string' ? body.token : undefined;
    const isKey = token?.trimStart().startsWith('-----BEGIN');
    return {
      host: body.host ?? body.domain,
      port: body.port ?? undefined,
      username: body.account,
      password: isKey ? undefined : token,
      privateKey: isKey ? token : undefined,
      passphrase: isKey && typeof body.token_secret === 'string' ? body.token_secret : undefined,
      hostKeyFingerprint: body.host_key_fingerprint ?? undefined,
      root: body.path ?? undefined,
    };
  },
  describe: (o) => `${o.username}@${o.host}${o.port === 22 ? '' : `:${o.port}`}`,
  // ssh2 (about 20 MB in memory) is loaded with the first SFTP account used.
  create: async (o, ctx): Promise<StorageConnector> => new (await import('./index')).SftpConnector(o, ctx.dataDir),
  unconfirmedIdentity: async (o, ctx) => (await import('./session')).unknownHostKey(o, ctx.dataDir),
});
