/**
 * SFTP downloads into a file (connector feature `readToFile`: the pipelined reads written into
 * the file from reused buffers, no stream stages in between), against the real OpenSSH sshd:
 * whole and resumed files byte-identical (spec 1, Files: "Download a file"), errors as a
 * streamed read gives them, and a server that dies mid-transfer is service_not_available, never
 * a short file taken for the whole one (spec 1, Errors).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { SftpConnector } from '../../src-main/connectors/sftp';
import type { ServiceError } from '../../src-main/errors';
import { startSshd, type Sshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('SFTP readToFile against OpenSSH (spec 1, Files: Download a file)', () => {
  let server: Sshd;
  let c: SftpConnector;
  let work: string;
  const data = randomBytes(24 * MiB + 5);
  const options = () => ({ host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir });

  beforeAll(async () => {
    server = await startSshd();
    work = scratchDir('sftp-to-file');
    c = new SftpConnector(options(), work);
    writeFileSync(join(server.dataDir, 'data.bin'), data);
    writeFileSync(join(server.dataDir, 'empty.bin'), '');
    mkdirSync(join(server.dataDir, 'folder'));
  });
  afterAll(async () => {
    await c?.close();
    await server?.stop();
  });

  it('writes the whole file byte-identical over what the file held, and counts every byte', async () => {
    const target = join(work, 'whole.bin');
    writeFileSync(target, Buffer.alloc(25 * MiB, 1)); // longer than the file: start 0 makes a new file
    let counted = 0;
    const n = await c.features.readToFile!('/data.bin', target, { onBytes: (b) => (counted += b) });
    expect(n).toBe(data.length);
    expect(counted).toBe(data.length);
    expect(sha(readFileSync(target))).toBe(sha(data));
  });

  it('goes on from a partial file of `start` bytes, prefix untouched; another start is left to a streamed read', async () => {
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

  it('a cancelled read rejects with request_timeout, also when cancelled while the file opens; the connection serves the next one', async () => {
    for (const delayMs of [0, 1, 20]) {
      const ac = new AbortController();
      const run = c.features.readToFile!('/data.bin', join(work, `cancelled-${delayMs}.bin`), { signal: ac.signal });
      setTimeout(() => ac.abort(), delayMs);
      await expect(run).rejects.toMatchObject({ code: 'request_timeout' });
    }
    expect(await c.features.readToFile!('/data.bin', join(work, 'after-cancel.bin'))).toBe(data.length);
  });

  it('a server killed mid-transfer is service_not_available, with fewer bytes on disk than the file has', async () => {
    const target = join(work, 'killed.bin');
    const run = c.features.readToFile!('/data.bin', target, { onBytes: () => void server.kill() });
    setTimeout(() => void server.kill(), 10);
    await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
    expect(existsSync(target) ? statSync(target).size : 0).toBeLessThan(data.length);
    await server.restart();
  });

  it('the downloader takes the file this way, byte-identical', async () => {
    const app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({ service: 'sftp', options: options() });
      const file = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'data.bin')!;
      const connector = await app.accounts.storage(acc.id);
      const readToFile = connector.features.readToFile!;
      let used = 0;
      connector.features.readToFile = (...a) => (used++, readToFile(...a));
      const target = join(work, 'downloaded.bin');
      await app.downloads.download({ accountId: acc.id, fileId: file.id, targetPath: target });
      expect(used).toBe(1);
      expect(sha(readFileSync(target))).toBe(sha(data));
    } finally {
      await app.close();
    }
  });
});
