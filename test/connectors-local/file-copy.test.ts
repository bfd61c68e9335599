/**
 * Copies between files on this computer are done by the file system (`writeFile`: copyFile,
 * i.e. copy_file_range or a reflink on one disk): a copy within a local account, from one local
 * account into another, and a desktop file uploaded into a local account. Each is byte-identical,
 * keeps the caller's conflict choice (spec 1, Copy / Upload: "name conflicts") and leaves no
 * temporary file; a target that is not on this computer (the memory account) gets the bytes
 * streamed instead, and a target on another disk (tmpfs) still gets identical bytes.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { uploadLocalFolder } from '../../src-main/services/folder-upload';
import { CHILD_COPY_MIN } from '../../src-main/connectors/shared/file-copy';
import type { StorageConnector } from '../../src-main/connectors/types';
import { ServiceError } from '../../src-main/errors';
import { scratchDir } from '../servers/util';
import { expectCode } from '../conformance/storage-suite';

let app: App;
let work: string;
let rootA: string;
let rootB: string;
let a: number;
let b: number;
let mem: number;
const data = randomBytes(3 * 1024 * 1024 + 17);

/** Counts the calls of the destination connector's `writeFile` (the file system copy). */
function countWriteFile(c: StorageConnector): { calls: number } {
  const count = { calls: 0 };
  const original = c.features.writeFile!;
  (c.features as { writeFile: typeof original }).writeFile = (...args) => {
    count.calls++;
    return original(...args);
  };
  return count;
}

const visible = (folder: string) => readdirSync(folder).sort();

beforeAll(async () => {
  work = scratchDir('file-copy');
  rootA = join(work, 'a');
  rootB = join(work, 'b');
  mkdirSync(rootA);
  mkdirSync(rootB);
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  a = (await app.accounts.connect({ service: 'local', options: { path: rootA, trashDir: join(work, 'trash') } })).id;
  b = (await app.accounts.connect({ service: 'local', options: { path: rootB, trashDir: join(work, 'trash') } })).id;
  mem = (await app.accounts.connect({ service: 'memory', options: { store: `file-copy-${randomBytes(4).toString('hex')}` } })).id;
  writeFileSync(join(rootA, 'src.bin'), data);
  utimesSync(join(rootA, 'src.bin'), new Date('2020-02-02T02:02:02Z'), new Date('2020-02-02T02:02:02Z'));
});

afterAll(async () => {
  await app?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('copy within one local account (spec 1, Copy)', () => {
  it('is byte-identical, keeps the modified time, leaves no temporary file', async () => {
    const src = app.storage.idOf(a, '/src.bin');
    const copied = await app.storage.copy(a, src, { parentId: 'root', name: 'same.bin' });
    expect(copied).toMatchObject({ name: 'same.bin', size: data.length });
    expect(readFileSync(join(rootA, 'same.bin')).equals(data)).toBe(true);
    expect(statSync(join(rootA, 'same.bin')).mtime.toISOString()).toBe('2020-02-02T02:02:02.000Z');
    expect(visible(rootA)).toEqual(['same.bin', 'src.bin']);
  });

  it('keeps the conflict choice: rename keeps both, fail changes nothing, overwrite replaces', async () => {
    const src = app.storage.idOf(a, '/src.bin');
    writeFileSync(join(rootA, 'taken.bin'), 'old');
    const renamed = await app.storage.copy(a, src, { parentId: 'root', name: 'taken.bin', conflict: 'rename' });
    expect(renamed.name).toBe('taken (1).bin');
    expect(readFileSync(join(rootA, 'taken (1).bin')).equals(data)).toBe(true);
    await expectCode(app.storage.copy(a, src, { parentId: 'root', name: 'taken.bin', conflict: 'fail' }), 'naming_conflict');
    expect(readFileSync(join(rootA, 'taken.bin'), 'utf8')).toBe('old');
    await app.storage.copy(a, src, { parentId: 'root', name: 'taken.bin', conflict: 'overwrite' });
    expect(readFileSync(join(rootA, 'taken.bin')).equals(data)).toBe(true);
    expect(visible(rootA)).toEqual(['same.bin', 'src.bin', 'taken (1).bin', 'taken.bin']);
  });
});

describe('copy from one local account into another (spec 1, Copy with `account`)', () => {
  it('is a file system copy, byte-identical, with the conflict choice kept', async () => {
    const count = countWriteFile(await app.accounts.storage(b));
    const src = app.storage.idOf(a, '/src.bin');
    const first = await app.storage.copy(a, src, { parentId: 'root', account: b });
    writeFileSync(join(rootB, 'held.bin'), 'held');
    const second = await app.storage.copy(a, src, { parentId: 'root', account: b, name: 'held.bin' });
    await expectCode(app.storage.copy(a, src, { parentId: 'root', account: b, name: 'held.bin', conflict: 'fail' }), 'naming_conflict');
    expect(count.calls).toBe(2);
    expect([first.name, second.name]).toEqual(['src.bin', 'held (1).bin']);
    for (const n of ['src.bin', 'held (1).bin']) expect(readFileSync(join(rootB, n)).equals(data)).toBe(true);
    expect(readFileSync(join(rootB, 'held.bin'), 'utf8')).toBe('held');
    expect(visible(rootB)).toEqual(['held (1).bin', 'held.bin', 'src.bin']);
  });

  it('a move is a file system copy too, then the source goes', async () => {
    writeFileSync(join(rootA, 'moving.bin'), data);
    const moved = await app.storage.move(a, app.storage.idOf(a, '/moving.bin'), { parentId: 'root', account: b });
    expect(moved.name).toBe('moving.bin');
    expect(readFileSync(join(rootB, 'moving.bin')).equals(data)).toBe(true);
    expect(readdirSync(rootA)).not.toContain('moving.bin');
  });

  it('falls back to a stream when the target is not on this computer (memory account)', async () => {
    const copied = await app.storage.copy(a, app.storage.idOf(a, '/src.bin'), { parentId: 'root', account: mem });
    const { stream } = await app.storage.download(mem, copied.id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });

  it('a target on another disk (tmpfs) gets identical bytes', async () => {
    let shm: string;
    try {
      shm = mkdtempSync('/dev/shm/tributary-file-copy-');
    } catch {
      return expect.fail('/dev/shm is needed for a second file system');
    }
    try {
      expect(statSync(shm).dev).not.toBe(statSync(rootA).dev);
      const other = (await app.accounts.connect({ service: 'local', options: { path: shm } })).id;
      const copied = await app.storage.copy(a, app.storage.idOf(a, '/src.bin'), { parentId: 'root', account: other });
      expect(readFileSync(join(shm, copied.name)).equals(data)).toBe(true);
      expect(readdirSync(shm)).toEqual(['src.bin']);
      await app.accounts.delete(other);
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
  });
});

describe('uploading a desktop file into a local account (the uploader, spec 1 Upload)', () => {
  it('is a file system copy above the multipart size too: byte-identical, no session, conflict kept', async () => {
    const desktop = join(work, 'desktop.bin');
    const big = randomBytes(12 * 1024 * 1024 + 5);
    writeFileSync(desktop, big);
    const count = countWriteFile(await app.accounts.storage(b));
    const up = await app.uploads.uploader.upload({ accountId: b, parentId: 'root', localPath: desktop, name: 'up.bin' });
    const again = await app.uploads.uploader.upload({ accountId: b, parentId: 'root', localPath: desktop, name: 'up.bin' });
    expect(count.calls).toBe(2);
    expect([up.name, again.name]).toEqual(['up.bin', 'up (1).bin']);
    for (const n of ['up.bin', 'up (1).bin']) expect(readFileSync(join(rootB, n)).equals(big)).toBe(true);
    expect(app.db.prepare('SELECT COUNT(*) AS n FROM multipart_sessions').get()).toEqual({ n: 0 });
    const job = app.db.prepare('SELECT state, verified FROM upload_jobs ORDER BY id DESC LIMIT 1').get();
    expect(job).toEqual({ state: 'done', verified: 'size' });
    expect(app.transfers.list().find((t) => t.id.startsWith('upload-') && t.name === 'up.bin')).toMatchObject({ state: 'done', bytesDone: big.length });
    writeFileSync(desktop, 'new');
    await app.uploads.uploader.upload({ accountId: b, parentId: 'root', localPath: desktop, name: 'up.bin', overwrite: true });
    expect(readFileSync(join(rootB, 'up.bin'), 'utf8')).toBe('new');
    expect(visible(rootB).filter((n) => n.startsWith('up'))).toEqual(['up (1).bin', 'up.bin']);
  });

  it('a dropped folder: every file a file system copy, one transfer with every byte', async () => {
    const dropped = join(work, 'Album');
    mkdirSync(join(dropped, 'inner'), { recursive: true });
    writeFileSync(join(dropped, 'one.bin'), data);
    writeFileSync(join(dropped, 'inner', 'two.bin'), data.subarray(0, 1000));
    const count = countWriteFile(await app.accounts.storage(b));
    const top = await uploadLocalFolder(app, b, 'root', dropped);
    expect(count.calls).toBe(2);
    expect(readFileSync(join(rootB, top.name, 'one.bin')).equals(data)).toBe(true);
    expect(readFileSync(join(rootB, top.name, 'inner', 'two.bin')).equals(data.subarray(0, 1000))).toBe(true);
    expect(app.transfers.list().find((t) => t.name === 'Album')).toMatchObject({ state: 'done', bytesDone: data.length + 1000 });
  });

  it('streams into an account that is not on this computer (memory)', async () => {
    const desktop = join(work, 'desktop-mem.bin');
    writeFileSync(desktop, data);
    const up = await app.uploads.uploader.upload({ accountId: mem, parentId: 'root', localPath: desktop, name: 'streamed.bin' });
    const { stream } = await app.storage.download(mem, up.id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });
});

describe('downloading a file of a local account to a desktop path (the downloader)', () => {
  it('is a file system copy: byte-identical, its transfer done with every byte', async () => {
    const source = await app.accounts.storage(a);
    const original = source.features.localFile!;
    let asked = 0;
    (source.features as { localFile: typeof original }).localFile = (path) => (asked++, original(path));
    const target = join(work, 'downloaded.bin');
    await app.downloads.download({ accountId: a, fileId: app.storage.idOf(a, '/src.bin'), targetPath: target });
    expect(asked).toBe(1);
    expect(readFileSync(target).equals(data)).toBe(true);
    expect(app.transfers.list().find((t) => t.id.startsWith('download-') && t.name === 'src.bin')).toMatchObject({ state: 'done', bytesDone: data.length });
  });
});

// docs/connectors.md, "Copies by the file system": a big copy shows its bytes as it grows and a
// cancel stops it part-way (a `cp` process where it runs), leaving nothing behind.
describe.skipIf(process.platform !== 'linux')('a big file system copy: counted as it grows, stopped by a cancel', () => {
  const MiB = 1024 * 1024;
  /** A file of `mib` MiB written a random MiB at a time (no test holds it whole in memory). */
  function bigFile(name: string, mib: number): string {
    const file = join(work, name);
    const chunk = randomBytes(MiB);
    const fd = openSync(file, 'w');
    try {
      for (let i = 0; i < mib; i++) writeSync(fd, chunk);
    } finally {
      closeSync(fd);
    }
    return file;
  }
  const temps = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.tributary-'));

  it('counts every byte of the copy, in the bytes it reports', async () => {
    const file = bigFile('counted.bin', CHILD_COPY_MIN / MiB + 8);
    const c = await app.accounts.storage(b);
    const counts: number[] = [];
    const entry = await c.features.writeFile!('/counted.bin', file, { onBytes: (n) => counts.push(n) });
    expect(entry.size).toBe(statSync(file).size);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(statSync(file).size);
    expect(readFileSync(join(rootB, 'counted.bin')).equals(readFileSync(file))).toBe(true);
    rmSync(file);
  });

  it('a cancel during the copy stops it part-way: no file under the name, no temporary file', async (ctx) => {
    // Where the file system clones (Btrfs, XFS), the copy is over at once: nothing to stop.
    writeFileSync(join(work, 'probe'), 'x');
    if (spawnSync('cp', ['--reflink=always', join(work, 'probe'), join(work, 'probe-clone')]).status === 0) ctx.skip();
    const file = bigFile('cancelled.bin', 256);
    const size = statSync(file).size;
    const c = await app.accounts.storage(b);
    const cancel = new AbortController();
    let largest = 0;
    // Watch the temporary file; cancel once the copy has begun writing it.
    const watch = setInterval(() => {
      for (const t of temps(rootB)) {
        const now = statSync(join(rootB, t), { throwIfNoEntry: false })?.size ?? 0;
        largest = Math.max(largest, now);
        if (now > 0 && !cancel.signal.aborted) cancel.abort(new ServiceError('request_timeout', 'The upload was cancelled.'));
      }
    }, 2);
    try {
      await expect(c.features.writeFile!('/cancelled.bin', file, { signal: cancel.signal })).rejects.toMatchObject({ code: 'request_timeout' });
    } finally {
      clearInterval(watch);
    }
    expect(cancel.signal.aborted).toBe(true);
    // Stopped where it was, not run to the end first.
    expect(largest).toBeLessThan(size);
    expect(temps(rootB)).toEqual([]);
    expect(visible(rootB)).not.toContain('cancelled.bin');
    rmSync(file);
  });
});
