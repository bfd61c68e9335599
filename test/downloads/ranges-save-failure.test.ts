/**
 * A download read in ranges saves how far each range got every 2 s (docs/uploads.md, "Resumable
 * downloads"). A save that fails (here the database is full) fails the download with that error
 * and stops its ranges, never an unhandled rejection (which ends a Node process); the job fails
 * as any failed download does, keeping its partial file and the ranges last saved, and a retry
 * fetches the file byte-identical. From a real Apache mod_dav_fs through a loopback proxy that
 * paces each answer, so the download is still running when the first save comes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { partialPath, type DownloaderOptions } from '../../src-main/downloads/downloader';
import { ServiceError } from '../../src-main/errors';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { startThrottle, type Throttle } from '../servers/throttle';
import { scratchDir, until } from '../servers/util';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** Files from 4 MiB on are read in 4 ranges; a failure that is not transient is not retried. */
const downloads: DownloaderOptions = { parallel: { cutoff: 4 * MiB, ranges: 4 }, retry: { windowMs: 1000, maxDelayMs: 200 } };
/** Each range's answer passes the proxy at this pace: 64 MiB in 4 ranges takes 4 s, the first save comes at 2 s. */
const PACE = 4 * MiB;

type Range = [start: number, done: number, end: number];

describe('a download read in ranges whose progress cannot be saved', () => {
  let apache: ApacheServer;
  let throttle: Throttle;
  let work: string;

  beforeAll(async () => {
    apache = await startApache();
    throttle = await startThrottle(apache.port, 1024 * MiB, { answerRate: PACE });
    work = scratchDir('dav-ranges-save');
  });

  afterAll(async () => {
    await throttle?.stop();
    await apache?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('fails with the save error, stops its ranges, no unhandled rejection; a retry is byte-identical', async () => {
    const app = await createApp({ dataDir: join(work, 'app'), defaultLocalFolder: false, downloads });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const prepare = app.db.prepare.bind(app.db);
    try {
      const account = (await app.accounts.connect({ service: 'webdav', options: { ...webdavOptions(apache), port: throttle.port } })).id;
      const data = randomBytes(64 * MiB);
      apache.place('big.bin', data);
      const fileId = (await app.storage.list(account, 'root')).items.find((i) => i.name === 'big.bin')!.id;
      const target = join(work, 'big.bin');
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
