// S3 multipart uploads left behind by a crash (docs/connectors.md, S3): a `write` big enough to go
// multipart is recorded in the data directory before its first part is sent; a process killed
// mid-write leaves the upload open on the server (moto), and the account's next start aborts it
// and removes the record. A write that completes, or is cancelled, leaves neither.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, ListPartsCommand, S3Client, UploadPartCopyCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Connector } from '../../src-main/connectors/s3';
import { DEFAULT_PART, MiB } from '../../src-main/connectors/shared/parts';
import { motoBinary, startMoto, type S3Server } from '../servers/s3';
import { runTsChild, scratchDir } from '../servers/util';

/** Runs the child to its end, or with `killWhen`, SIGKILLs it once that says so (polled). */
const child = (args: string[], killWhen?: (out: string) => Promise<boolean>) => runTsChild('test/conformance/s3-crash-child.ts', args, { killWhen });

describe.skipIf(!motoBinary())('S3 multipart uploads after a crash (moto)', () => {
  let moto: S3Server;
  let admin: S3Client;
  beforeAll(async () => {
    moto = await startMoto();
    admin = new S3Client({ endpoint: moto.endpoint, region: moto.region, forcePathStyle: true, credentials: moto });
  });
  afterAll(async () => {
    admin?.destroy();
    await moto?.stop();
  });

  const openUploads = async () => (await admin.send(new ListMultipartUploadsCommand({ Bucket: moto.bucket }))).Uploads ?? [];
  const records = (dataDir: string) => {
    const dir = join(dataDir, 'connectors', 's3', 'uploads');
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  /** Whether an upload of `key` is open with at least one part on the server. */
  const partSent = async (key: string) => {
    const u = (await openUploads()).find((x) => x.Key === key);
    return !!u && ((await admin.send(new ListPartsCommand({ Bucket: moto.bucket, Key: key, UploadId: u.UploadId }))).Parts ?? []).length > 0;
  };

  it('a kill mid-write leaves the upload open; the next start aborts it and removes its record', async () => {
    const dataDir = scratchDir('s3-crash');
    const options = JSON.stringify(moto.options);
    const first = await child([dataDir, options, 'stall'], async (out) => out.includes('STALLED') && (await partSent('big.bin')));
    expect(first.killed).toBe(true);
    expect((await openUploads()).map((u) => u.Key)).toEqual(['big.bin']);
    expect(records(dataDir)).toHaveLength(1);

    const second = await child([dataDir, options]);
    expect(second.out).toContain('ABORTED 1');
    expect(await openUploads()).toEqual([]);
    expect(records(dataDir)).toEqual([]);
  });

  it("a record whose upload is gone (NoSuchUpload) counts as done; other accounts' records and uploads are left alone", async () => {
    const dataDir = scratchDir('s3-crash');
    const dir = join(dataDir, 'connectors', 's3', 'uploads');
    mkdirSync(dir, { recursive: true });
    const record = (account: number, uploadId: string) => JSON.stringify({ bucket: moto.bucket, key: 'x.bin', uploadId, account, startedAt: new Date().toISOString(), process: 'earlier' });
    const { UploadId } = await admin.send(new CreateMultipartUploadCommand({ Bucket: moto.bucket, Key: 'x.bin' }));
    writeFileSync(join(dir, '1-gone.json'), record(1, 'no-such-upload-id'));
    writeFileSync(join(dir, '2-other.json'), record(2, UploadId!));
    const s3 = new S3Connector(moto.options, { dataDir, accountId: 1 });
    try {
      expect(await s3.abandonedAborted).toBe(1);
      expect(records(dataDir)).toEqual(['2-other.json']);
      expect((await openUploads()).map((u) => u.UploadId)).toEqual([UploadId]);
    } finally {
      await s3.close();
      await new S3Connector(moto.options, { dataDir, accountId: 2 }).abandonedAborted;
    }
    expect(await openUploads()).toEqual([]);
  });

  it('a write is recorded while its parts are sent and leaves no record or open upload once complete', async () => {
    const dataDir = scratchDir('s3-crash');
    const s3 = new S3Connector(moto.options, { dataDir, accountId: 1 });
    let seenDuringWrite: string[] = [];
    async function* body(): AsyncGenerator<Buffer> {
      // One byte past a part: lib-storage sends a part once it knows it is not the last one.
      yield Buffer.alloc(DEFAULT_PART + 1, 1);
      // The first part reached the server: CreateMultipartUpload had returned, so its record exists.
      for (let i = 0; i < 200 && !(await partSent('done.bin')); i++) await new Promise((r) => setTimeout(r, 50));
      seenDuringWrite = records(dataDir);
      yield Buffer.alloc(MiB - 1, 2);
    }
    try {
      const entry = await s3.write('/done.bin', Readable.from(body()), { size: DEFAULT_PART + MiB });
      expect(entry.size).toBe(DEFAULT_PART + MiB);
      expect(seenDuringWrite).toHaveLength(1);
      expect(records(dataDir)).toEqual([]);
      expect(await openUploads()).toEqual([]);
    } finally {
      await s3.close();
    }
  });

  it('a multipart copy (above CopyObject\'s limit; here in 5 MiB ranges) is recorded while its parts are copied, and leaves no record once complete', async () => {
    const dataDir = scratchDir('s3-crash');
    const s3 = new S3Connector(moto.options, { dataDir, accountId: 1 });
    const seen: string[][] = [];
    const send = s3.client.send.bind(s3.client) as (command: unknown) => Promise<unknown>;
    s3.client.send = ((command: unknown) => {
      if (command instanceof UploadPartCopyCommand) seen.push(records(dataDir));
      return send(command);
    }) as S3Client['send'];
    try {
      await s3.write('/source.bin', Readable.from([Buffer.alloc(6 * MiB, 4)]), { size: 6 * MiB });
      await s3.copyLarge('source.bin', 'copy.bin', 6 * MiB, 5 * MiB);
      expect((await s3.stat('/copy.bin')).size).toBe(6 * MiB);
      expect(seen.map((r) => r.length)).toEqual([1, 1]);
      expect(records(dataDir)).toEqual([]);
      expect(await openUploads()).toEqual([]);
    } finally {
      await s3.close();
    }
  });

  it('a write cancelled while its body waits aborts its upload and removes its record', async () => {
    const dataDir = scratchDir('s3-crash');
    const s3 = new S3Connector(moto.options, { dataDir, accountId: 1 });
    const cancel = new AbortController();
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(DEFAULT_PART + 1, 3);
      await new Promise(() => {});
    }
    try {
      const writing = s3.write('/cancelled.bin', Readable.from(body()), { size: DEFAULT_PART + MiB, signal: cancel.signal });
      writing.catch(() => {});
      for (let i = 0; i < 200 && !(await partSent('cancelled.bin')); i++) await new Promise((r) => setTimeout(r, 50));
      expect(records(dataDir)).toHaveLength(1);
      cancel.abort();
      await expect(writing).rejects.toThrow();
      expect(await openUploads()).toEqual([]);
      expect(records(dataDir)).toEqual([]);
    } finally {
      await s3.close();
    }
  });
});
