// spec 1, Files and Folders: the conformance suite on the `webdav` connector against a real
// Apache mod_dav_fs (test/servers/apache.ts), with memory and local accounts as the other
// sides of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from '../../src-main/app';
import { startApache } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

describeStorageConformance('webdav (Apache mod_dav_fs)', async () => {
  const server = await startApache();
  const dir = scratchDir('conf-webdav');
  const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const acc = await app.accounts.connect({
    service: 'webdav',
    options: { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password },
  });
  const memory = await app.accounts.connect({ service: 'memory', options: { store: `conf-webdav-${randomBytes(6).toString('hex')}` } });
  const localRoot = scratchDir('conf-webdav-local');
  const local = await app.accounts.connect({ service: 'local', options: { path: localRoot, trashDir: join(dir, 'Trash') } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [memory.id, local.id],
    async teardown() {
      await app.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(localRoot, { recursive: true, force: true });
    },
  };
});
