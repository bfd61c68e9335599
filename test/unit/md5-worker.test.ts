/**
 * Whole-file MD5 off the event loop (the uploader's check of an assembled object against a
 * whole-file MD5, spec 1, Storage: upload; the sync scan's content hash): the right digest, the
 * file system's error code, and a hash stopped when it is no longer needed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { md5OfWholeFile } from '../../src-main/connectors/shared/md5';

const dir = mkdtempSync(join(tmpdir(), 'md5-worker-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('md5OfWholeFile', () => {
  it('hashes the whole file, across many 1 MiB reads', async () => {
    const data = randomBytes(5 * (1 << 20) + 123);
    const file = join(dir, 'five.bin');
    writeFileSync(file, data);
    expect((await md5OfWholeFile(file)).toString('hex')).toBe(createHash('md5').update(data).digest('hex'));
  });

  it('keeps the file system error code', async () => {
    await expect(md5OfWholeFile(join(dir, 'missing.bin'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('stops between reads when its signal aborts, rejecting with the reason', async () => {
    const file = join(dir, 'big.bin');
    writeFileSync(file, Buffer.alloc(256 * (1 << 20), 7));
    const ac = new AbortController();
    const hashing = md5OfWholeFile(file, ac.signal);
    ac.abort(new Error('not needed'));
    await expect(hashing).rejects.toThrow('not needed');
    // The worker is free again and gives whole answers after a stop.
    const small = join(dir, 'small.bin');
    writeFileSync(small, 'abc');
    expect((await md5OfWholeFile(small)).toString('hex')).toBe('900150983cd24fb0d6963f7d28e17f72');
  });

  it('rejects at once with a signal already aborted', async () => {
    await expect(md5OfWholeFile(join(dir, 'five.bin'), AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });
});
