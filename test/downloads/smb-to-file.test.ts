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
import { ServiceError } from '../../src-main/errors';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
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

  it('writes the whole file byte-identical over what the file held, and counts every byte', async () => {
    const target = join(work, 'whole.bin');
    writeFileSync(target, Buffer.alloc(7 * MiB, 1)); // longer than the file: start 0 makes a new file
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
      const streamed = await c.read(path).then(() => 'read', (e: ServiceError) => e.code);
      expect(streamed).not.toBe('read');
      const into = join(work, `${path.slice(1)}.out`);
      await expect(c.features.readToFile!(path, into)).rejects.toMatchObject({ code: streamed });
      expect(existsSync(into)).toBe(false);
    }
  });

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
