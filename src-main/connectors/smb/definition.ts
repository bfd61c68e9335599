/**
 * `smb` as registered: options, import mapping and description, without the connector and its
 * smbclient processes, which index.ts holds and `create` loads on first use.
 */
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';
import { options, type SmbOptions } from './options';

export default defineConnector<'storage', SmbOptions>({
  id: 'smb',
  name: 'SMB / Windows share',
  kind: 'storage',
  group: 'file_store',
  options,
  fromImport: (body) => {
    // spec 1: `domain` is the server's host, plus ":port" if not 445; we also accept
    // "host[:port]/share" when no separate `share` is given.
    const domain = typeof body.domain === 'string' ? body.domain.trim().replace(/^smb:\/\//i, '').replace(/^\\\\/, '') : '';
    const [hostPort = '', ...rest] = domain.split(/[/\\]/);
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hostPort);
    return {
      host: m?.[1]?.replace(/^\[|\]$/g, '') ?? (hostPort || undefined),
      port: m?.[2] ?? body.port ?? undefined,
      share: body.share ?? (rest.filter(Boolean)[0] || undefined),
      workgroup: body.workgroup ?? undefined,
      username: body.account ?? '',
      password: body.token ?? '',
    };
  },
  describe: (o) => `${o.username || 'guest'}@${o.host}${o.port === 445 ? '' : `:${o.port}`}/${o.share}`,
  create: async (o): Promise<StorageConnector> => new (await import('./index')).SmbConnector(o),
});
