/**
 * A file rewritten while the desktop uploader sends it (spec 1, Upload a file; docs/uploads.md):
 * the bytes sent would mix the old and the new content, so the upload fails with `conflict`
 * ("changed while it was uploaded") and publishes nothing, rather than ending done with a torn
 * file, and keeps no parts of the old version. Covered: an upload in one request (the file read
 * as a stream) and one in parts (read part by part), both paced by the bandwidth limit so that the rewrite lands mid-way, into a
 * local folder.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { ServiceError } from '../../src-main/errors';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

let app: App;
let work: string;

beforeAll(async () => {
  work = scratchDir('changed-during');
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false, uploads: { bandwidthLimit: 2 * MiB } });
});

afterAll(async () => {
  await app?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const jobRow = (id: number) => app.db.prepare('SELECT state, error FROM upload_jobs WHERE id = ?').get(id) as { state: string; error: string | null };

describe('a file that changes while it is uploaded', () => {
  it.each([
    ['in one request', 4 * MiB],
    ['in parts', 12 * MiB],
  ])('%s: fails with conflict and publishes nothing', async (_how, size) => {
    const folder = join(work, `into-${size}`);
    mkdirSync(folder);
    const accountId = (await app.accounts.connect({ service: 'local', options: { path: folder } })).id;
    const local = join(work, `source-${size}.bin`);
    writeFileSync(local, randomBytes(size));
    const jobId = await app.uploads.uploader.plan({ accountId, parentId: 'root', localPath: local });
    const running = app.uploads.uploader.resume(jobId);
    running.catch(() => {});
    await expect.poll(() => app.transfers.list().find((t) => t.id === `upload-${jobId}`)?.bytesDone ?? 0, { timeout: 10_000 }).toBeGreaterThan(MiB);
    // Rewritten in place, the same size: only the content and the modification time differ.
    writeFileSync(local, randomBytes(size));
    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ code: 'conflict', message: expect.stringContaining('changed while it was uploaded') });
    expect(jobRow(jobId).state).toBe('failed');
    // Nothing under its name, and no temporary file or session's parts kept for a version that is gone.
    expect(readdirSync(folder)).toEqual([]);
  }, 30_000);
});
