// Downloading a selection (several files, folders) over a real local-folder account: the web
// UI's one zip stream by a one-use ticket (contract files.zipTicket, GET /app/zip/<ticket>), and
// the desktop app's download into a chosen folder (files.downloadInto), refused headless.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { dispatch } from '../../src-main/rpc/dispatch';
import { createHandlers } from '../../src-main/rpc/handlers';
import { createHttpServer, type HttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';

let app: App;
let http: HttpServer;
let account: number;
let tripId: string;
let notesId: string;
const home = scratchDir('selection-home');
const saveDir = scratchDir('selection-save');
const photo = Buffer.alloc(200_000, 7);

beforeAll(async () => {
  mkdirSync(join(home, 'Trip', 'inner'), { recursive: true });
  mkdirSync(join(home, 'Trip', 'empty'));
  writeFileSync(join(home, 'Trip', 'photo.jpg'), photo);
  writeFileSync(join(home, 'Trip', 'inner', 'note.txt'), 'inner note');
  writeFileSync(join(home, 'notes.txt'), 'loose');
  app = await createApp({ dataDir: scratchDir('selection-data'), defaultLocalFolder: home });
  account = app.accounts.list()[0].id;
  const root = await app.storage.list(account, 'root');
  tripId = root.items.find((i) => i.name === 'Trip')!.id;
  notesId = root.items.find((i) => i.name === 'notes.txt')!.id;
  http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: 'selection-token-0123456789' });
});
afterAll(async () => {
  await http?.close();
  await app?.close();
});

const headless = () => createHandlers(app, { mode: 'headless', version: 'test' });

describe('the web UI downloads a selection as one zip stream (spec 1, Download a file; web UI)', () => {
  it('streams the folder tree and the file, and the ticket works once', async () => {
    const r = await dispatch(headless(), 'files.zipTicket', { account, ids: [tripId, notesId] });
    if (!r.ok) throw new Error(r.error.message);
    const url = `${http.url}${(r.value as { url: string }).url}`;
    const res = await request(url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/zip');
    expect(res.headers['content-disposition']).toBe("attachment; filename*=UTF-8''Tributary.zip");
    const zip = join(saveDir, 'web.zip');
    writeFileSync(zip, Buffer.from(await res.body.arrayBuffer()));
    const out = join(saveDir, 'web');
    expect(spawnSync('unzip', ['-q', zip, '-d', out]).status).toBe(0);
    expect(readFileSync(join(out, 'Trip', 'photo.jpg')).equals(photo)).toBe(true);
    expect(readFileSync(join(out, 'Trip', 'inner', 'note.txt'), 'utf8')).toBe('inner note');
    expect(statSync(join(out, 'Trip', 'empty')).isDirectory()).toBe(true);
    expect(readFileSync(join(out, 'notes.txt'), 'utf8')).toBe('loose');
    // Used once: the same link is gone, with the documented error body.
    const again = await request(url);
    expect(again.statusCode).toBe(404);
    expect(await again.body.json()).toMatchObject({ status_code: 404, error_code: 'not_found' });
  });

  it('a zip ticket does not download through the single-file route, nor a file ticket as a zip', async () => {
    const zip = await dispatch(headless(), 'files.zipTicket', { account, ids: [notesId] });
    const asFile = (zip as { value: { url: string } }).value.url.replace('/app/zip/', '/app/download/');
    const r1 = await request(`${http.url}${asFile}`);
    expect(r1.statusCode).toBe(404);
    await r1.body.dump();
    const file = await dispatch(headless(), 'files.downloadTicket', { account, id: notesId });
    const asZip = (file as { value: { url: string } }).value.url.replace('/app/download/', '/app/zip/');
    const r2 = await request(`${http.url}${asZip}`);
    expect(r2.statusCode).toBe(404);
    await r2.body.dump();
  });
});

describe('the desktop app downloads a selection into a chosen folder (files.downloadInto)', () => {
  it('recreates the tree, never replaces what is there, and shows the files in Transfers', async () => {
    const into = scratchDir('selection-into');
    writeFileSync(join(into, 'notes.txt'), 'mine, keep it');
    const desktop = createHandlers(app, { mode: 'electron', version: 'test', chooseFolder: async () => into });
    const r = await dispatch(desktop, 'files.downloadInto', { account, ids: [tripId, notesId] });
    expect(r).toEqual({ ok: true, value: { path: into, started: 3 } });
    const names = ['photo.jpg', 'note.txt', 'notes.txt'];
    await expect.poll(() => app.transfers.list().filter((t) => t.direction === 'download' && names.includes(t.name) && t.state === 'done').length, { timeout: 20_000 }).toBe(3);
    expect(readFileSync(join(into, 'Trip', 'photo.jpg')).equals(photo)).toBe(true);
    expect(readFileSync(join(into, 'Trip', 'inner', 'note.txt'), 'utf8')).toBe('inner note');
    expect(statSync(join(into, 'Trip', 'empty')).isDirectory()).toBe(true);
    expect(readFileSync(join(into, 'notes.txt'), 'utf8')).toBe('mine, keep it');
    expect(readFileSync(join(into, 'notes (2).txt'), 'utf8')).toBe('loose');
  });

  it('a cancelled folder dialog downloads nothing; headless refuses (a browser may not pick local paths)', async () => {
    const cancelled = createHandlers(app, { mode: 'electron', version: 'test', chooseFolder: async () => null });
    expect(await dispatch(cancelled, 'files.downloadInto', { account, ids: [notesId] })).toEqual({ ok: true, value: { path: null, started: 0 } });
    const r = await dispatch(headless(), 'files.downloadInto', { account, ids: [notesId], to: saveDir });
    expect(r).toMatchObject({ ok: false, error: { code: 'not_implemented' } });
    expect(existsSync(join(saveDir, 'notes.txt'))).toBe(false);
  });
});
