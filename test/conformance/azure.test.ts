// spec 1, Files and Folders: the conformance suite for `azure` on Azurite, with a memory account
// as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createApp } from '../../src-main/app';
import { startAzurite } from '../servers/azurite';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

describeStorageConformance('azure (Azurite)', async () => {
  const server = await startAzurite();
  const dataDir = scratchDir('conf-azure');
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  const acc = await app.accounts.connect({ service: 'azure', options: server.options });
  const other = await app.accounts.connect({ service: 'memory', options: { store: `conf-az-${randomBytes(6).toString('hex')}` } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    async teardown() {
      await app.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
});
