/**
 * spec 1, Accounts (import checks the connection first and creates nothing on failure; updates
 * re-verify credentials), Files (cross-account move), Search (failed accounts in `errors`),
 * Create an upload URL (object stores, s3rver), and the v2 OpenAPI document — against real
 * servers (Apache WebDAV, s3rver).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { startApache, type ApacheServer } from '../servers/apache';
import { startS3rver, type S3Server } from '../servers/s3';
import { importLocal, importMemory, isErrorBody, startRest, type RestServer } from './harness';

describe('REST accounts and cross-account operations (spec 1)', () => {
  let s: RestServer;
  let apache: ApacheServer;
  let s3: S3Server;
  beforeAll(async () => {
    s = await startRest();
    apache = await startApache();
    s3 = await startS3rver('rest-upload-url');
  });
  afterAll(async () => {
    await s?.stop();
    await apache?.stop();
    await s3?.stop();
  });

  const webdavBody = (token: string) => ({ service: 'webdav', account: apache.user, token, protocol: 'http', host: apache.host, port: apache.port, path: '/' });

  it('spec 1 Import an account: a connection that fails creates nothing', async () => {
    const before = (await s.call('GET', '/v0/accounts?page_size=1000')).json.total as number;
    const wrong = await s.call('POST', '/v0/accounts', { body: webdavBody('not-the-password') });
    expect(wrong.status).toBeGreaterThanOrEqual(400);
    expect(isErrorBody(wrong.json, wrong.status)).toBe(true);
    expect(wrong.json.message).toMatch(/connect/i);
    const unknown = await s.call('POST', '/v0/accounts', { body: { service: 'no-such-service', account: 'x', token: 'y' } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error_code).toBe('invalid_parameters');
    const missing = await s.call('POST', '/v0/accounts', { body: { service: 'webdav', token: 'y' } });
    expect(missing.status).toBe(400);
    expect((await s.call('GET', '/v0/accounts?page_size=1000')).json.total).toBe(before);
  });

  it('spec 1 Update an account: new credentials are verified before they are saved', async () => {
    const acc = await s.call('POST', '/v1/accounts', { body: webdavBody(apache.password) });
    expect(acc.status).toBe(201);
    expect(acc.json).toMatchObject({ service: 'webdav', account: apache.user, active: true, type: 'account', api: 'meta' });
    const bad = await s.call('PATCH', `/v1/accounts/${acc.json.id}`, { body: { token: 'wrong-password' } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    // Still works with the old password.
    expect((await s.call('GET', `/v1/accounts/${acc.json.id}/storage/folders/root/contents`)).status).toBe(200);
    const good = await s.call('PATCH', `/v1/accounts/${acc.json.id}`, { body: { token: apache.password, account: 'Apache' } });
    expect(good.status).toBe(200);
    expect(good.json.account).toBe('Apache');
    expect((await s.call('DELETE', `/v1/accounts/${acc.json.id}`)).status).toBe(204);
  });

  it('spec 1 Update an account: a value nested deeper than a comparison can walk is a bad parameter (400), not a 500', async () => {
    const acc = await importLocal(s, 'deep-update');
    const deep = `{"path":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const r = await s.call('PATCH', `/v1/accounts/${acc.id}`, { raw: deep, headers: { 'content-type': 'application/json' } });
    expect(r.status, r.text).toBe(400);
    expect(isErrorBody(r.json, 400)).toBe(true);
    expect((await s.call('GET', `/v1/accounts/${acc.id}`)).json.active).toBe(true);
  });

  it('spec 1 Rename / move: a file moves from a memory account to a WebDAV account (`account` + `parent_id`)', async () => {
    const mem = await importMemory(s, 'cross');
    const dav = (await s.call('POST', '/v2/accounts', { body: webdavBody(apache.password) })).json;
    const up = await s.call('POST', `/v2/accounts/${mem.id}/storage/files`, {
      raw: 'travelling bytes',
      headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'travel.txt' }) },
    });
    const moved = await s.call('PATCH', `/v2/accounts/${mem.id}/storage/files/${up.json.id}`, { body: { account: dav.id, parent_id: 'root' } });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ account: dav.id, name: 'travel.txt', path: '/travel.txt' });
    expect((await s.call('GET', `/v2/accounts/${mem.id}/storage/files/${up.json.id}`)).status).toBe(404);
    const back = await s.call('GET', `/v2/accounts/${dav.id}/storage/files/${moved.json.id}/contents`);
    expect(back.text).toBe('travelling bytes');
    // Without parent_id, `account` is refused.
    expect((await s.call('PATCH', `/v2/accounts/${dav.id}/storage/files/${moved.json.id}`, { body: { account: mem.id } })).status).toBe(400);
  });

  it('spec 1 Search: several accounts interleave; an account that fails is reported in `errors`', async () => {
    const a = await importMemory(s, 'search-a');
    const b = await importMemory(s, 'search-b');
    for (const [acc, names] of [
      [a.id, ['needle-a1', 'needle-a2', 'needle-a3']],
      [b.id, ['needle-b1']],
    ] as const) {
      for (const name of names) {
        await s.call('POST', `/v0/accounts/${acc}/files`, { raw: 'x', headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name }) } });
      }
    }
    const r = await s.call('GET', `/v0/accounts/${a.id},${b.id}/search?q=needle`);
    expect(r.status).toBe(200);
    expect(r.json.objects.map((o: { name: string }) => o.name)).toEqual(['needle-a1', 'needle-b1', 'needle-a2', 'needle-a3']);
    expect(r.json.errors).toEqual({});
    // A disabled account fails (StorageService.search swallows folder-listing errors, so a
    // server that is down yields no results rather than an error; see the report); the other
    // account still answers.
    const dav = (await s.call('POST', '/v2/accounts', { body: webdavBody(apache.password) })).json;
    expect((await s.call('PATCH', `/v2/accounts/${dav.id}`, { body: { enabled: false } })).json.enabled).toBe(false);
    const mixed = await s.call('GET', `/v1/accounts/${a.id},${dav.id}/storage/search?q=needle`);
    expect(mixed.status).toBe(200);
    expect(mixed.json.objects.map((o: { name: string }) => o.name)).toEqual(['needle-a1', 'needle-a2', 'needle-a3']);
    expect(Object.keys(mixed.json.errors)).toEqual([String(dav.id)]);
    expect(mixed.json.errors[String(dav.id)]).toMatchObject({ status_code: 403, error_code: 'forbidden' });
    expect(isErrorBody(mixed.json.errors[String(dav.id)], 403)).toBe(true);
  });

  it('spec 1 Create an upload URL: a presigned PUT on an S3 account (s3rver) creates the file', async () => {
    const acc = await s.call('POST', '/v2/accounts', {
      body: { service: 's3', account: 'Bucket', token: s3.accessKeyId, token_secret: s3.secretAccessKey, endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true },
    });
    expect(acc.status, acc.text).toBe(201);
    const u = await s.call('POST', `/v2/accounts/${acc.json.id}/storage/files/upload_url?expires_in=120&use_http=True`, { body: { parent_id: 'root', name: 'signed.txt' } });
    expect(u.status, u.text).toBe(201);
    expect(u.json).toMatchObject({ method: 'PUT', type: 'upload_url', api: 'storage' });
    const put = await request(u.json.url, { method: 'PUT', body: 'signed upload', headers: { 'content-length': '13' } });
    await put.body.dump();
    expect(put.statusCode).toBe(200);
    const list = await s.call('GET', `/v2/accounts/${acc.json.id}/storage/folders/root/contents`);
    expect(list.json.objects.map((o: { name: string }) => o.name)).toContain('signed.txt');
  });

  it('spec 1 Account, retrieve_tokens: token, token_secret and refresh_token read back what was imported or updated', async () => {
    s.app.settings.set('rest.retrieveTokens', true);
    try {
      const creds = async (id: number) => {
        const r = await s.call('GET', `/v1/accounts/${id}?retrieve_tokens=true&retrieve_full=false`);
        expect(r.status, r.text).toBe(200);
        return { token: r.json.token, token_secret: r.json.token_secret, refresh_token: r.json.refresh_token };
      };
      // S3: token = access key id, token_secret = secret access key (spec 1, Import an account).
      const bucket = await s.call('POST', '/v1/accounts', {
        body: { service: 's3', account: 'Creds bucket', token: s3.accessKeyId, token_secret: s3.secretAccessKey, refresh_token: 'r-1', endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true },
      });
      expect(bucket.status, bucket.text).toBe(201);
      expect(await creds(bucket.json.id)).toEqual({ token: s3.accessKeyId, token_secret: s3.secretAccessKey, refresh_token: 'r-1' });
      // WebDAV holds a password only: a token_secret and a refresh_token are kept beside it.
      const dav = await s.call('POST', '/v1/accounts', { body: { ...webdavBody(apache.password), token_secret: 'ts-1' } });
      expect(dav.status, dav.text).toBe(201);
      expect(await creds(dav.json.id)).toEqual({ token: apache.password, token_secret: 'ts-1', refresh_token: '' });
      const patched = await s.call('PATCH', `/v1/accounts/${dav.json.id}`, { body: { token_secret: 'ts-2', refresh_token: 'r-2' } });
      expect(patched.status, patched.text).toBe(200);
      expect(await creds(dav.json.id)).toEqual({ token: apache.password, token_secret: 'ts-2', refresh_token: 'r-2' });
      expect((await s.call('PATCH', `/v1/accounts/${dav.json.id}`, { body: { refresh_token: 7 } })).status).toBe(400);
    } finally {
      s.app.settings.set('rest.retrieveTokens', false);
    }
  });

  it('spec 1 Recent files on S3 (whole-second times): after tells two files of one second apart; ties go newest-learned first', async () => {
    const bucket = await s.call('POST', '/v1/accounts', {
      body: { service: 's3', account: 'Recent bucket', token: s3.accessKeyId, token_secret: s3.secretAccessKey, endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true, prefix: 'recent-test' },
    });
    expect(bucket.status, bucket.text).toBe(201);
    const up = (name: string) => s.call('POST', `/v1/accounts/${bucket.json.id}/storage/files`, { headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name }) }, raw: name });
    // Two files in one second of the bucket's clock (a retry when a second boundary falls between them).
    let first: { json: { modified: string } };
    let second: { json: { modified: string } };
    do {
      first = await up(`first-${Date.now()}.txt`);
      second = await up(`second-${Date.now()}.txt`);
    } while (first.json.modified !== second.json.modified);
    expect(first.json.modified).toMatch(/:\d\dZ$|\.000Z$/);
    const recent = await s.call('GET', `/v1/accounts/${bucket.json.id}/storage/recent?after=${encodeURIComponent(first.json.modified)}`);
    expect(recent.status, recent.text).toBe(200);
    const names = (recent.json.objects as { name: string }[]).map((o) => o.name);
    expect(names).toContain((second.json as unknown as { name: string }).name);
    // Same `modified`: the one Tributary learned of last comes first.
    const all = (await s.call('GET', `/v1/accounts/${bucket.json.id}/storage/recent`)).json.objects as { name: string }[];
    expect(all.findIndex((o) => o.name === (second.json as unknown as { name: string }).name)).toBeLessThan(all.findIndex((o) => o.name === (first.json as unknown as { name: string }).name));
  });

  it('spec 1 Account `quota`: used/total, with nulls where the service says nothing (S3, a disabled account)', async () => {
    const bucket = await s.call('POST', '/v2/accounts', {
      body: { service: 's3', account: 'Quota bucket', token: s3.accessKeyId, token_secret: s3.secretAccessKey, endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true },
    });
    expect(bucket.status, bucket.text).toBe(201);
    expect((await s.call('GET', `/v1/accounts/${bucket.json.id}`)).json.quota).toEqual({ used: null, total: null });
    const mem = await importMemory(s, 'quota-off');
    expect((await s.call('GET', `/v1/accounts/${mem.id}`)).json.quota).toMatchObject({ used: expect.any(Number) });
    expect((await s.call('PATCH', `/v1/accounts/${mem.id}`, { body: { active: false } })).status).toBe(200);
    expect((await s.call('GET', `/v1/accounts/${mem.id}`)).json.quota).toEqual({ used: null, total: null });
    // retrieve_full=false leaves it out (spec 1, Retrieve an account).
    expect((await s.call('GET', `/v1/accounts/${bucket.json.id}?retrieve_full=false`)).json).not.toHaveProperty('quota');
  });

  it('spec 1 Upload a file: recognised by its metadata header whatever the Content-Type, chunked without Content-Length', async () => {
    const mem = await importMemory(s, 'chunked');
    for (const [i, type] of [undefined, 'text/html', 'application/json', 'nonsense'].entries()) {
      const headers: Record<string, string> = { authorization: `APIKey ${s.apiKey}`, 'x-kloudless-metadata': JSON.stringify({ parent_id: 'root', name: `c${i}.bin` }) };
      if (type) headers['content-type'] = type;
      const res = await request(`${s.url}/v1/accounts/${mem.id}/storage/files`, { method: 'POST', headers, body: Readable.from([Buffer.from('part one, '), Buffer.from('part two')]) });
      const json = (await res.body.json()) as { size: number; name: string };
      expect(res.statusCode, JSON.stringify(json)).toBe(201);
      expect(json).toMatchObject({ name: `c${i}.bin`, size: 18 });
    }
  });

  it('v2 OpenAPI document: served without auth, lists the v2 routes', async () => {
    const r = await s.call('GET', '/v2/openapi.json', { auth: null });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json.openapi).toBe('3.1.0');
    expect(Object.keys(r.json.paths)).toEqual(expect.arrayContaining(['/v2/accounts', '/v2/accounts/{account}/storage/files/{id}', '/v2/accounts/{account}/storage/folders/{id}/contents']));
  });
});
