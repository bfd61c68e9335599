/**
 * The `local` connector and file times a date cannot hold: file systems with 64-bit times (tmpfs,
 * btrfs, XFS with bigtime) keep a modification time of year 318,857 or one before year 0, which
 * Node gives as an Invalid Date. Such a time is unknown (`modified: null`): the folder lists, the
 * file downloads and copies as any other (spec 1, List folder contents, "modified"), and two-way
 * sync copies it (docs/sync.md).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../rest/harness';
import { localEngine } from '../sync/scenario';

// tmpfs keeps 64-bit times on Linux; elsewhere the test has no such file system to stand on.
const SHM = '/dev/shm';
const FAR_FUTURE_S = 1e13; // year 318,857
const FAR_PAST_S = -1e14;

let server: RestServer;
let folder: string;
let account: number;

describe.skipIf(!existsSync(SHM))('local files whose times a date cannot hold', () => {
  beforeAll(async () => {
    server = await startRest();
    folder = join(SHM, `tributary-far-dates-${process.pid}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'future.txt'), 'from the far future');
    writeFileSync(join(folder, 'past.txt'), 'from the far past');
    writeFileSync(join(folder, 'today.txt'), 'today');
    // touch sets what utimes() from Node refuses (a time before 1970 that far back).
    for (const [name, s] of [['future.txt', FAR_FUTURE_S], ['past.txt', FAR_PAST_S]] as const) expect(spawnSync('touch', ['-d', `@${s}`, join(folder, name)]).status).toBe(0);
    const res = await server.call('POST', '/v2/accounts', { body: { service: 'local', account: 'far', token: '', path: folder, trash_dir: join(server.dir, 'trash') } });
    expect(res.status, res.text).toBe(201);
    account = res.json.id;
  });

  afterAll(async () => {
    await server?.stop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('list with `modified: null`, download, and the rest of the folder is unaffected', async () => {
    // The premise: this file system kept the time, and Node cannot make a Date of it.
    for (const name of ['future.txt', 'past.txt']) expect(Number.isNaN(statSync(join(folder, name)).mtime.getTime())).toBe(true);
    const r = await server.call('GET', `/v1/accounts/${account}/storage/folders/root/contents`);
    expect(r.status, r.text).toBe(200);
    const byName = Object.fromEntries((r.json.objects as { name: string; id: string; modified: string | null }[]).map((o) => [o.name, o]));
    expect(Object.keys(byName).sort()).toEqual(['future.txt', 'past.txt', 'today.txt']);
    expect(byName['future.txt'].modified).toBeNull();
    expect(byName['past.txt'].modified).toBeNull();
    expect(Date.parse(byName['today.txt'].modified!)).toBeGreaterThan(Date.now() - 3_600_000);
    const meta = await server.call('GET', `/v1/accounts/${account}/storage/files/${byName['future.txt'].id}`);
    expect(meta.status, meta.text).toBe(200);
    expect(meta.json.modified).toBeNull();
    const body = await server.call('GET', `/v1/accounts/${account}/storage/files/${byName['future.txt'].id}/contents`);
    expect(body.status).toBe(200);
    expect(body.text).toBe('from the far future');
  });

  it('a copy into another folder keeps the bytes; the time stays unknown rather than failing the copy', async () => {
    const r = await server.call('GET', `/v1/accounts/${account}/storage/folders/root/contents`);
    const future = (r.json.objects as { name: string; id: string }[]).find((o) => o.name === 'future.txt')!;
    const dest = await server.call('POST', `/v1/accounts/${account}/storage/folders`, { body: { parent_id: 'root', name: 'copies' } });
    expect(dest.status, dest.text).toBe(201);
    const copy = await server.call('POST', `/v1/accounts/${account}/storage/files/${future.id}/copy`, { body: { parent_id: dest.json.id } });
    expect(copy.status, copy.text).toBe(201);
    const got = await server.call('GET', `/v1/accounts/${account}/storage/files/${copy.json.id}/contents`);
    expect(got.text).toBe('from the far future');
  });

  // docs/sync.md, How changes are found: copies keep their source's time where the target can
  // set it; one no date holds is left to the target's clock instead of failing the copy.
  it('two-way sync copies such a file to another local folder', async () => {
    const dir = join(SHM, `tributary-far-sync-${process.pid}`);
    mkdirSync(join(dir, 'mine'), { recursive: true });
    mkdirSync(join(dir, 'theirs'), { recursive: true });
    writeFileSync(join(dir, 'mine', 'future.txt'), 'from the far future');
    expect(spawnSync('touch', ['-d', `@${FAR_FUTURE_S}`, join(dir, 'mine', 'future.txt')]).status).toBe(0);
    const { db, engine } = localEngine(dir, join(dir, 'theirs'), { manual: true });
    try {
      const pair = await engine.create({ localPath: join(dir, 'mine'), account: 1, remotePath: '/' });
      await engine.run(pair.id);
      expect(engine.store.pairs()[0]?.error ?? null).toBeNull();
      expect(readFileSync(join(dir, 'theirs', 'future.txt'), 'utf8')).toBe('from the far future');
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
