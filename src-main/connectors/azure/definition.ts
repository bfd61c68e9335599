/**
 * `azure` as registered: options, import mapping, description and endpoint, without the Azure
 * SDK, which index.ts imports and `create` loads on first use.
 */
import { defineConnector } from '../registry';
import type { StorageConnector } from '../types';
import { options, type AzureOptions } from './options';

/**
 * The Blob service URL of these options, by the SDK's rules for connection strings
 * (BlobEndpoint, else DefaultEndpointsProtocol://AccountName.blob.EndpointSuffix; the storage
 * emulator for UseDevelopmentStorage=true); test/unit/azure-endpoint.test.ts checks it against
 * the SDK itself.
 */
export function serviceUrl(o: AzureOptions): string {
  if (!o.connectionString) return (o.endpoint ?? `https://${o.accountName}.blob.core.windows.net`).replace(/\/+$/, '');
  const parts = new Map<string, string>();
  for (const pair of o.connectionString.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0) parts.set(pair.slice(0, eq).trim().toLowerCase(), pair.slice(eq + 1).trim());
  }
  if (parts.get('usedevelopmentstorage') === 'true') return `${parts.get('developmentstorageproxyuri') ?? 'http://127.0.0.1:10000'}/devstoreaccount1`;
  const blob = parts.get('blobendpoint');
  if (blob) return blob.replace(/\/+$/, '');
  const protocol = parts.get('defaultendpointsprotocol')?.toLowerCase();
  const account = parts.get('accountname');
  // The SDK refuses such a string too; the caller reads "no address" as a move.
  if (!protocol || !account) throw new Error('The connection string names no BlobEndpoint, DefaultEndpointsProtocol or AccountName.');
  return `${protocol}://${account}.blob.${parts.get('endpointsuffix') ?? 'core.windows.net'}`;
}

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

export default defineConnector<'storage', AzureOptions>({
  id: 'azure',
  name: 'Azure Blob Storage',
  kind: 'storage',
  group: 'object_store',
  options,
  // spec 1, Import: `token` is the account key, a SAS or a connection string, whichever was given.
  credentialsOf: (o) => ({ token: o.accountKey ?? o.sasToken ?? o.connectionString }),
  fromImport: (body) => {
    const token = str(body.token);
    const isConnectionString = token !== undefined && /AccountName=|BlobEndpoint=/i.test(token);
    const isSas = token !== undefined && !isConnectionString && /(^|[?&])sv=/.test(token);
    return {
      accountName: str(body.account),
      accountKey: token && !isSas && !isConnectionString ? token : undefined,
      sasToken: isSas ? token : undefined,
      connectionString: isConnectionString ? token : str(body.connection_string),
      endpoint: str(body.endpoint),
      container: str(body.container),
    };
  },
  // A connection string names its own BlobEndpoint (or AccountName and EndpointSuffix).
  endpoint: (o) => {
    const url = new URL(serviceUrl(o));
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  },
  describe: (o) => {
    const account = o.accountName ?? /AccountName=([^;]+)/i.exec(o.connectionString ?? '')?.[1] ?? 'azure';
    return `${o.container}@${account}`;
  },
  // The Azure SDK (about 25 MB in memory) is loaded with the first Azure account used.
  create: async (o): Promise<StorageConnector> => new (await import('./index')).AzureConnector(o),
});
