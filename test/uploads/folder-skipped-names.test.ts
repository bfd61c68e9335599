/**
 * The desktop app's upload of a dropped folder (spec 1, Upload a file, for each file of the
 * tree) when the folder holds what cannot be uploaded: a name that is not valid UTF-8 (common
 * on old disks and archives made on Windows), a link, a named pipe. Those are skipped, the rest
 * is uploaded, and the transfer ends saying what was skipped.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { uploadLocalFolder } from '../../src-main/services/folder-upload';
import { scratchDir } from '../servers/util';

/** "café" spelled in Latin-1: not valid UTF-8. */
const latin1In = (dir: string, ext = '') => Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xe9]), Buffer.from(ext)]);

let app: App;
let work: string;
let mem: number;

beforeAll(async () => {
  work = scratchDir('folder-skipped-names');
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  mem = (await app.accounts.connect({ service: 'memory', options: { store: `folder-skipped-names-${process.pid}` } })).id;
});

afterAll(async () => {
  await app?.close();
  rmSync(work, { recursive: true, force: true });
});

const names = async (folder: string) => (await app.storage.list(mem, folder)).items.map((i) => i.name).sort();
const transferOf = (name: string) => app.transfers.list().find((t) => t.name === name);

describe('a dropped folder with names that are not valid UTF-8 (spec 1, Upload a file)', () => {
  it('uploads everything else and ends the transfer naming the one skipped', async () => {
    const dropped = join(work, 'Holiday');
    mkdirSync(join(dropped, 'inner'), { recursive: true });
    writeFileSync(join(dropped, 'a.txt'), 'a');
    writeFileSync(join(dropped, 'inner', 'b.txt'), 'bb');
    writeFileSync(latin1In(dropped, '.txt'), 'unnamed');
    const top = await uploadLocalFolder(app, mem, 'root', dropped);
    expect(await names(top.id)).toEqual(['a.txt', 'inner']);
    const inner = (await app.storage.list(mem, top.id)).items.find((i) => i.name === 'inner')!;
    expect(await names(inner.id)).toEqual(['b.txt']);
    expect(transferOf('Holiday')).toMatchObject({ state: 'failed', bytesDone: 3, error: '1 file was skipped: names not valid UTF-8 (caf\uFFFD.txt). Everything else was uploaded.' });
  });

  it('skips a folder so named with what it holds, and links and pipes, and counts them all', async () => {
    const dropped = join(work, 'Archive');
    mkdirSync(dropped);
    writeFileSync(join(dropped, 'kept.txt'), 'kept');
    mkdirSync(latin1In(dropped));
    writeFileSync(Buffer.concat([latin1In(dropped), Buffer.from('/inside.txt')]), 'inside');
    symlinkSync(join(dropped, 'kept.txt'), join(dropped, 'link'));
    expect(spawnSync('mkfifo', [join(dropped, 'pipe')]).status).toBe(0);
    const top = await uploadLocalFolder(app, mem, 'root', dropped);
    expect(await names(top.id)).toEqual(['kept.txt']);
    const t = transferOf('Archive');
    expect(t?.state).toBe('failed');
    expect(t?.error).toMatch(/^3 files were skipped: names not valid UTF-8 \(caf\uFFFD\); links, pipes, sockets or devices \((link, pipe|pipe, link)\)\./);
  });

  it('a folder with nothing to skip ends done, as before', async () => {
    const dropped = join(work, 'Clean');
    mkdirSync(dropped);
    writeFileSync(join(dropped, 'one.txt'), 'one');
    const top = await uploadLocalFolder(app, mem, 'root', dropped);
    expect(await names(top.id)).toEqual(['one.txt']);
    expect(transferOf('Clean')).toMatchObject({ state: 'done', error: null, bytesDone: 3 });
  });
});
