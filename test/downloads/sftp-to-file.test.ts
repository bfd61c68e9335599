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
import { startSshd, type Sshd } from '../servers/sshd';
import { readToFileContract } from './read-to-file-contract';
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

  readToFileContract(() => ({ c, work, data }));

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
