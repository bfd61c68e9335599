/** spec 1, Multipart upload and Create an upload URL, through REST v0 and v1 paths. */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3rver, type S3Server } from '../servers/s3';
import { importLocal, importMemory, isErrorBody, startRest, type RestServer } from './harness';

describe('REST multipart (spec 1, Multipart upload)', () => {
  let s: RestServer;
  let acc: number;
  beforeAll(async () => {
    s = await startRest();
    acc = (await importMemory(s, 'multipart')).id;
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('spec 1 Multipart upload: initialize, parts out of order, info, complete → 201 file', async () => {
    const data = randomBytes(5 * 1024 * 1024 + 12345);
    const init = await s.call('POST', `/v1/accounts/${acc}/storage/multipart?overwrite=false`, { body: { name: 'big.bin', parent_id: 'root', size: data.length } });
    expect(init.status, init.text).toBe(201);
    expect(init.json).toMatchObject({ account: acc, type: 'multipart', api: 'storage' });
    const { id, part_size: partSize } = init.json as { id: number; part_size: number };
    const count = Math.ceil(data.length / partSize);
    for (let n = count; n >= 1; n--) {
      const part = data.subarray((n - 1) * partSize, n * partSize);
      const r = await s.call('PUT', `/v1/accounts/${acc}/storage/multipart/${id}?part_number=${n}`, { raw: part, headers: { 'content-type': 'application/octet-stream' } });
      expect(r.status, r.text).toBe(200);
    }
    expect((await s.call('GET', `/v0/accounts/${acc}/multipart/${id}`)).json).toEqual({ id, account: acc, part_size: partSize, parallel_uploads: init.json.parallel_uploads });
    const done = await s.call('POST', `/v0/accounts/${acc}/multipart/${id}/complete`);
    expect(done.status, done.text).toBe(201);
    expect(done.json).toMatchObject({ name: 'big.bin', size: data.length, type: 'file' });
    const back = await s.call('GET', `/v0/accounts/${acc}/files/${done.json.id}/contents`);
    expect(back.buffer.equals(data)).toBe(true);
  });

  it('spec 1 Multipart upload: abort → 204; limits → invalid_parameters', async () => {
    const init = await s.call('POST', `/v0/accounts/${acc}/multipart`, { body: { name: 'gone.bin', parent_id: 'root', size: 6 * 1024 * 1024 } });
    expect(init.status).toBe(201);
    expect((await s.call('PUT', `/v0/accounts/${acc}/multipart/${init.json.id}?part_number=0`, { raw: 'x' })).status).toBe(400);
    expect((await s.call('PUT', `/v0/accounts/${acc}/multipart/${init.json.id}?part_number=10001`, { raw: 'x' })).status).toBe(400);
    const abort = await s.call('DELETE', `/v0/accounts/${acc}/multipart/${init.json.id}`);
    expect(abort.status).toBe(204);
    expect(abort.text).toBe('');
    const again = await s.call('GET', `/v0/accounts/${acc}/multipart/${init.json.id}`);
    expect(again.status).toBe(404);
    expect(isErrorBody(again.json, 404)).toBe(true);
    const small = await s.call('POST', `/v0/accounts/${acc}/multipart`, { body: { name: 'small.bin', parent_id: 'root', size: 100 } });
    expect(small.status).toBe(400);
    expect(small.json.error_code).toBe('invalid_parameters');
  });

  // spec 1, Errors: only "the three services that require it" refuse a session without `size`;
  // none of Tributary's backends is one of them (docs/rest.md, Multipart uploads).
  it('spec 1 Multipart upload: a session without size works on every backend (local, S3, memory)', async () => {
    let s3: S3Server | undefined;
    try {
      s3 = await startS3rver('multipart-no-size');
      const bucket = await s.call('POST', '/v1/accounts', {
        body: { service: 's3', account: 'No size', token: s3.accessKeyId, token_secret: s3.secretAccessKey, endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, path_style: true },
      });
      expect(bucket.status, bucket.text).toBe(201);
      const accounts = [(await importLocal(s, 'no-size')).id, bucket.json.id as number, acc];
      for (const account of accounts) {
        const init = await s.call('POST', `/v1/accounts/${account}/storage/multipart`, { body: { name: 'unsized.bin', parent_id: 'root' } });
        expect(init.status, `${account}: ${init.text}`).toBe(201);
        const { id, part_size: partSize } = init.json as { id: number; part_size: number };
        const data = randomBytes(partSize + 4321);
        for (const n of [2, 1]) {
          const r = await s.call('PUT', `/v1/accounts/${account}/storage/multipart/${id}?part_number=${n}`, { raw: data.subarray((n - 1) * partSize, n * partSize) });
          expect(r.status, r.text).toBe(200);
        }
        const done = await s.call('POST', `/v1/accounts/${account}/storage/multipart/${id}/complete`);
        expect(done.status, done.text).toBe(201);
        expect(done.json).toMatchObject({ name: 'unsized.bin', size: data.length });
        const back = await s.call('GET', `/v1/accounts/${account}/storage/files/${done.json.id}/contents`);
        expect(back.buffer.equals(data), `account ${account}`).toBe(true);
      }
    } finally {
      await s3?.stop();
    }
  });

  it('spec 1 Create an upload URL: expires_in 1-10000; not_implemented where the backend has none', async () => {
    const bad = await s.call('POST', `/v1/accounts/${acc}/storage/files/upload_url?expires_in=10001`, { body: { parent_id: 'root', name: 'u.bin' } });
    expect(bad.status).toBe(400);
    const none = await s.call('POST', `/v1/accounts/${acc}/storage/files/upload_url?expires_in=60`, { body: { parent_id: 'root', name: 'u.bin' } });
    expect(none.status).toBe(501);
    expect(none.json.error_code).toBe('not_implemented');
  });
});
