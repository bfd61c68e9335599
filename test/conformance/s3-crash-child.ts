/**
 * Child process for the S3 crash tests: one `s3` account (id 1) on a data directory.
 * `node scripts/run-ts.mjs test/conformance/s3-crash-child.ts <dataDir> <json options> [stall]`;
 * prints ABORTED <n> once the uploads an earlier run left open are dealt with. With `stall`, it
 * then writes /big.bin, whose body gives one whole part (8 MiB) and a byte and waits forever, so
 * that a kill finds a multipart upload open with a part on the server; without it, it exits.
 */
import { Readable } from 'node:stream';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { S3Connector } from '../../src-main/connectors/s3';
import { DEFAULT_PART, MiB } from '../../src-main/connectors/shared/parts';

export async function main([dataDir, options, mode]: string[]): Promise<void> {
  await loadConnectors();
  const def = connectorDefinition('s3');
  const s3 = (await def.create(parseOptions(def, JSON.parse(options!)), { dataDir: dataDir!, accountId: 1 })) as S3Connector;
  process.stdout.write(`ABORTED ${await s3.abandonedAborted}\n`);
  if (mode === 'stall') {
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(DEFAULT_PART + 1, 7);
      process.stdout.write('STALLED\n');
      // Waits to be killed: a timer keeps the process up once the part's request is done.
      setInterval(() => {}, 60_000);
      await new Promise(() => {});
    }
    await s3.write('/big.bin', Readable.from(body()), { size: DEFAULT_PART + MiB });
  }
  await s3.close();
}
