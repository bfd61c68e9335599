/**
 * Big downloads read as several ranges at once (docs/uploads.md, "Resumable downloads"), from a
 * real Apache mod_dav_fs, some through a loopback proxy that passes each answer at a set pace so
 * a download can be stopped mid-way: byte-identical (spec 1, Files: "Download"), each range
 * continued from where it got to after a pause, a retry or a killed process, a file changed
 * meanwhile fetched again, and a server that dies mid-transfer an error, never a short file; a
 * failed save of the ranges' progress fails the download, keeping what a retry needs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { ReadToFileOptions, StorageFeatures } from '../../src-main/connectors/types';
import { partialPath, type DownloaderOptions } from '../../src-main/downloads/downloader';
import { ServiceError } from '../../src-main/errors';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { startThrottle, type Throttle } from '../servers/throttle';
import { runTsChild, scratchDir, until } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** Files from 4 MiB on are read in 4 ranges (the default is rclone's: from 256 MiB). */
const downloads: DownloaderOptions = { parallel: { cutoff: 4 * MiB, ranges: 4 }, retry: { windowMs: 1000, maxDelayMs: 200 } };
/** Each range's answer passes the proxy at this pace: 4 ranges make 16 MiB/s. */
const PACE = 4 * MiB;

type Range = [start: number, done: number, end: number];

describe('downloads read in ranges (spec 1, Files: Download)', () => {
  let apache: ApacheServer;
  let throttle: Throttle;
  let work: string;

  beforeAll(async () => {
    apache = await startApache();
    throttle = await startThrottle(apache.port, 1024 * MiB, { answerRate: PACE });
    work = scratchDir('dav-ranges');
  });

  afterAll(async () => {
    await throttle?.stop();
    await apache?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** An app with a WebDAV account (through the pacing proxy when `paced`), and the ranges each read asked for. */
  async function appWith(dataDir: string, paced: boolean): Promise<{ app: App; account: number; asked: [number, number | undefined][] }> {
    const app = await createApp({ dataDir, defaultLocalFolder: false, downloads });
    const options = paced ? { ...webdavOptions(apache), port: throttle.port } : webdavOptions(apache);
    const account = (await app.accounts.connect({ service: 'webdav', options })).id;
    return { app, account, asked: await recordReads(app, account) };
  }

  /** Records the [start, end) of every readToFile of the account's connector. */
  async function recordReads(app: App, account: number) {
    const asked: [number, number | undefined][] = [];
    const root = await app.storage.list(account, 'root');
    const { connector } = await app.storage.locate(account, root.items[0]?.id ?? 'root');
    const features = connector.features as StorageFeatures;
    const readToFile = features.readToFile!.bind(features);
    features.readToFile = (path: string, into: string, o?: ReadToFileOptions) => {
      asked.push([o?.start ?? 0, o?.end]);
      return readToFile(path, into, o);
    };
    return asked;
  }

  const fileId = async (app: App, account: number, name: string) => (await app.storage.list(account, 'root')).items.find((i) => i.name === name)!.id;
  const rangesOf = (app: App, job: number) => JSON.parse((app.db.prepare('SELECT ranges FROM download_jobs WHERE id = ?').get(job) as { ranges: string | null }).ranges ?? 'null') as Range[] | null;
  const kept = (ranges: Range[]) => ranges.reduce((n, [s, d]) => n + d - s, 0);
  const state = (app: App, id: string) => app.transfers.list().find((t) => t.id === id);

  it('a big file is read as 4 ranges at once that cover it exactly, byte-identical; a small one in one read', async () => {
    const { app, account, asked } = await appWith(join(work, 'whole'), false);
    try {
      const data = randomBytes(13 * MiB + 5);
      apache.place('big.bin', data);
      apache.place('small.bin', data.subarray(0, 4 * MiB - 1));
      const target = join(work, 'big.bin');
      await app.downloads.download({ accountId: account, fileId: await fileId(app, account, 'big.bin'), targetPath: target });
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(existsSync(partialPath(target))).toBe(false);
      expect(asked.sort((a, b) => a[0] - b[0])).toEqual([
        [0, 4 * MiB],
        [4 * MiB, 8 * MiB],
        [8 * MiB, 12 * MiB],
        [12 * MiB, data.length],
      ]);

      asked.length = 0;
      const small = join(work, 'small.bin');
      await app.downloads.download({ accountId: account, fileId: await fileId(app, account, 'small.bin'), targetPath: small });
      expect(sha(readFileSync(small))).toBe(sha(data.subarray(0, 4 * MiB - 1)));
      expect(asked).toEqual([[0, undefined]]);
    } finally {
      await app.close();
    }
  });

  it('pause keeps every range where it got to, a restart lists the bytes kept, and resume fetches only the rest: byte-identical', async () => {
    const dataDir = join(work, 'paused');
    const first = await appWith(dataDir, true);
    let app = first.app;
    const account = first.account;
    const data = randomBytes(40 * MiB + 3);
    apache.place('paused.bin', data);
    const target = join(work, 'paused.bin');
    const job = await app.downloads.plan({ accountId: account, fileId: await fileId(app, account, 'paused.bin'), targetPath: target });
    const id = `download-${job}`;
    const run = app.downloads.resume(job);
    await until(() => ((state(app, id)?.bytesDone ?? 0) >= 8 * MiB ? true : undefined), 30_000, '8 MiB downloaded');
    app.transfers.pause(id);
    await expect(run).rejects.toThrow(/Paused/);
    const ranges = rangesOf(app, job)!;
    expect(ranges).toHaveLength(4);
    // Every range got somewhere, none to its end (each passes the proxy at the same pace).
    for (const [start, done, end] of ranges) {
      expect(done).toBeGreaterThan(start);
      expect(done).toBeLessThan(end);
    }
    expect(state(app, id)).toMatchObject({ state: 'paused', bytesDone: kept(ranges) });
    expect(existsSync(target)).toBe(false);
    // The partial file was given its blocks up front (fallocate), and what a range counts as done is in it.
    const st = statSync(partialPath(target));
    expect(st.size).toBe(data.length);
    expect(st.blocks * 512).toBeGreaterThanOrEqual(data.length);
    const partial = readFileSync(partialPath(target));
    for (const [start, done] of ranges) expect(sha(partial.subarray(start, done))).toBe(sha(data.subarray(start, done)));
    await app.close();

    app = await createApp({ dataDir, defaultLocalFolder: false, downloads });
    try {
      await app.downloads.resumed;
      expect(state(app, id)).toMatchObject({ state: 'paused', bytesDone: kept(ranges), bytesTotal: data.length });
      const before = throttle.returned();
      app.transfers.resume(id);
      await until(() => (state(app, id)?.state === 'done' ? true : undefined), 30_000, 'the resumed download');
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(rangesOf(app, job)).toBeNull();
      // Only the rest crossed the proxy, give or take the answers' heads and listings and a few
      // 64 KiB chunks the proxy counted as the paused connections closed; a range that started
      // over would add its 2 MiB or more.
      await new Promise((r) => setTimeout(r, 200)); // the proxy reports every 50 ms
      expect(throttle.returned() - before).toBeGreaterThanOrEqual(data.length - kept(ranges));
      expect(throttle.returned() - before).toBeLessThan(data.length - kept(ranges) + MiB);
    } finally {
      await app.close();
    }
  }, 90_000);

  it('a process killed mid-download continues each range from its last saved point on the next start: byte-identical', async () => {
    const dataDir = join(work, 'killed-process');
    const { app: first, account } = await appWith(dataDir, true);
    const data = randomBytes(48 * MiB + 1);
    apache.place('crash.bin', data);
    const target = join(work, 'crash.bin');
    const job = await first.downloads.plan({ accountId: account, fileId: await fileId(first, account, 'crash.bin'), targetPath: target });
    await first.close(); // the job is planned and running: the child's start continues it

    const db = new Database(join(dataDir, 'tributary.db'), { readonly: true });
    const saved = () => JSON.parse((db.prepare('SELECT ranges FROM download_jobs WHERE id = ?').get(job) as { ranges: string | null }).ranges ?? 'null') as Range[] | null;
    let atKill: Range[] = [];
    const { killed } = await runTsChild('test/downloads/download-child.ts', [dataDir, JSON.stringify(downloads)], {
      // Killed once a save shows every range under way (saves come every 2 s).
      killWhen: () => {
        const r = saved();
        if (!r?.every(([s, d]) => d > s)) return false;
        atKill = r;
        return true;
      },
    });
    db.close();
    expect(killed).toBe(true);
    expect(kept(atKill)).toBeLessThan(data.length);

    const before = throttle.returned();
    const app = await createApp({ dataDir, defaultLocalFolder: false, downloads });
    try {
      await app.downloads.resumed;
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(existsSync(partialPath(target))).toBe(false);
      // The restart fetched less than the whole file: the saved ranges were continued.
      await new Promise((r) => setTimeout(r, 200));
      expect(throttle.returned() - before).toBeLessThan(data.length - kept(atKill) + 16 * MiB);
      expect(throttle.returned() - before).toBeLessThan(data.length);
    } finally {
      await app.close();
    }
  }, 90_000);

  it('a file changed while paused is fetched again from the start, byte-identical to the new version', async () => {
    const { app, account } = await appWith(join(work, 'changed'), true);
    try {
      apache.place('changes.bin', randomBytes(24 * MiB));
      const target = join(work, 'changes.bin');
      const job = await app.downloads.plan({ accountId: account, fileId: await fileId(app, account, 'changes.bin'), targetPath: target });
      const id = `download-${job}`;
      const run = app.downloads.resume(job);
      await until(() => ((state(app, id)?.bytesDone ?? 0) > 2 * MiB ? true : undefined), 30_000, 'bytes downloaded');
      app.transfers.pause(id);
      await expect(run).rejects.toThrow(/Paused/);
      expect(rangesOf(app, job)).toHaveLength(4);
      const v2 = randomBytes(21 * MiB + 7); // another size, so other ranges
      apache.place('changes.bin', v2);
      app.transfers.resume(id);
      await until(() => (state(app, id)?.state === 'done' ? true : undefined), 30_000, 'the resumed download');
      expect(sha(readFileSync(target))).toBe(sha(v2));
      expect(statSync(target).size).toBe(v2.length);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a server killed mid-download fails it without a target file; retried after the restart, every range continues: byte-identical', async () => {
    const { app, account } = await appWith(join(work, 'server-killed'), true);
    try {
      const data = randomBytes(32 * MiB + 9);
      apache.place('dies.bin', data);
      const target = join(work, 'dies.bin');
      const job = await app.downloads.plan({ accountId: account, fileId: await fileId(app, account, 'dies.bin'), targetPath: target });
      const id = `download-${job}`;
      const run = app.downloads.resume(job);
      await until(() => ((state(app, id)?.bytesDone ?? 0) >= 4 * MiB ? true : undefined), 30_000, '4 MiB downloaded');
      await apache.kill();
      await expect(run).rejects.toMatchObject({ code: 'service_not_available' });
      expect(existsSync(target)).toBe(false);
      expect(state(app, id)).toMatchObject({ state: 'failed', actions: ['retry'] });
      const ranges = rangesOf(app, job)!;
      expect(kept(ranges)).toBeGreaterThan(0);
      expect(kept(ranges)).toBeLessThan(data.length);
      expect(state(app, id)!.bytesDone).toBe(kept(ranges));
      // A retry while the server is still down fails again and still shows what the ranges kept.
      app.transfers.retry(id);
      await until(() => (state(app, id)?.state === 'failed' && state(app, id)?.finishedAt ? true : undefined), 30_000, 'the second failure');
      expect(state(app, id)).toMatchObject({ state: 'failed', bytesDone: kept(ranges) });
      expect(rangesOf(app, job)).toEqual(ranges);

      await apache.restart();
      const before = throttle.returned();
      app.transfers.retry(id);
      await until(() => (state(app, id)?.state === 'done' ? true : undefined), 30_000, 'the retried download');
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(existsSync(partialPath(target))).toBe(false);
      await new Promise((r) => setTimeout(r, 200));
      expect(throttle.returned() - before).toBeLessThan(data.length - kept(ranges) + MiB);
    } finally {
      await app.close();
    }
  }, 60_000);

  // A save of how far the ranges got that fails (here the database is full) fails the download
  // and stops its ranges, never an unhandled rejection (which ends a Node process).
  it('a save that fails: the download fails with its error, stops its ranges, no unhandled rejection; a retry is byte-identical', async () => {
    const app = await createApp({ dataDir: join(work, 'save-failure'), defaultLocalFolder: false, downloads });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const prepare = app.db.prepare.bind(app.db);
    try {
      const account = (await app.accounts.connect({ service: 'webdav', options: { ...webdavOptions(apache), port: throttle.port } })).id;
      const data = randomBytes(64 * MiB);
      apache.place('save-failure.bin', data);
      const fileId = (await app.storage.list(account, 'root')).items.find((i) => i.name === 'save-failure.bin')!.id;
      const target = join(work, 'save-failure.bin');
      const job = await app.downloads.plan({ accountId: account, fileId, targetPath: target });
      const id = `download-${job}`;
      const state = () => app.transfers.list().find((t) => t.id === id);
      const rangesOf = () => JSON.parse((app.db.prepare('SELECT ranges FROM download_jobs WHERE id = ?').get(job) as { ranges: string | null }).ranges ?? 'null') as Range[] | null;

      const before = throttle.returned();
      const run = app.downloads.resume(job);
      // Once the ranges are under way (their start saved), saving where they got fails.
      await until(() => ((state()?.bytesDone ?? 0) > 0 ? true : undefined), 30_000, 'bytes downloaded');
      const started = rangesOf();
      app.db.prepare = ((sql: string) => {
        if (sql.startsWith('UPDATE download_jobs SET ranges')) throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL');
        return prepare(sql);
      }) as typeof app.db.prepare;

      const err = await run.then(
        () => undefined,
        (e: unknown) => e,
      );
      app.db.prepare = prepare;
      expect(unhandled).toEqual([]);
      expect(err).toBeInstanceOf(ServiceError);
      expect(err).toMatchObject({ code: 'insufficient_storage', message: expect.stringMatching(/database or disk is full/) });
      expect(state()).toMatchObject({ state: 'failed', actions: ['retry'] });
      // The ranges stopped at the failed save (about half-way) rather than reading the file to its end.
      await new Promise((r) => setTimeout(r, 200)); // the proxy reports every 50 ms
      expect(throttle.returned() - before).toBeLessThan(0.75 * data.length);
      expect(app.downloads.job(job)).toMatchObject({ state: 'failed', error: expect.stringMatching(/database or disk is full/) });
      // As any failed download: the partial file and the last saved ranges stay for a retry.
      expect(existsSync(target)).toBe(false);
      expect(statSync(partialPath(target)).size).toBe(data.length);
      expect(started).toHaveLength(4);
      expect(rangesOf()).toEqual(started);

      app.transfers.retry(id);
      await until(() => (state()?.state === 'done' ? true : undefined), 30_000, 'the retried download');
      expect(sha(readFileSync(target))).toBe(sha(data));
      expect(existsSync(partialPath(target))).toBe(false);
      expect(unhandled).toEqual([]);
    } finally {
      app.db.prepare = prepare;
      process.off('unhandledRejection', onUnhandled);
      await app.close();
    }
  }, 60_000);
});
