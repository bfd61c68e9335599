/**
 * WebDAV uploads from a file on this computer (connector feature `writeFile`: the file goes from
 * a few reused buffers into the PUT's own socket, no stream in between), against a real Apache
 * mod_dav_fs: byte-identical files under any name (spec 1, Files: "Upload a file"), the
 * no-replace publish, progress while the file goes, cancel, a local file that shrinks, and a
 * server killed mid-transfer (spec 1, Errors): never a partial file under the final name, and no
 * temporary file left behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { WebDavConnector } from '../../src-main/connectors/webdav';
import { options as webdavSchema } from '../../src-main/connectors/webdav/options';
import { TEMP_NAME } from '../../src-main/connectors/shared/paths';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { startThrottle, type Throttle } from '../servers/throttle';
import { scratchDir, until } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('WebDAV writeFile against Apache (spec 1, Files: Upload a file)', () => {
  let apache: ApacheServer;
  let dav: WebDavConnector;
  /** Uploads through this proxy reach the server at 4 MiB/s: slow enough to watch. */
  let throttle: Throttle;
  let slow: WebDavConnector;
  let work: string;
  const big = randomBytes(10 * MiB + 3);
  let bigFile: string;

  beforeAll(async () => {
    apache = await startApache();
    dav = new WebDavConnector(webdavSchema.parse(webdavOptions(apache)));
    throttle = await startThrottle(Number(new URL(apache.url).port), 4 * MiB);
    slow = new WebDavConnector(webdavSchema.parse({ ...webdavOptions(apache), port: throttle.port }));
    work = scratchDir('dav-from-file');
    bigFile = join(work, 'big.bin');
    writeFileSync(bigFile, big);
  });
  afterAll(async () => {
    await slow?.close();
    await dav?.close();
    await throttle?.stop();
    await apache?.stop();
  });

  /** The server's names, Apache's and Tributary's temporary files included. */
  const serverNames = () => readdirSync(apache.root);
  const temps = () => serverNames().filter((n) => TEMP_NAME.test(n) || n.startsWith('.davfs.tmp'));
  const onServer = (name: string) => readFileSync(join(apache.root, name));

  it('sizes 0, 1, 3 MiB + 7 and 10 MiB + 3 (across the reused 1 MiB buffers) arrive byte-identical, counted to the byte', async () => {
    for (const size of [0, 1, 3 * MiB + 7, 10 * MiB + 3]) {
      const data = size === big.length ? big : randomBytes(size);
      const local = join(work, `size-${size}.bin`);
      writeFileSync(local, data);
      let counted = 0;
      const entry = await dav.features.writeFile!(`/size-${size}.bin`, local, { onBytes: (n) => (counted += n) });
      expect(entry).toMatchObject({ path: `/size-${size}.bin`, kind: 'file', size });
      expect(counted).toBe(size);
      expect(sha(onServer(`size-${size}.bin`))).toBe(sha(data));
    }
    expect(temps()).toEqual([]);
  });

  it('names with spaces, unicode, # and %, on both sides, and over an existing file', async () => {
    const data = randomBytes(2 * MiB + 1);
    const local = join(work, 'local name é ü 日本 #1 100%.bin');
    writeFileSync(local, data);
    for (const name of ['a name with  spaces.bin', 'ünïcödé 日本語 ☃.bin', 'hash #1 and 100%.bin']) {
      writeFileSync(join(apache.root, name), 'older and different');
      execFileSync('chown', ['www-data:www-data', join(apache.root, name)]);
      const entry = await dav.features.writeFile!(`/${name}`, local);
      expect(entry).toMatchObject({ name, size: data.length });
      expect(sha(onServer(name))).toBe(sha(data));
    }
    expect(temps()).toEqual([]);
  });

  it('noReplace: a taken name is naming_conflict with the file there untouched, or goes to the next name (spec 1, Upload a file: conflict)', async () => {
    const local = join(work, 'conflict.bin');
    writeFileSync(local, randomBytes(3 * MiB));
    writeFileSync(join(apache.root, 'taken.bin'), 'theirs');
    execFileSync('chown', ['www-data:www-data', join(apache.root, 'taken.bin')]);
    await expect(dav.features.writeFile!('/taken.bin', local, { noReplace: {} })).rejects.toMatchObject({ code: 'naming_conflict' });
    expect(onServer('taken.bin').toString()).toBe('theirs');
    const entry = await dav.features.writeFile!('/taken.bin', local, { noReplace: { next: async () => '/taken (1).bin' } });
    expect(entry).toMatchObject({ path: '/taken (1).bin', size: 3 * MiB });
    expect(sha(onServer('taken (1).bin'))).toBe(sha(readFileSync(local)));
    expect(onServer('taken.bin').toString()).toBe('theirs');
    expect(temps()).toEqual([]);
  });

  it('a missing file is not_found, a folder invalid_parameters, a FIFO forbidden, all before anything is sent', async () => {
    await expect(dav.features.writeFile!('/x.bin', join(work, 'nowhere.bin'))).rejects.toMatchObject({ code: 'not_found' });
    const folder = join(work, 'a-folder');
    mkdirSync(folder, { recursive: true });
    await expect(dav.features.writeFile!('/x.bin', folder)).rejects.toMatchObject({ code: 'invalid_parameters' });
    const fifo = join(work, 'a-fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(dav.features.writeFile!('/x.bin', fifo)).rejects.toMatchObject({ code: 'forbidden' });
    expect(serverNames()).not.toContain('x.bin');
  });

  it('reports progress before the end, never far ahead of what reached the server', async () => {
    const seen: number[] = [];
    const ahead: number[] = [];
    let counted = 0;
    let finished = false;
    const entry = await slow.features
      .writeFile!('/progress.bin', bigFile, {
        onBytes: (n) => {
          counted += n;
          if (finished) return;
          seen.push(counted);
          ahead.push(counted - throttle.forwarded());
        },
      })
      .finally(() => (finished = true));
    expect(entry.size).toBe(big.length);
    // 10 MiB at 4 MiB/s: counts come in all along, short of the end.
    expect(seen.filter((n) => n > 0 && n < big.length).length).toBeGreaterThanOrEqual(5);
    // Ahead by at most the sockets' buffers on the way (this one's and the proxy's) and 50 ms of its pace.
    expect(Math.max(...ahead.slice(0, -1))).toBeLessThan(6 * MiB);
    expect(counted).toBe(big.length);
    expect(sha(onServer('progress.bin'))).toBe(sha(big));
  });

  it('a cancel mid-upload is request_timeout and leaves neither the file nor a temporary file', async () => {
    const ac = new AbortController();
    let counted = 0;
    const run = slow.features.writeFile!('/cancelled.bin', bigFile, { signal: ac.signal, onBytes: (n) => (counted += n), noReplace: {} });
    run.catch(() => {});
    await until(() => counted > 0 || undefined, 20_000, 'progress');
    ac.abort();
    await expect(run).rejects.toMatchObject({ code: 'request_timeout' });
    await until(() => temps().length === 0 || undefined, 10_000, 'Apache dropping its temporary file');
    expect(serverNames()).not.toContain('cancelled.bin');
  });

  it('a cancel before the file is open rejects at once and leaves no file descriptor open', async () => {
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 20; i++) {
      await expect(dav.features.writeFile!('/never.bin', bigFile, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'request_timeout' });
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(open() - before).toBeLessThan(5);
    expect(serverNames()).not.toContain('never.bin');
  });

  it('a local file that becomes shorter mid-upload is a conflict; nothing is published under the name', async () => {
    const local = join(work, 'shrinking.bin');
    writeFileSync(local, big);
    let counted = 0;
    const run = slow.features.writeFile!('/shrinking.bin', local, { onBytes: (n) => (counted += n) });
    run.catch(() => {});
    await until(() => counted > 0 || undefined, 20_000, 'progress');
    truncateSync(local, 1024);
    await expect(run).rejects.toMatchObject({ code: 'conflict' });
    await until(() => temps().length === 0 || undefined, 10_000, 'Apache dropping its temporary file');
    expect(serverNames()).not.toContain('shrinking.bin');
  });

  it('a server killed mid-upload is service_not_available; after a restart the file is not there', async () => {
    let killing: Promise<void> | undefined;
    const run = slow.features.writeFile!('/killed.bin', bigFile, { onBytes: () => void (killing ??= apache.kill()) });
    await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
    await killing;
    await apache.restart();
    expect(serverNames()).not.toContain('killed.bin');
  });
});

describe('The desktop uploader sends a file to WebDAV through writeFile (spec 1, Files: Upload a file)', () => {
  let apache: ApacheServer;
  let app: Awaited<ReturnType<typeof createApp>>;
  let work: string;

  beforeAll(async () => {
    apache = await startApache();
    work = scratchDir('dav-uploader');
    app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    await apache?.stop();
  });

  it('StorageService.uploadFile takes a WebDAV account (over http) and the uploader lands the file byte-identical', async () => {
    const acc = await app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) });
    const data = randomBytes(5 * MiB + 9);
    const local = join(work, 'up.bin');
    writeFileSync(local, data);
    const direct = await app.storage.uploadFile(acc.id, 'root', 'direct.bin', local);
    expect(direct).toMatchObject({ name: 'direct.bin', size: data.length });
    const resource = await app.uploads.uploader.upload({ accountId: acc.id, parentId: 'root', localPath: local, name: 'uploaded.bin', overwrite: false });
    expect(resource).toMatchObject({ name: 'uploaded.bin', size: data.length });
    expect(sha(readFileSync(join(apache.root, 'uploaded.bin')))).toBe(sha(data));
    expect(sha(readFileSync(join(apache.root, 'direct.bin')))).toBe(sha(data));
  });
});
