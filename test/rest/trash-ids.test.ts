/**
 * spec 1, Folder ("Special folder ids: `root` ... and `trash`") and File `id` / `path`: an item
 * in the trash has an id and a path of its own, never those of a live file of the same name in
 * the root. Local account with its own trash folder (freedesktop.org layout), over REST.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLocal, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let acc: { id: number; token: string; folder: string };

beforeAll(async () => {
  s = await startRest();
  acc = await importLocal(s, 'trash-ids');
});
afterAll(async () => {
  await s?.stop();
});

describe('spec 1 Folder `trash`: trashed items do not collide with live root files', () => {
  it('a trashed a.txt and a new live a.txt have different ids and paths; each id reads back its own item', async () => {
    const base = `/v1/accounts/${acc.id}/storage`;
    writeFileSync(join(acc.folder, 'a.txt'), 'old');
    const root1 = await s.call('GET', `${base}/folders/root/contents`);
    const old = (root1.json.objects as { id: string; name: string }[]).find((o) => o.name === 'a.txt')!;
    expect((await s.call('DELETE', `${base}/files/${old.id}`)).status).toBe(204);
    writeFileSync(join(acc.folder, 'a.txt'), 'new live content');
    const root2 = await s.call('GET', `${base}/folders/root/contents`);
    const live = (root2.json.objects as { id: string; name: string; path: string }[]).find((o) => o.name === 'a.txt')!;

    const trash = await s.call('GET', `${base}/folders/trash`);
    expect(trash.json).toMatchObject({ id: 'trash', path: null });
    expect(trash.json.path).not.toBe(live.path);
    const listed = await s.call('GET', `${base}/folders/trash/contents`);
    const trashed = (listed.json.objects as { id: string; name: string; path: string | null; parent: { id: string } }[]).find((o) => o.name === 'a.txt')!;
    expect(trashed.id).not.toBe(live.id);
    expect(trashed.path).toBeNull();
    expect(trashed.parent.id).toBe('trash');
    expect(live.path).toBe('/a.txt');

    // Each id names its own item: the trashed one reads back from the trash, the live one is the live file.
    const t = await s.call('GET', `${base}/files/${trashed.id}`);
    expect(t.status, t.text).toBe(200);
    expect(t.json).toMatchObject({ id: trashed.id, parent: { id: 'trash' }, size: 3 });
    const l = await s.call('GET', `${base}/files/${live.id}`);
    expect(l.json).toMatchObject({ id: live.id, size: 16 });
    const body = await s.call('GET', `${base}/files/${live.id}/contents`);
    expect(body.text).toBe('new live content');

    // A trashed item is read-only here: deleting or downloading it does not touch the live file.
    const del = await s.call('DELETE', `${base}/files/${trashed.id}`);
    expect(del.status).toBe(403);
    expect(isErrorBody(del.json, 403)).toBe(true);
    expect((await s.call('GET', `${base}/files/${live.id}`)).status).toBe(200);
  });
});
