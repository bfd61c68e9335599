// spec 1, Files and Folders: the conformance suite for `azure` on Azurite, with a memory account
// as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { AccountSASPermissions, BlobServiceClient } from '@azure/storage-blob';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { AzureConnector } from '../../src-main/connectors/azure';
import { startAzurite } from '../servers/azurite';
import { scratchDir } from '../servers/util';
import { describeStorageConformance, expectCode } from './storage-suite';

describeStorageConformance('azure (Azurite)', async () => {
  const server = await startAzurite();
  const dataDir = scratchDir('conf-azure');
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  const acc = await app.accounts.connect({ service: 'azure', options: server.options });
  const other = await app.accounts.connect({ service: 'memory', options: { store: `conf-az-${randomBytes(6).toString('hex')}` } });
  const container = BlobServiceClient.fromConnectionString(server.connectionString).getContainerClient(server.container);
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    // Fixtures straight into the container, 32 at a time (Azurite takes ~40 ms a blob): the
    // layout the connector reads, folders as their `<prefix>/` marker blobs.
    async seed(folder, entries) {
      const prefix = folder.replace(/^\/+|\/+$/g, '');
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < entries.length) {
            const e = entries[next++]!;
            const data = e.kind === 'folder' ? Buffer.alloc(0) : Buffer.from(e.content);
            await container.getBlockBlobClient(`${prefix}/${e.name}${e.kind === 'folder' ? '/' : ''}`).uploadData(data);
          }
        }),
      );
    },
    async teardown() {
      await app.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
});

// Azure specifics beyond the shared suite: credentials variants and error mapping.
describe('azure connector specifics', () => {
  it('connects with a SAS token (no upload URLs then) and with a connection string', async () => {
    const server = await startAzurite();
    try {
      const sasUrl = BlobServiceClient.fromConnectionString(server.connectionString).generateAccountSasUrl(new Date(Date.now() + 3600_000), AccountSASPermissions.parse('rwdlac'), 'sco');
      const sas = new URL(sasUrl).search.slice(1);
      const viaSas = new AzureConnector({ accountName: server.accountName, sasToken: sas, endpoint: server.endpoint, container: server.container });
      await viaSas.write('/sas.txt', Readable.from([Buffer.from('via sas')]), {});
      expect((await viaSas.list('/')).map((e) => e.name)).toContain('sas.txt');
      expect(viaSas.features.uploadUrl).toBeUndefined();
      const viaCs = new AzureConnector({ connectionString: server.connectionString, container: server.container });
      expect((await viaCs.stat('/sas.txt')).size).toBe(7);
      expect(viaCs.features.uploadUrl).toBeTypeOf('function');
    } finally {
      await server.stop();
    }
  });

  it('maps failures: wrong key → upstream_auth_failed, missing container → not_found naming it, server down → service_not_available', async () => {
    const server = await startAzurite();
    const wrongKey = new AzureConnector({ ...server.options, accountKey: Buffer.from('not the key').toString('base64') });
    await expectCode(wrongKey.list('/'), 'upstream_auth_failed');
    const noContainer = new AzureConnector({ ...server.options, container: 'no-such-container' });
    const e = await expectCode(noContainer.list('/'), 'not_found');
    expect(e.message).toMatch(/container "no-such-container" does not exist/);
    const ok = new AzureConnector(server.options);
    await expectCode(ok.stat('/missing.txt'), 'not_found');
    await server.stop();
    await expectCode(ok.list('/'), 'service_not_available');
  });
});
