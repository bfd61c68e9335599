/**
 * spec 1, Paging wrappers (v0) and spec 3, Versioning ("Pagination is uniform"): every paged
 * list carries `total`, and a page past the last one is a 404 `not_found` ("Invalid page"), as
 * clients of the original service expect, not an empty 200.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLocal, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let acc: { id: number; token: string; folder: string };

beforeAll(async () => {
  s = await startRest();
  acc = await importLocal(s, 'paging');
  for (const n of ['a.txt', 'b.txt', 'c.txt']) writeFileSync(join(acc.folder, n), n);
});
afterAll(async () => {
  await s?.stop();
});

describe('spec 1 paging: total, and a page past the end', () => {
  it.each(['v1', 'v2'] as const)('%s folder contents carry total; the page after the last is 404 not_found', async (v) => {
    const base = `/${v}/accounts/${acc.id}/storage/folders/root/contents?page_size=2`;
    const p1 = await s.call('GET', `${base}&page=1`);
    expect(p1.status).toBe(200);
    expect(p1.json).toMatchObject({ total: 3, count: 2, page: '1', next_page: '2' });
    const p2 = await s.call('GET', `${base}&page=2`);
    expect(p2.json).toMatchObject({ total: 3, count: 1, page: '2', next_page: null });
    const p3 = await s.call('GET', `${base}&page=3`);
    expect(p3.status).toBe(404);
    expect(isErrorBody(p3.json, 404)).toBe(true);
    expect(p3.json.error_code).toBe('not_found');
  });

  it('v0 accounts: total on every page; page 2 of one account is 404, page 1 of an empty filter is an empty 200', async () => {
    const p1 = await s.call('GET', '/v0/accounts?page_size=1');
    expect(p1.json).toMatchObject({ total: 1, count: 1, page: 1 });
    const p2 = await s.call('GET', '/v0/accounts?page_size=1&page=2');
    expect(p2.status).toBe(404);
    expect(p2.json.error_code).toBe('not_found');
    const none = await s.call('GET', '/v0/accounts?active=false');
    expect(none.status).toBe(200);
    expect(none.json).toMatchObject({ total: 0, count: 0, objects: [] });
  });

  it('v1 links and v0 recent: past the end is 404', async () => {
    const links = await s.call('GET', `/v1/accounts/${acc.id}/storage/links?page=2`);
    expect(links.status).toBe(404);
    const first = await s.call('GET', `/v1/accounts/${acc.id}/storage/links`);
    expect(first.json).toMatchObject({ total: 0, count: 0, page: '1', next_page: null });
    await s.call('GET', `/v1/accounts/${acc.id}/storage/folders/root/contents`);
    const recent = await s.call('GET', `/v0/accounts/${acc.id}/recent?page_size=3&page=2`);
    expect(recent.status).toBe(404);
    const recent1 = await s.call('GET', `/v0/accounts/${acc.id}/recent?page_size=3`);
    expect(recent1.json).toMatchObject({ total: 3, count: 3 });
  });
});
