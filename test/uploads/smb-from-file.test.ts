/**
 * SMB uploads from a file on this computer (connector feature `writeFile`: smbclient's own `put`
 * reads the file, no pipe from this process), against a real Samba: byte-identical files under
 * any name SMB allows (spec 1, Files: "Upload a file"), the no-replace publish, progress while
 * the file goes, cancel, and a server killed mid-transfer (spec 1, Errors): never a partial file
 * under the final name, and no temporary file left behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { SmbConnector } from '../../src-main/connectors/smb';
import { SyncEngine } from '../../src-main/sync/engine';
import { remoteDiff } from '../../src-main/sync/remote-watch';
import { loadIgnore } from '../../src-main/sync/scan';
import { syncDb } from '../sync/scenario';
import { TEMP_NAME } from '../../src-main/connectors/shared/paths';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { startThrottle, type Throttle } from '../servers/throttle';
import { scratchDir, until } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('SMB writeFile against Samba (spec 1, Files: Upload a file)', () => {
  let server: Samba;
  let c: SmbConnector;
  let work: string;
  /** Uploads through this proxy reach the server at 4 MiB/s: slow enough to watch. */
  let throttle: Throttle;
  let slow: SmbConnector;
  const big = randomBytes(10 * MiB + 3);
  let bigFile: string;

  beforeAll(async () => {
    server = await startSamba();
    c = new SmbConnector(smbOptionsFor(server));
    throttle = await startThrottle(server.port, 4 * MiB);
    slow = new SmbConnector(smbOptionsFor(server, { port: throttle.port }));
    work = scratchDir('smb-from-file');
    bigFile = join(work, 'big.bin');
    writeFileSync(bigFile, big);
  });
  afterAll(async () => {
    await slow?.close();
    await c?.close();
    await throttle?.stop();
    await server?.stop();
  });

  /** The share's names, temporary files included. */
  const shareNames = () => readdirSync(server.shareDir);
  const temps = () => shareNames().filter((n) => TEMP_NAME.test(n));

  it('sizes 0, 1, 3 MiB + 7 (on a session) and 6 MiB + 5 (its own smbclient) arrive byte-identical, counted to the byte', async () => {
    for (const size of [0, 1, 3 * MiB + 7, 6 * MiB + 5]) {
      const data = randomBytes(size);
      const local = join(work, `size-${size}.bin`);
      writeFileSync(local, data);
      let counted = 0;
      const entry = await c.features.writeFile!(`/size-${size}.bin`, local, { onBytes: (n) => (counted += n) });
      expect(entry).toMatchObject({ path: `/size-${size}.bin`, kind: 'file', size });
      expect(counted).toBe(size);
      expect(sha(readFileSync(join(server.shareDir, `size-${size}.bin`)))).toBe(sha(data));
    }
    expect(temps()).toEqual([]);
  });

  it('names with spaces and unicode, on both sides, and over an existing file', async () => {
    const data = randomBytes(5 * MiB + 1);
    const local = join(work, 'local name é ü 日本.bin');
    writeFileSync(local, data);
    for (const name of ['a name with  spaces.bin', 'ünïcödé 日本語 ☃.bin']) {
      writeFileSync(join(server.shareDir, name), 'older and different');
      const entry = await c.features.writeFile!(`/${name}`, local);
      expect(entry).toMatchObject({ name, size: data.length });
      expect(sha(readFileSync(join(server.shareDir, name)))).toBe(sha(data));
    }
    expect(temps()).toEqual([]);
  });

  it('noReplace: a taken name is naming_conflict with the file there untouched, or goes to the next name (spec 1, Upload a file: conflict)', async () => {
    for (const size of [10, 5 * MiB]) {
      const local = join(work, `conflict-${size}.bin`);
      writeFileSync(local, randomBytes(size));
      writeFileSync(join(server.shareDir, `taken-${size}.bin`), 'theirs');
      await expect(c.features.writeFile!(`/taken-${size}.bin`, local, { noReplace: {} })).rejects.toMatchObject({ code: 'naming_conflict' });
      expect(readFileSync(join(server.shareDir, `taken-${size}.bin`), 'utf8')).toBe('theirs');
      const entry = await c.features.writeFile!(`/taken-${size}.bin`, local, { noReplace: { next: async () => `/taken-${size} (1).bin` } });
      expect(entry).toMatchObject({ path: `/taken-${size} (1).bin`, size });
      expect(readFileSync(join(server.shareDir, `taken-${size}.bin`), 'utf8')).toBe('theirs');
    }
    expect(temps()).toEqual([]);
  });

  it('reports progress before the end: the bytes smbclient has got to the server of a 10 MiB file', async () => {
    const seen: number[] = [];
    let counted = 0;
    let finished = false;
    // Never ahead of what the server got: what the proxy forwarded (reported every 50 ms), plus
    // its own buffers (64 KiB of socket, a 200 KiB read) and 50 ms of its pace. smbclient's read
    // position in the file runs up to 16 MiB ahead, its written bytes ~4 MiB (its send queue).
    const ahead: number[] = [];
    const run = slow.features.writeFile!('/progress.bin', bigFile, {
      onBytes: (n) => {
        counted += n;
        if (finished) return;
        seen.push(counted);
        ahead.push(counted - throttle.forwarded());
      },
    });
    const entry = await run.finally(() => (finished = true));
    expect(entry.size).toBe(big.length);
    // Counts seen while the upload ran, short of the end (4 MiB/s: about 2.5 s of 250 ms polls).
    expect(seen.filter((n) => n > 0 && n < big.length).length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...ahead.slice(0, -1))).toBeLessThan(1 * MiB);
    expect(counted).toBe(big.length);
    expect(sha(readFileSync(join(server.shareDir, 'progress.bin')))).toBe(sha(big));
  });

  it('a cancel mid-upload kills smbclient and leaves neither the file nor a temporary file', async () => {
    const ac = new AbortController();
    let counted = 0;
    const run = slow.features.writeFile!('/cancelled.bin', bigFile, { signal: ac.signal, onBytes: (n) => (counted += n) });
    run.catch(() => {});
    await until(() => counted > 0 || undefined, 20_000, 'progress');
    ac.abort();
    await expect(run).rejects.toMatchObject({ code: 'request_timeout' });
    expect(shareNames()).not.toContain('cancelled.bin');
    expect(temps()).toEqual([]);
  });

  it('a server killed mid-upload is service_not_available, also behind a hop that still takes connections; after a restart the file is not there', async () => {
    // Through the proxy the put lasts seconds, so the kill lands mid-way; smbclient then reports
    // only what the broken exchange left, and the port still takes connections with the server gone.
    let killing: Promise<void> | undefined;
    let counted = 0;
    const run = slow.features.writeFile!('/killed.bin', bigFile, { onBytes: (n) => ((counted += n), void (killing ??= server.kill())) });
    await expect(run).rejects.toMatchObject({ code: 'service_not_available', message: expect.stringContaining('not reachable') });
    expect(counted).toBeLessThan(big.length);
    await killing;
    await server.restart();
    expect(shareNames()).not.toContain('killed.bin');
  });
});

describe('The uploader, and a copy from a local folder, send a file to SMB with smbclient put, showing progress (spec 1, Files: Upload a file)', () => {
  it('byte-identical, with progress in Transfers before the end', async () => {
    const server = await startSamba();
    const throttle = await startThrottle(server.port, 4 * MiB);
    const work = scratchDir('smb-uploader');
    const app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
    try {
      const data = randomBytes(10 * MiB + 3);
      const local = join(work, 'up load.bin');
      writeFileSync(local, data);
      const acc = await app.accounts.connect({ service: 'smb', options: smbOptionsFor(server, { port: throttle.port }) });
      const upload = app.uploads.uploader.upload({ accountId: acc.id, parentId: 'root', localPath: local });
      // smbclient reads the file itself (a streamed upload's smbclient reads a pipe).
      await until(() => smbclientReading(local), 20_000, 'an smbclient with the file open');
      const during = await until(() => app.transfers.list().find((t) => t.name === 'up load.bin' && !t.finishedAt && t.bytesDone > 0), 20_000, 'progress in Transfers');
      expect(during.bytesDone).toBeLessThan(data.length);
      const resource = await upload;
      expect(resource).toMatchObject({ name: 'up load.bin', size: data.length });
      expect(sha(readFileSync(join(server.shareDir, 'up load.bin')))).toBe(sha(data));
      expect(app.transfers.list().find((t) => t.name === 'up load.bin')).toMatchObject({ state: 'done', bytesDone: data.length });

      // A copy out of a local-folder account takes the same route (document 1, "Copy": account).
      const root = join(work, 'local');
      mkdirSync(root);
      writeFileSync(join(root, 'copied.bin'), data);
      const folder = (await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(work, 'Trash') } })).id;
      const source = (await app.storage.list(folder, 'root')).items.find((i) => i.name === 'copied.bin')!;
      const counts: number[] = [];
      let total = 0;
      let finished = false;
      const copy = app.storage.copy(folder, source.id, { parentId: 'root', account: acc.id }, { progress: (n) => (total += n, finished || counts.push(total)) });
      await until(() => smbclientReading(join(root, 'copied.bin')), 20_000, 'an smbclient with the source open');
      const copied = await copy.finally(() => (finished = true));
      expect(copied).toMatchObject({ name: 'copied.bin', size: data.length });
      expect(counts.some((n) => n > 0 && n < data.length)).toBe(true);
      expect(total).toBe(data.length);
      expect(sha(readFileSync(join(server.shareDir, 'copied.bin')))).toBe(sha(data));
    } finally {
      await app.close();
      await throttle.stop();
      await server.stop();
    }
  });
});

describe('Two-way sync of a local folder with an SMB share sends new local files with smbclient put (docs/sync.md)', () => {
  it('small and large files arrive byte-identical, no temporary file stays, and the walk then sees no difference', async () => {
    const server = await startSamba();
    const work = scratchDir('smb-sync');
    const c = new SmbConnector(smbOptionsFor(server));
    // Counted on the way through: the route a file takes, not a stand-in for the server.
    const writeFile = c.features.writeFile;
    const viaFile: string[] = [];
    if (writeFile) c.features.writeFile = (path, file, o) => (viaFile.push(path), writeFile(path, file, o));
    const engine = new SyncEngine(syncDb(), async () => c, { pollMs: 200, debounceMs: 3_600_000, trashDir: join(work, 'trash') });
    try {
      const local = join(work, 'local');
      mkdirSync(join(local, 'sub'), { recursive: true });
      const files = { 'small.bin': randomBytes(1000), 'sub/large file.bin': randomBytes(6 * MiB + 1) };
      for (const [name, data] of Object.entries(files)) writeFileSync(join(local, name), data);
      await c.mkdir('/Synced');
      await engine.start();
      const pair = await engine.create({ localPath: local, account: 1, remotePath: '/Synced' });
      const there = (name: string) => join(server.shareDir, 'Synced', name);
      await until(() => engine.store.pair(pair.id).lastSync !== null && engine.store.pair(pair.id).state === 'idle' && Object.keys(files).every((n) => readdirSync(join(server.shareDir, 'Synced', n.includes('/') ? 'sub' : '')).includes(n.split('/').pop()!)), 30_000, 'the first sync');
      for (const [name, data] of Object.entries(files)) expect(sha(readFileSync(there(name)))).toBe(sha(data));
      expect(viaFile.sort()).toEqual(['/Synced/small.bin', '/Synced/sub/large file.bin']);
      expect([...readdirSync(join(server.shareDir, 'Synced')), ...readdirSync(join(server.shareDir, 'Synced', 'sub'))].filter((n) => TEMP_NAME.test(n))).toEqual([]);
      expect(await remoteDiff(c, '/Synced', engine.store.tree(pair.id, 'remote'), await loadIgnore(local, []))).toBeUndefined();
    } finally {
      await engine.close();
      await c.close();
      await server.stop();
    }
  });
});

/** The id of a child smbclient of this process that has `file` open. */
function smbclientReading(file: string): number | undefined {
  const children = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').split(' ').filter(Boolean);
  for (const pid of children) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'smbclient') continue;
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkOr(`/proc/${pid}/fd/${fd}`) === file)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function readlinkOr(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}
