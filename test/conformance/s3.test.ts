// spec 1, Files and Folders: the conformance suite for `s3`, on s3rver and (when installed) moto,
// with a memory account as the other side of cross-account copy and move.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createApp } from '../../src-main/app';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';
import { describeStorageConformance } from './storage-suite';

function setupOn(start: () => Promise<S3Server>) {
  return async () => {
    const server = await start();
    const dataDir = scratchDir('conf-s3');
    const app = await createApp({ dataDir, defaultLocalFolder: false });
    const acc = await app.accounts.connect({ service: 's3', options: server.options });
    const other = await app.accounts.connect({ service: 'memory', options: { store: `conf-s3-${randomBytes(6).toString('hex')}` } });
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
  };
}

describeStorageConformance('s3 (s3rver)', setupOn(() => startS3rver()));
// moto is preinstalled on these machines (notes/test-servers.md §4); a missing binary fails loudly.
describeStorageConformance('s3 (moto)', setupOn(() => startMoto()));
