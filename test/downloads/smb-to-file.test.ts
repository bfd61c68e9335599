/**
 * SMB downloads into a file (connector feature `readToFile`: smbclient's `get` / `reget` writes
 * the file itself, no pipe into this process), against a real Samba: whole and resumed files
 * byte-identical (spec 1, Files: "Download a file"), errors as a streamed read gives them, and a
 * server that dies mid-transfer is service_not_available, never a short file taken for the
 * whole one (spec 1, Errors).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { SmbConnector } from '../../src-main/connectors/smb';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { readToFileContract } from './read-to-file-contract';
import { scratchDir, until } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('SMB readToFile against Samba (spec 1, Files: Download a file)', () => {
  let server: Samba;
  let c: SmbConnector;
  let work: string;
  const data = randomBytes(6 * MiB + 5);

  beforeAll(async () => {
    server = await startSamba();
    c = new SmbConnector(smbOptionsFor(server));
    work = scratchDir('smb-to-file');
    writeFileSync(join(server.shareDir, 'data.bin'), data);
    writeFileSync(join(server.shareDir, 'empty.bin'), '');
    mkdirSync(join(server.shareDir, 'folder'));
  });
  afterAll(async () => {
    await c?.close();
    await server?.stop();
  });

  /**
   * The transfer's own smbclient (a child of this process that is not a session), looked for
   * every few ms from its start, so that it is found while it still logs in.
   */
  const transferPid = async () => {
    const children = () => readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').split(' ').map(Number);
    const comm = (p: number) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim();
      } catch {
        return ''; // gone already
      }
    };
    return until(() => children().find((p) => p > 0 && !c.sessionPids().includes(p) && comm(p) === 'smbclient'), 10_000, "the transfer's smbclient");
  };

  readToFileContract(() => ({ c, work, data }));

  it('a cancelled read stops its smbclient and rejects', async () => {
    const ac = new AbortController();
    const target = join(work, 'cancelled.bin');
    const run = c.features.readToFile!('/data.bin', target, { signal: ac.signal });
    const pid = await transferPid();
    process.kill(pid, 'SIGSTOP');
    ac.abort();
    await expect(run).rejects.toMatchObject({ code: 'request_timeout' });
    // Ended (and reaped) by the time the read rejects.
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('a server killed mid-transfer is service_not_available, with fewer bytes on disk than the file has', async () => {
    const target = join(work, 'killed.bin');
    const run = c.features.readToFile!('/data.bin', target);
    // The transfer is held before its first bytes, the server killed under it, then let go.
    const pid = await transferPid();
    process.kill(pid, 'SIGSTOP');
    await server.kill();
    process.kill(pid, 'SIGCONT');
    await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
    expect(existsSync(target) ? statSync(target).size : 0).toBeLessThan(data.length);
    await server.restart();
  });

  it('the downloader takes the file this way, byte-identical', async () => {
    const app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({ service: 'smb', options: smbOptionsFor(server) });
      const file = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'data.bin')!;
      const target = join(work, 'downloaded.bin');
      await app.downloads.download({ accountId: acc.id, fileId: file.id, targetPath: target });
      expect(sha(readFileSync(target))).toBe(sha(data));
    } finally {
      await app.close();
    }
  });
});
