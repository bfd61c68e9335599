/**
 * spec 1, Upload a file: "A deprecated form using a multipart form POST (a `metadata` part with
 * the JSON and a `file` part) exists" in v0 — answered as the binary form is (201, the file
 * object, renamed on a name conflict unless `overwrite`); spec 3, Versioning (v0 → v1): "Files
 * are uploaded as binary content instead of a multipart form POST", so v1/v2 refuse the form.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FormData, Response } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FORM_UPLOAD_BYTES, readForm } from '../../src-main/rest/routes';
import { importLocal, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let acc: { id: number; token: string; folder: string };

beforeAll(async () => {
  s = await startRest();
  acc = await importLocal(s, 'form-upload');
});
afterAll(async () => {
  await s?.stop();
});

/** A multipart/form-data body as a client library builds it (undici's FormData encoder). */
async function form(parts: { metadata?: string; file?: { bytes: Buffer; filename: string } }): Promise<{ raw: Buffer; type: string }> {
  const fd = new FormData();
  if (parts.metadata !== undefined) fd.set('metadata', parts.metadata);
  if (parts.file) fd.set('file', new Blob([parts.file.bytes]), parts.file.filename);
  const res = new Response(fd);
  return { raw: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type')! };
}

describe('spec 1 Upload a file: the deprecated v0 multipart form', () => {
  it('v0 form with metadata + file parts: 201 with the file; the bytes land intact; a second one is renamed', async () => {
    const bytes = randomBytes(70_000);
    const f = await form({ metadata: JSON.stringify({ parent_id: 'root', name: 'form.bin' }), file: { bytes, filename: 'ignored.bin' } });
    const res = await s.call('POST', `/v0/accounts/${acc.id}/files/`, { raw: f.raw, headers: { 'content-type': f.type } });
    expect(res.status, res.text).toBe(201);
    expect(res.json).toMatchObject({ name: 'form.bin', size: bytes.length, type: 'file', path: '/form.bin' });
    expect(res.json.raw_id).toBe('/form.bin');
    expect(readFileSync(join(acc.folder, 'form.bin')).equals(bytes)).toBe(true);

    const again = await s.call('POST', `/v0/accounts/${acc.id}/files/`, { raw: f.raw, headers: { 'content-type': f.type } });
    expect(again.status).toBe(201);
    expect(again.json.name).not.toBe('form.bin');
    const over = await s.call('POST', `/v0/accounts/${acc.id}/files/?overwrite=true`, { raw: f.raw, headers: { 'content-type': f.type } });
    expect(over.status).toBe(201);
    expect(over.json.name).toBe('form.bin');
  });

  it('without `name` in the metadata the file part\'s filename is used', async () => {
    const f = await form({ metadata: JSON.stringify({ parent_id: 'root' }), file: { bytes: Buffer.from('hi'), filename: 'from-part.txt' } });
    const res = await s.call('POST', `/v0/accounts/${acc.id}/files`, { raw: f.raw, headers: { 'content-type': f.type } });
    expect(res.status, res.text).toBe(201);
    expect(res.json.name).toBe('from-part.txt');
  });

  it('a form without a file part, with bad metadata, or not a form at all is 400; in v1/v2 the form is 415', async () => {
    const noFile = await form({ metadata: JSON.stringify({ parent_id: 'root', name: 'x' }) });
    const r1 = await s.call('POST', `/v0/accounts/${acc.id}/files`, { raw: noFile.raw, headers: { 'content-type': noFile.type } });
    expect(r1.status).toBe(400);
    expect(isErrorBody(r1.json, 400)).toBe(true);
    const badMeta = await form({ metadata: '{', file: { bytes: Buffer.from('x'), filename: 'x' } });
    expect((await s.call('POST', `/v0/accounts/${acc.id}/files`, { raw: badMeta.raw, headers: { 'content-type': badMeta.type } })).status).toBe(400);
    const garbage = await s.call('POST', `/v0/accounts/${acc.id}/files`, { raw: 'not a form', headers: { 'content-type': 'multipart/form-data; boundary=zzz' } });
    expect(garbage.status).toBe(400);
    const ok = await form({ metadata: JSON.stringify({ parent_id: 'root', name: 'v1.txt' }), file: { bytes: Buffer.from('x'), filename: 'x' } });
    for (const v of ['v1', 'v2']) {
      const r = await s.call('POST', `/${v}/accounts/${acc.id}/storage/files`, { raw: ok.raw, headers: { 'content-type': ok.type } });
      expect(r.status).toBe(415);
      expect(r.json.error_code).toBe('unsupported_media_type');
    }
  });

  // A client that goes away mid-form: the read ends with an error rather than waiting for the
  // rest of the body for good (holding what came, up to the cap, for the life of the process).
  it.each([
    ['fails', (r: Readable) => r.destroy(new Error('connection reset'))],
    ['closes without an error', (r: Readable) => r.destroy()],
  ])('a form body that %s part-way fails the read with 400', async (_how, end) => {
    const f = await form({ metadata: JSON.stringify({ parent_id: 'root', name: 'cut.bin' }), file: { bytes: randomBytes(200_000), filename: 'cut.bin' } });
    const body = new Readable({ read() {} });
    body.push(f.raw.subarray(0, 50_000));
    const read = readForm(body, f.type);
    setImmediate(() => end(body));
    await expect(read).rejects.toMatchObject({ code: 'bad_request' });
  }, 10_000);

  it('a form over the cap is 413 payload_too_large, answered on the same request, and nothing is written', async () => {
    const f = await form({ metadata: JSON.stringify({ parent_id: 'root', name: 'huge.bin' }), file: { bytes: Buffer.alloc(MAX_FORM_UPLOAD_BYTES + 1), filename: 'huge.bin' } });
    const res = await s.call('POST', `/v0/accounts/${acc.id}/files`, { raw: f.raw, headers: { 'content-type': f.type } });
    expect(res.status).toBe(413);
    expect(isErrorBody(res.json, 413)).toBe(true);
    expect(res.json.error_code).toBe('payload_too_large');
    expect(existsSync(join(acc.folder, 'huge.bin'))).toBe(false);
  });
});
