// spec 1, Files and Folders: the conformance suite on the reference backend, with a local
// account (temp folder) as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

describeStorageConformance('memory', async () => {
  const dataDir = scratchDir('conf-memory');
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  const acc = await app.accounts.connect({ service: 'memory', options: { store: `conf-${randomBytes(6).toString('hex')}` } });
  const localRoot = scratchDir('conf-memory-local');
  const other = await app.accounts.connect({ service: 'local', options: { path: localRoot, trashDir: join(dataDir, 'Trash') } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    async teardown() {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(localRoot, { recursive: true, force: true });
    },
  };
});
