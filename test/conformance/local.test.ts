// spec 1, Files and Folders: the conformance suite on the `local` connector (a temp folder,
// a temp trash), with a memory account as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

describeStorageConformance('local', async () => {
  const dir = scratchDir('conf-local');
  const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const root = scratchDir('conf-local-root');
  const acc = await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(dir, 'Trash') } });
  const other = await app.accounts.connect({ service: 'memory', options: { store: `conf-local-${randomBytes(6).toString('hex')}` } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    async teardown() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    },
  };
});
