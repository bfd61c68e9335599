// The Azure definition (registered without the SDK) works out the account's endpoint as the SDK
// does, so that a changed connection string is seen as a move (spec 1, "Update an account").
import { describe, expect, it } from 'vitest';
import definition from '../../src-main/connectors/azure/definition';
import type { AzureOptions } from '../../src-main/connectors/azure/options';
import { sdkServiceUrl } from '../../src-main/connectors/azure';

const key = Buffer.from('key').toString('base64');
const cases: AzureOptions[] = [
  { container: 'c', connectionString: `DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=${key};BlobEndpoint=http://127.0.0.1:10100/dev;` },
  { container: 'c', connectionString: `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${key};EndpointSuffix=core.chinacloudapi.cn` },
  { container: 'c', connectionString: `BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2024-01-01&sig=abc` },
  { container: 'c', connectionString: 'UseDevelopmentStorage=true' },
  { container: 'c', accountName: 'acme', accountKey: key },
  { container: 'c', accountName: 'acme', sasToken: 'sv=2024-01-01&sig=abc', endpoint: 'https://blobs.example.test/acme/' },
];

describe('azure endpoint without the SDK', () => {
  it.each(cases.map((o) => [o.connectionString ?? `${o.accountName} ${o.endpoint ?? ''}`, o] as const))('%s', (_, o) => {
    const url = new URL(sdkServiceUrl(o));
    expect(definition.endpoint!(o)).toBe(`${url.origin}${url.pathname.replace(/\/+$/, '')}`);
  });
  it('refuses what the SDK refuses: a key without a protocol or an endpoint', () => {
    const o: AzureOptions = { container: 'c', connectionString: `AccountName=acme;AccountKey=${key}` };
    expect(() => sdkServiceUrl(o)).toThrow();
    expect(() => definition.endpoint!(o)).toThrow();
  });
});
