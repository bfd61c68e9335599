/**
 * A full disk, on real (small tmpfs) file systems: the disk holding Tributary's data folder (its
 * SQLite database), and the disk of a local account's folder. Every answer tells the truth:
 * `201` and the file is there, or `507 insufficient_storage` (README "Errors") and it is not;
 * never `500`. Changes made while the data disk was full reach the activity stream (spec 3,
 * Activity) once there is room again, without a restart, and the follower reported the failure
 * meanwhile. Needs root (mount); CI runs as root.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../activity/helpers';
import { isErrorBody, startRest, type RestServer } from '../rest/harness';
import { scratchDir } from '../servers/util';

const base = scratchDir('disk-full');
const dataDisk = join(base, 'data-disk');
const folderDisk = join(base, 'folder-disk');
const mounted: string[] = [];
const servers: RestServer[] = [];
let server: RestServer;

/** A server whose data folder is on the small data disk; its followers watch, or poll. */
async function start(mode: 'watch' | 'poll'): Promise<void> {
  server = await startRest({ dataDir: join(dataDisk, mode), activity: { followers: { pollIntervalMs: 200, maxBackoffMs: 800, forcePolling: mode === 'poll' } } });
  servers.push(server);
}

function mountTmpfs(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mount -t tmpfs refused (${r.status}): ${r.stderr || r.error?.message} — this test needs root, as in CI`);
  mounted.push(dir);
}

/** Fills the file system holding `dir` until it reports ENOSPC; returns the ballast file. */
function fill(dir: string): string {
  const ballast = join(dir, 'ballast');
  const fd = openSync(ballast, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  return ballast;
}

async function upload(accountId: number, name: string, body: Buffer, parent = 'root') {
  return server.call('POST', `/v1/accounts/${accountId}/storage/files/`, {
    headers: { 'x-service-metadata': JSON.stringify({ parent_id: parent, name }) },
    raw: body,
  });
}

async function importLocal(name: string, folder: string): Promise<number> {
  mkdirSync(folder, { recursive: true });
  const trash = join(base, `${name}-trash`);
  mkdirSync(trash, { recursive: true });
  const res = await server.call('POST', '/v2/accounts', { body: { service: 'local', account: name, token: '', path: folder, trash_dir: trash } });
  if (res.status !== 201) throw new Error(`import failed: ${res.status} ${res.text}`);
  return res.json.id as number;
}

beforeAll(async () => {
  mountTmpfs(dataDisk, '4m');
  mountTmpfs(folderDisk, '2m');
});

afterAll(async () => {
  for (const s of servers) await s.stop();
  for (const dir of mounted) spawnSync('umount', [dir]);
  rmSync(base, { recursive: true, force: true });
});

describe('a full data disk (SQLite): 201-and-there or 507-and-absent, and activity catches up (README "Errors", spec 3 Activity)', () => {
  it.each(['watch', 'poll'] as const)('uploads, listings and external changes while full; the missed changes appear once there is room (follower: %s)', async (mode) => {
    await start(mode);
    const folder = join(base, `account-${mode}`);
    const account = await importLocal(`data-full-${mode}`, folder);
    const sub = await server.app.activity.subscriptions.create(account, {});
    const follower = () => server.app.activity.followers.status().find((s) => s.subscription === sub.id);
    const running = mode === 'watch' ? 'watching' : 'polling';
    await until(() => (follower()?.mode === running && follower()?.lastRunAt) || undefined, 10_000, `follower ${running}`);

    // A WAL emptied now must grow for any later write: the database is really out of room.
    server.app.db.pragma('wal_checkpoint(TRUNCATE)');
    const ballast = fill(dataDisk);

    const answers: { name: string; status: number; json: any }[] = [];
    for (let i = 0; i < 4; i++) {
      const name = `uploaded-${i}.txt`;
      const r = await upload(account, name, Buffer.from(`upload ${i}`));
      answers.push({ name, status: r.status, json: r.json });
    }
    for (const a of answers) {
      expect([201, 507]).toContain(a.status);
      if (a.status === 201) {
        expect(a.json.name).toBe(a.name);
        expect(readFileSync(join(folder, a.name), 'utf8')).toBe(`upload ${a.name.slice(9, 10)}`);
      } else {
        expect(isErrorBody(a.json, 507)).toBe(true);
        expect(a.json.error_code).toBe('insufficient_storage');
        expect(existsSync(join(folder, a.name))).toBe(false);
      }
    }
    // The data disk itself cannot take a file: an upload to the `ephemeral` area (kept in the
    // data folder) is 507 and leaves nothing behind.
    const ephemeral = await upload(account, 'ephemeral.bin', Buffer.alloc(32 * 1024, 1), 'ephemeral');
    expect(ephemeral.status).toBe(507);
    expect(isErrorBody(ephemeral.json, 507)).toBe(true);
    expect(ephemeral.json.error_code).toBe('insufficient_storage');
    expect(readdirSync(join(dataDisk, mode), { recursive: true }).filter((p) => String(p).endsWith('content'))).toEqual([]);
    // A listing answers what is on disk, though the cache cannot take it.
    const listing = await server.call('GET', `/v1/accounts/${account}/storage/folders/root/contents?page_size=100`);
    expect(listing.status).toBe(200);
    expect(listing.json.objects.map((o: { name: string }) => o.name).sort()).toEqual(readdirSync(folder).sort());

    for (let i = 0; i < 3; i++) writeFileSync(join(folder, `external-${i}.txt`), `external ${i}`);
    // The follower cannot record them, and says so.
    const failing = await until(() => follower()?.error ?? undefined, 10_000, 'the follower to report the failure');
    expect(failing).toMatch(/disk|full/i);

    rmSync(ballast);
    const expected = [...answers.filter((a) => a.status === 201).map((a) => `/${a.name}`), '/external-0.txt', '/external-1.txt', '/external-2.txt'];
    await until(() => {
      const paths = server.app.activity.log.list(account, sub.id).records.filter((r) => r.type === 'add').map((r) => r.path);
      return expected.every((p) => paths.includes(p)) || undefined;
    }, 15_000, 'the missed changes in the activity stream');
    await until(() => follower()?.error === null || undefined, 10_000, 'the follower error to clear');
    expect(follower()?.mode).toBe(running);

    // And the cache serves the truth again once it could be written.
    const again = await server.call('GET', `/v1/accounts/${account}/storage/folders/root/contents?page_size=100`);
    expect(again.json.objects.map((o: { name: string }) => o.name).sort()).toEqual(readdirSync(folder).sort());
  });
});

describe("a full account disk (README \"Errors\", 507): the upload is refused and leaves nothing behind", () => {
  it('507 insufficient_storage, no file and no temporary file; 201 once there is room', async () => {
    const folder = join(folderDisk, 'account');
    await start('watch');
    const account = await importLocal('folder-full', folder);
    const ballast = fill(folderDisk);
    const body = Buffer.alloc(512 * 1024, 7);
    const r = await upload(account, 'big.bin', body);
    expect(r.status).toBe(507);
    expect(isErrorBody(r.json, 507)).toBe(true);
    expect(r.json.error_code).toBe('insufficient_storage');
    expect(readdirSync(folder)).toEqual([]);

    rmSync(ballast);
    const ok = await upload(account, 'big.bin', body);
    expect(ok.status).toBe(201);
    expect(ok.json.name).toBe('big.bin');
    expect(readFileSync(join(folder, 'big.bin')).equals(body)).toBe(true);
  });
});
