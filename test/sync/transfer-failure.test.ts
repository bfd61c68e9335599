/**
 * A sync transfer whose write fails part-way (docs/sync.md, Remote changes: a failed run is tried
 * again on its own) lets go of what it was reading at once: the local file it read is closed when
 * the run ends, not whenever the garbage collector finds its handle. The memory connector is the
 * reference backend; its write here takes one chunk and then fails, as a server that dies would.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MemoryConnector } from '../../src-main/connectors/memory';
import type { StorageConnector } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { scratchDir, until } from '../servers/util';
import { pairEngine, syncDb } from './scenario';

/** The open descriptors of this process that point at `file`. */
const openOn = (file: string) =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });

describe('a sync transfer that fails part-way', () => {
  it('closes the local file it was reading when the run ends', async () => {
    const work = scratchDir('sync-transfer-failure');
    const local = join(work, 'local');
    mkdirSync(local);
    const file = join(local, 'big.bin');
    writeFileSync(file, randomBytes(8 << 20));
    const remote = new MemoryConnector('sync-transfer-failure');
    let attempts = 0;
    const failing: StorageConnector = Object.assign(Object.create(remote) as StorageConnector, {
      write: async (_path: string, body: Readable) => {
        attempts++;
        for await (const _chunk of body) break;
        throw new ServiceError('service_not_available', 'The server went away.');
      },
    });
    const { engine, pair } = await pairEngine(syncDb(), failing, local, '/', join(work, 'trash'));
    try {
      await engine.run(pair.id).catch(() => {});
      expect(attempts).toBeGreaterThan(0);
      // Closing takes a trip through the I/O pool: a moment (milliseconds), while a handle left to
      // the collector stayed open for seconds here.
      await until(() => openOn(file).length === 0 || undefined, 500, 'the local file closed').catch(() => {});
      expect(openOn(file)).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
