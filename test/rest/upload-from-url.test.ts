// spec 1, Upload a file (from a URL): "Any size is accepted and a multipart upload is used
// automatically when required and supported" (spec 1). Against moto, whose ETag of a
// multipart object is md5-of-part-md5s followed by "-<parts>".
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMoto, type S3Server } from '../servers/s3';
import { startRest, type RestServer } from './harness';

const MiB = 1 << 20;
const big = randomBytes(20 * MiB);
let s: RestServer;
let moto: S3Server;
let source: Server;
let sourceUrl: string;

beforeAll(async () => {
  moto = await startMoto('from-url');
  s = await startRest();
  // The source is on loopback, which upload from a URL reaches only when allowed.
  s.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
  source = createServer((req, res) => {
    if (req.url === '/big.bin') {
      res.writeHead(200, { 'content-length': String(big.length), 'content-type': 'application/octet-stream' });
      res.end(big);
    } else {
      // No Content-Length: a chunked answer, which the spec does not accept.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('chunked ');
      res.end('body');
    }
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  source?.close();
  await s?.stop();
  await moto?.stop();
});

describe('upload from a URL into S3', () => {
  it('goes up as a multipart object and downloads byte-identical', async () => {
    const o = moto.options;
    const acc = await s.call('POST', '/v1/accounts', {
      body: { service: 's3', account: 'bucket', token: o.accessKeyId, token_secret: o.secretAccessKey, endpoint: o.endpoint, region: o.region, bucket: o.bucket, path_style: true },
    });
    expect(acc.status, acc.text).toBe(201);
    const up = await s.call('POST', `/v1/accounts/${acc.json.id}/storage/files/`, { body: { parent_id: 'root', name: 'big.bin', url: `${sourceUrl}/big.bin` } });
    expect(up.status, up.text).toBe(201);
    expect(up.json).toMatchObject({ name: 'big.bin', size: big.length });

    const client = new S3Client({ endpoint: o.endpoint, region: o.region, forcePathStyle: true, credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } });
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: 'big.bin' }));
      expect(head.ContentLength).toBe(big.length);
      expect(head.ETag).toMatch(/-\d+"$/); // assembled from parts
    } finally {
      client.destroy();
    }
    const down = await s.call('GET', `/v1/accounts/${acc.json.id}/storage/files/${up.json.id}/contents`);
    expect(createHash('sha256').update(down.buffer).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));

    // A source without Content-Length is refused with the documented error.
    const chunked = await s.call('POST', `/v1/accounts/${acc.json.id}/storage/files/`, { body: { parent_id: 'root', name: 'c.txt', url: `${sourceUrl}/chunked` } });
    expect(chunked.status).toBe(400);
    expect(chunked.json.error_code).toBe('invalid_parameters');
  });
});
