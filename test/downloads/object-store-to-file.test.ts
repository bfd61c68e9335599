/**
 * S3 and Azure Blob downloads into a file in ranges (connector feature `readToFile` with `end`),
 * against s3rver, moto and Azurite: the ranges part of readToFile's contract
 * (read-to-file-contract.ts), a whole read left to the caller's stream, and the desktop downloader
 * reading a big object as 4 ranges at once, byte-identical (spec 1, Files: "Download").
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { AzureConnector } from '../../src-main/connectors/azure';
import { S3Connector } from '../../src-main/connectors/s3';
import type { ReadToFileOptions, StorageConnector, StorageFeatures } from '../../src-main/connectors/types';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, startS3rver, type S3Server } from '../servers/s3';
import { readRangesContract } from './read-to-file-contract';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const servers = {
  s3rver: { start: () => startS3rver('to-file'), connect: (s: S3Server) => new S3Connector(s.options), service: 's3' },
  moto: { start: () => startMoto('to-file'), connect: (s: S3Server) => new S3Connector(s.options), service: 's3' },
  azurite: { start: () => startAzurite('to-file'), connect: (s: AzuriteServer) => new AzureConnector(s.options), service: 'azure' },
} as const;

for (const [name, server] of Object.entries(servers)) {
  describe(`${name}: readToFile (spec 1, Files: Download)`, () => {
    let running: S3Server | AzuriteServer;
    let c: StorageConnector;
    let work: string;
    const data = randomBytes(12 * MiB + 5);

    beforeAll(async () => {
      running = await server.start();
      c = (server.connect as (s: S3Server | AzuriteServer) => StorageConnector)(running);
      work = scratchDir(`${name}-to-file`);
      await c.write('/data.bin', Readable.from([data]), { size: data.length });
      await c.write('/empty.bin', Readable.from([]), { size: 0 });
      await c.mkdir('/folder');
    }, 60_000);

    afterAll(async () => {
      await c?.close?.();
      await running?.stop();
    });

    readRangesContract(() => ({ c, work, data }));

    it('a whole read, or one on to the end, is left to the caller\'s stream: null, nothing written', async () => {
      const target = join(work, 'whole.bin');
      expect(await c.features.readToFile!('/data.bin', target)).toBeNull();
      expect(await c.features.readToFile!('/data.bin', target, { start: 5 })).toBeNull();
      expect(existsSync(target)).toBe(false);
    });

    it('the downloader reads a big object as 4 ranges at once, byte-identical', async () => {
      const app = await createApp({ dataDir: join(work, 'app'), defaultLocalFolder: false, downloads: { parallel: { cutoff: 4 * MiB, ranges: 4 } } });
      try {
        const account = (await app.accounts.connect({ service: server.service, options: running.options })).id;
        const file = (await app.storage.list(account, 'root')).items.find((i) => i.name === 'data.bin')!;
        const { connector } = await app.storage.locate(account, file.id);
        const features = connector.features as StorageFeatures;
        const readToFile = features.readToFile!.bind(features);
        const asked: [number, number | undefined][] = [];
        features.readToFile = (path: string, into: string, o?: ReadToFileOptions) => (asked.push([o?.start ?? 0, o?.end]), readToFile(path, into, o));
        const target = join(work, 'downloaded.bin');
        await app.downloads.download({ accountId: account, fileId: file.id, targetPath: target });
        expect(sha(readFileSync(target))).toBe(sha(data));
        expect(asked.sort((a, b) => a[0] - b[0])).toEqual([
          [0, 4 * MiB],
          [4 * MiB, 8 * MiB],
          [8 * MiB, 12 * MiB],
          [12 * MiB, data.length],
        ]);
      } finally {
        await app.close();
      }
    });
  });
}
