/**
 * Property-based fuzzing of the REST API (spec 1, Errors and Limits): random
 * methods, paths built from real and junk segments, headers, query values and bodies. Whatever
 * arrives, the server answers (no hang), never with a server failure, and every error below
 * /v0, /v1, /v2 is the documented body with `Content-Type: application/json`.
 *
 * 501 not_implemented is the documented answer for features no backend has (legacy
 * permissions, upload URLs on non-object stores), not a failure, so it is the one 5xx allowed.
 */
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandPath } from '../../src-main/rest/http';
import { ROUTES } from '../../src-main/rest/routes';
import { importMemory, isErrorBody, startRest, type RestServer } from './harness';

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const TIME_LIMIT_MS = 90_000;
const REQUEST_TIMEOUT_MS = 15_000;

describe('REST fuzz (spec 1, Errors)', () => {
  let s: RestServer;
  let ids: string[] = [];
  let token = '';
  let account = 0;
  beforeAll(async () => {
    s = await startRest();
    const a = await importMemory(s, 'fuzz');
    account = a.id;
    token = a.token;
    const folder = await s.call('POST', `/v2/accounts/${account}/storage/folders`, { body: { parent_id: 'root', name: 'f' } });
    const file = await s.call('POST', `/v2/accounts/${account}/storage/files`, {
      raw: 'data',
      headers: { 'x-service-metadata': JSON.stringify({ parent_id: folder.json.id, name: 'a.txt' }) },
    });
    ids = [folder.json.id, file.json.id];
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('no 5xx, no hang, documented error bodies, for random requests', async () => {
    const printable = fc.string({ unit: fc.constantFrom(...'abcXYZ019-_.~%!$&\'()*+,;=:@ '.split('')), maxLength: 20 });
    const segment = fc.oneof(
      fc.constantFrom('accounts', 'storage', 'files', 'folders', 'links', 'keys', 'multipart', 'contents', 'copy', 'thumbnail', 'search', 'recent', 'convert_id'),
      fc.constantFrom('permissions', 'token_from_key', 'upload_url', 'complete', 'root', 'trash', 'me', '1', '2', '0', '-1', '99999999999999999999', '1,2', 'me,1', '..', '%2F', '%ZZ', ''),
      fc.constant(null).map(() => ids[0]!),
      fc.constant(null).map(() => ids[1]!),
      fc.constant('A'.repeat(9000)),
      printable.map((x) => encodeURIComponent(x)),
    );
    // Mostly real route shapes (params from the pools), so requests get past the router.
    const templates = ROUTES.flatMap((r) => r.versions.map((v) => ({ method: r.method as string, path: `/${v}${expandPath(r.path, v)}` })));
    const param = fc.oneof(
      fc.constantFrom('1', 'me', '2', '1,2', '0', 'root', 'trash', '999999', '-1', '%ZZ', ''),
      fc.constant(null).map(() => ids[0]!),
      fc.constant(null).map(() => ids[1]!),
      fc.constant('A'.repeat(8193)),
      printable.map((x) => encodeURIComponent(x)),
    );
    const routePath = fc
      .tuple(fc.constantFrom(...templates), fc.array(param, { minLength: 3, maxLength: 3 }), fc.boolean())
      .map(([t, values, slash]) => {
        let i = 0;
        return { method: t.method, path: t.path.replace(/:[a-z]+/g, () => values[i++ % values.length]!) + (slash ? '/' : '') };
      });
    const junkPath = fc
      .tuple(fc.constantFrom('/v0', '/v1', '/v2', '/v2/openapi.json', '/v3'), fc.array(segment, { maxLength: 7 }), fc.boolean())
      .map(([v, segs, slash]) => `${v}/${segs.join('/')}${slash ? '/' : ''}`.replace(/\/\/+/g, '/'));
    const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
    // A route's own method most of the time, any method otherwise.
    const target = fc.oneof(
      { arbitrary: routePath, weight: 3 },
      { arbitrary: fc.tuple(routePath, method).map(([r, m]) => ({ method: m, path: r.path })), weight: 1 },
      { arbitrary: fc.tuple(junkPath, method).map(([p, m]) => ({ method: m, path: p })), weight: 1 },
    );
    const queryValue = fc.oneof(fc.constantFrom('0', '1', '-1', 'True', 'false', 'yes', '1001', '1e3', '2020-01-01T00:00:00Z', 'not-a-date', '99999999999999999999', 'png', 'jpeg'), printable);
    const query = fc.dictionary(
      fc.constantFrom('page', 'page_size', 'q', 'size', 'image_format', 'overwrite', 'permanent', 'recursive', 'retrieve_full', 'retrieve_tokens', 'after', 'active', 'conflict_if_exists', 'retrieve_metadata', 'part_number', 'expires_in', 'password'),
      queryValue,
      { maxKeys: 4 },
    );
    const valid = fc.constantFrom<(() => string | null)[]>(() => `APIKey ${s.apiKey}`, () => `apikey ${s.apiKey}`, () => `Bearer ${token}`, () => `Bearer ${token},${token}`);
    const invalid = fc.constantFrom<(() => string | null)[]>(
      () => 'Bearer ,,,',
      () => 'APIKey wrong-key-wrong-key',
      () => 'AccountKey nope',
      () => 'Basic Zm9vOmJhcg==',
      () => '',
      () => null,
    );
    const auth = fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: invalid, weight: 1 });
    const jsonValue = fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom('root', 'True', '1'), fc.constant(null).map(() => ids[0]!));
    const body = fc.oneof(
      fc.constant(undefined),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc
        .dictionary(fc.constantFrom('parent_id', 'name', 'account', 'service', 'token', 'active', 'enabled', 'raw_id', 'type', 'file_id', 'direct', 'expiration', 'password', 'size', 'junk'), jsonValue, { maxKeys: 5 })
        .map((o) => Buffer.from(JSON.stringify(o))),
      fc.constantFrom('{', '[]', 'null', '"str"', '{"parent_id":{}}').map((t) => Buffer.from(t)),
    );
    const metadata = fc.oneof(
      fc.constant(undefined),
      fc.constantFrom('{', 'null', '{"parent_id":"root"}', '{"parent_id":"root","name":""}', '{"parent_id":"root","name":"../x"}', '{"parent_id":"trash","name":"x"}'),
      fc.string({ maxLength: 10 }).map((name) => JSON.stringify({ parent_id: 'root', name: name.replace(/[^\x20-\x7e]/g, '') || 'n' })),
    );
    const contentType = fc.constantFrom(undefined, 'application/json', 'application/octet-stream', 'text/plain', 'multipart/form-data; boundary=x', 'image/png', 'nonsense');

    let tried = 0;
    let frameworkErrors = 0;
    const statuses = new Map<number, number>();
    const property = fc.asyncProperty(
      fc.record({ target, query, auth, body, metadata, contentType, chunked: fc.boolean(), kloudless: fc.boolean() }),
      async (input) => {
        const r = { ...input, method: input.target.method, path: input.target.path };
        tried++;
        const headers: Record<string, string> = {};
        const a = r.auth();
        if (a !== null) headers.authorization = a;
        if (r.metadata !== undefined) headers[r.kloudless ? 'x-kloudless-metadata' : 'x-service-metadata'] = r.metadata;
        if (r.contentType) headers['content-type'] = r.contentType;
        const qs = new URLSearchParams(r.query).toString();
        const url = `${s.url}${r.path}${qs ? `?${qs}` : ''}`;
        const hasBody = r.body !== undefined && r.method !== 'GET' && r.method !== 'HEAD';
        const payload = hasBody ? (r.chunked ? Readable.from([r.body!]) : r.body) : undefined;
        const res = await request(url, {
          method: r.method as 'GET',
          headers,
          body: payload,
          headersTimeout: REQUEST_TIMEOUT_MS,
          bodyTimeout: REQUEST_TIMEOUT_MS,
        });
        const text = await res.body.text();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const where = `${r.method} ${r.path.slice(0, 200)}?${qs.slice(0, 200)} → ${res.statusCode} ${text.slice(0, 300)}`;
        expect(res.statusCode >= 500 && res.statusCode !== 501, where).toBe(false);
        // Every error, wherever it is answered (before routing too: a request head over 16 KB,
        // a malformed %-escape), has the documented body and exactly application/json.
        if (res.statusCode === 431) frameworkErrors++;
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          expect(res.headers['content-type'], where).toBe('application/json');
          expect(isErrorBody(JSON.parse(text), res.statusCode), where).toBe(true);
        }
        // A HEAD answer has no body (RFC 9110): its 501 is checked by the status alone.
        if (res.statusCode === 501 && r.method !== 'HEAD') expect(JSON.parse(text).error_code, where).toBe('not_implemented');
      },
    );
    await fc.assert(property, { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31), verbose: 0 });
    console.log(`REST fuzz: ${tried} requests tried (${frameworkErrors} with an oversized head); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}`);
    expect(tried).toBeGreaterThan(0);
  });
});
