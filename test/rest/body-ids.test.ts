/**
 * What clients of this API family send (docs/rest.md, "Ids in request bodies"): a `parent_id`
 * that cannot be an id is a bad parameter (400 invalid_parameters); a well-formed id that names
 * nothing in the account is 404 not_found, as it is in a path. spec 1, Rename / move: `user`
 * requires `parent_id`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLocal, isErrorBody, startRest, type RestServer } from './harness';

describe('spec 1, ids in request bodies', () => {
  let s: RestServer;
  let acc: { id: number; folder: string };
  let other: { id: number };
  let fileId: string;
  let folderId: string;
  let foreignFolder: string;
  beforeAll(async () => {
    s = await startRest();
    acc = await importLocal(s, 'body-ids');
    other = await importLocal(s, 'body-ids-other');
    const up = await s.call('POST', `/v1/accounts/${acc.id}/storage/files`, { headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'a.txt' }) }, raw: 'a' });
    fileId = up.json.id;
    folderId = (await s.call('POST', `/v1/accounts/${acc.id}/storage/folders`, { body: { parent_id: 'root', name: 'dest' } })).json.id;
    foreignFolder = (await s.call('POST', `/v1/accounts/${other.id}/storage/folders`, { body: { parent_id: 'root', name: 'theirs' } })).json.id;
  });
  afterAll(async () => s?.stop());

  const expectError = (r: { status: number; json: any }, status: number, code: string) => {
    expect(r.status, JSON.stringify(r.json)).toBe(status);
    expect(r.json.error_code).toBe(code);
    expect(isErrorBody(r.json, status)).toBe(true);
  };

  it('malformed parent_id → 400 in move, copy, folder creation, upload and multipart; well-formed but unknown → 404', async () => {
    const file = `/v1/accounts/${acc.id}/storage/files/${fileId}`;
    for (const bad of ['abcdefghijk', `${folderId}!`, `${folderId}A`.slice(0, 39), 'a'.repeat(41)]) {
      expectError(await s.call('PATCH', file, { body: { parent_id: bad } }), 400, 'invalid_parameters');
      expectError(await s.call('POST', `${file}/copy`, { body: { parent_id: bad } }), 400, 'invalid_parameters');
      expectError(await s.call('POST', `/v1/accounts/${acc.id}/storage/folders`, { body: { parent_id: bad, name: 'x' } }), 400, 'invalid_parameters');
      expectError(await s.call('POST', `/v1/accounts/${acc.id}/storage/files`, { headers: { 'x-service-metadata': JSON.stringify({ parent_id: bad, name: 'x.txt' }) }, raw: 'x' }), 400, 'invalid_parameters');
      expectError(await s.call('POST', `/v1/accounts/${acc.id}/storage/multipart`, { body: { parent_id: bad, name: 'big.bin', size: 6 * 1024 * 1024 } }), 400, 'invalid_parameters');
    }
    // An id of another account's folder is well-formed but names nothing here.
    expectError(await s.call('PATCH', file, { body: { parent_id: foreignFolder } }), 404, 'not_found');
    expectError(await s.call('POST', `${file}/copy`, { body: { parent_id: foreignFolder } }), 404, 'not_found');
    // The real one works.
    expect((await s.call('POST', `${file}/copy`, { body: { parent_id: folderId } })).status).toBe(201);
  });

  it('spec 1, Rename / move: `user` without `parent_id` is refused', async () => {
    const file = `/v1/accounts/${acc.id}/storage/files/${fileId}`;
    expectError(await s.call('PATCH', file, { body: { user: 'someone', name: 'b.txt' } }), 400, 'invalid_parameters');
    expectError(await s.call('PATCH', file, { body: { parent_id: folderId, user: 42 } }), 400, 'invalid_parameters');
    expect((await s.call('GET', file)).json.name).toBe('a.txt'); // nothing changed
  });
});
