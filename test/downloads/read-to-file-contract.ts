/**
 * What a connector's `readToFile` (docs/connectors.md) must do, run against each real server by
 * its own test file. `readToFileContract`: the whole file byte-identical over what the target
 * held, every byte counted; a partial file of `start` bytes gone on from with its prefix untouched
 * (spec 1, Files: "Download a file"); the same errors as a streamed read (spec 1, Errors).
 * `readRangesContract`, for connectors with `readRangesToFile`: ranges [start, end) written into
 * the existing file at their offsets, alone and several at once. The server holds `/data.bin`
 * (`data`), and for the first an empty `/empty.bin` and a folder `/folder`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { StorageConnector } from '../../src-main/connectors/types';
import type { ServiceError } from '../../src-main/errors';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

type Ctx = () => { c: StorageConnector; work: string; data: Buffer };

export function readToFileContract(ctx: Ctx): void {
  it('writes the whole file byte-identical over what the file held, and counts every byte', async () => {
    const { c, work, data } = ctx();
    const target = join(work, 'whole.bin');
    writeFileSync(target, Buffer.alloc(data.length + MiB, 1)); // longer than the file: start 0 makes a new file
    let counted = 0;
    const n = await c.features.readToFile!('/data.bin', target, { onBytes: (b) => (counted += b) });
    expect(n).toBe(data.length);
    expect(counted).toBe(data.length);
    expect(sha(readFileSync(target))).toBe(sha(data));
  });

  it('goes on from a partial file of `start` bytes, prefix untouched; another start is left to a streamed read', async () => {
    const { c, work, data } = ctx();
    for (const start of [1, 3 * MiB + 7, data.length - 1]) {
      const target = join(work, `resumed-${start}.bin`);
      const prefix = Buffer.from(data.subarray(0, start));
      prefix[0] ^= 0xff; // a download that fetched from 0 would overwrite it
      writeFileSync(target, prefix);
      expect(await c.features.readToFile!('/data.bin', target, { start })).toBe(data.length - start);
      const got = readFileSync(target);
      expect(got[0]).toBe(data[0]! ^ 0xff);
      expect(sha(got.subarray(1))).toBe(sha(data.subarray(1)));
    }
    const short = join(work, 'short.bin');
    writeFileSync(short, data.subarray(0, 10));
    expect(await c.features.readToFile!('/data.bin', short, { start: 20 })).toBeNull();
    expect(statSync(short).size).toBe(10);
  });

  it('an empty file gives an empty file; a missing one or a folder the same error as a streamed read (spec 1, Errors)', async () => {
    const { c, work } = ctx();
    const target = join(work, 'empty.bin');
    expect(await c.features.readToFile!('/empty.bin', target)).toBe(0);
    expect(statSync(target).size).toBe(0);
    for (const path of ['/missing.bin', '/folder']) {
      const streamed = await c.read(path).then(
        () => 'read',
        (e: ServiceError) => e.code,
      );
      expect(streamed).not.toBe('read');
      const into = join(work, `${path.slice(1)}.out`);
      await expect(c.features.readToFile!(path, into)).rejects.toMatchObject({ code: streamed });
      expect(existsSync(into)).toBe(false);
    }
  });
}

/** A connector with `readRangesToFile`: `readToFile` with an `end` (docs/connectors.md). */
export function readRangesContract(ctx: Ctx): void {
  it('a range [start, end) changes only its bytes of the file, and ranges read at once make the file', async () => {
    const { c, work, data } = ctx();
    expect(c.features.readRangesToFile).toBe(true);
    const target = join(work, 'ranges.bin');
    const marked = Buffer.alloc(data.length, 0xa5);
    writeFileSync(target, marked);
    for (const [start, end] of [[0, 1], [MiB + 1, 5 * MiB], [data.length - 1, data.length]] as const) {
      let counted = 0;
      expect(await c.features.readToFile!('/data.bin', target, { start, end, onBytes: (b) => (counted += b) })).toBe(end - start);
      expect(counted).toBe(end - start);
      data.copy(marked, start, start, end);
      expect(sha(readFileSync(target))).toBe(sha(marked));
    }
    const together = join(work, 'together.bin');
    writeFileSync(together, '');
    const cuts = [0, 3 * MiB + 1, 6 * MiB, 9 * MiB + 7, data.length];
    const reads = cuts.slice(1).map((end, i) => c.features.readToFile!('/data.bin', together, { start: cuts[i], end }));
    expect(await Promise.all(reads)).toEqual(cuts.slice(1).map((end, i) => end - cuts[i]!));
    expect(sha(readFileSync(together))).toBe(sha(data));
  });
}
