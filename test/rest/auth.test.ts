/**
 * spec 1, Authentication: API keys, bearer tokens (several comma-separated, `me`), deprecated
 * account keys, the X-Kloudless- header aliases, retrieve_tokens behind its setting, and the
 * Host guard against DNS rebinding.
 */
import { request as httpRequest } from 'node:http';
import { runInNewContext } from 'node:vm';
import type { FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restServices } from '../../src-main/rest';
import { authenticate } from '../../src-main/rest/auth';
import type { RestDeps } from '../../src-main/rest/http';
import { importMemory, isErrorBody, startRest, type RestServer } from './harness';

describe('REST auth (spec 1, Authentication)', () => {
  let s: RestServer;
  let a: { id: number; token: string };
  let b: { id: number; token: string };
  beforeAll(async () => {
    s = await startRest();
    a = await importMemory(s, 'auth-a');
    b = await importMemory(s, 'auth-b');
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('spec 1 Authentication: no Authorization header → 401 unauthorized', async () => {
    const r = await s.call('GET', '/v2/accounts', { auth: null });
    expect(r.status).toBe(401);
    expect(r.json.error_code).toBe('unauthorized');
    expect(r.headers['content-type']).toBe('application/json');
    expect(isErrorBody(r.json, 401)).toBe(true);
  });

  it('spec 1 Authentication: unknown key or scheme → 401 invalid_token; scheme is case-insensitive', async () => {
    expect((await s.call('GET', '/v1/accounts', { auth: 'APIKey nope-nope-nope-nope' })).json.error_code).toBe('invalid_token');
    expect((await s.call('GET', '/v1/accounts', { auth: `Basic ${s.apiKey}` })).status).toBe(401);
    expect((await s.call('GET', '/v1/accounts', { auth: `apikey ${s.apiKey}` })).status).toBe(200);
    expect((await s.call('GET', '/v1/accounts', { auth: `APIKEY   ${s.apiKey}` })).status).toBe(200);
  });

  // The header is read before any credential: a long one must cost no more than its length (a
  // pattern that backtracked took quadratic time and held the server). Run under a watchdog that
  // stops it after 2 s, where the answer takes a millisecond.
  it('spec 1 Authentication: a long Authorization header of spaces is refused at once, not after backtracking', () => {
    const header = `X a${' '.repeat(100_000)}b`;
    const call = () => authenticate({ headers: { authorization: header } } as FastifyRequest, {} as RestDeps, 'v1');
    let thrown: unknown;
    try {
      runInNewContext('call()', { call }, { timeout: 2000 });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: 'invalid_token', message: 'Unknown authorization scheme "X"; use APIKey or Bearer.' });
    const long = `${'Y'.repeat(5000)} secret`;
    expect(() => authenticate({ headers: { authorization: long } } as FastifyRequest, {} as RestDeps, 'v1')).toThrow(`Unknown authorization scheme "${'Y'.repeat(40)}"`);
  });

  it('spec 1 Authentication: a revoked API key → 401; ensure() revives it', async () => {
    const keys = restServices(s.app).apiKeys;
    const { apiKey, key } = keys.create('revoke me');
    expect((await s.call('GET', '/v0/accounts', { auth: `APIKey ${key}` })).status).toBe(200);
    keys.revoke(apiKey.id);
    const r = await s.call('GET', '/v0/accounts', { auth: `APIKey ${key}` });
    expect(r.status).toBe(401);
    expect(r.json.error_code).toBe('invalid_token');
    expect(keys.list().find((k) => k.id === apiKey.id)?.active).toBe(false);
    keys.ensure(key);
    expect((await s.call('GET', '/v0/accounts', { auth: `APIKey ${key}` })).status).toBe(200);
  });

  it('spec 1 Authentication: an account connected in the app (not by import) gets a bearer token at once', async () => {
    const acc = await s.app.accounts.connect({ service: 'memory', options: { store: 'connected-in-app' } });
    const count = s.app.db.prepare("SELECT count(*) AS n FROM account_tokens WHERE account_id = ? AND kind = 'bearer'").get(acc.id) as { n: number };
    expect(count.n).toBe(1);
    const token = restServices(s.app).apiKeys.bearerToken(acc.id);
    expect((await s.call('GET', '/v2/accounts/me', { auth: `Bearer ${token}` })).json.id).toBe(acc.id);
  });

  it('ApiKeysService.ensure (serve --api-key): refuses malformed keys, is idempotent', () => {
    const keys = restServices(s.app).apiKeys;
    for (const bad of ['short', 'has space in the middle!!', 'comma,separated-keys-here', 'x'.repeat(513)]) {
      expect(() => keys.ensure(bad)).toThrow(/API key is 16 to 512/);
    }
    const first = keys.ensure('a-good-key-for-the-cli-0001');
    const again = keys.ensure('a-good-key-for-the-cli-0001');
    expect(again.id).toBe(first.id);
    expect(keys.list().filter((k) => k.id === first.id)).toHaveLength(1);
    expect(keys.verify('a-good-key-for-the-cli-0001')?.id).toBe(first.id);
  });

  it('spec 1 Authentication: a bearer token for account A cannot touch account B', async () => {
    const asA = { auth: `Bearer ${a.token}` };
    expect((await s.call('GET', `/v2/accounts/${a.id}`, asA)).status).toBe(200);
    for (const [method, path] of [
      ['GET', `/v2/accounts/${b.id}`],
      ['DELETE', `/v2/accounts/${b.id}`],
      ['GET', `/v2/accounts/${b.id}/storage/folders/root/contents`],
      ['GET', `/v1/accounts/${b.id}/storage/files/root`],
      ['GET', `/v0/accounts/${a.id},${b.id}/search?q=x`],
    ]) {
      const r = await s.call(method!, path!, asA);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.json.error_code).toBe('forbidden');
    }
    // Moving A's root content into B needs B too.
    const f = await s.call('POST', `/v2/accounts/${a.id}/storage/folders`, { ...asA, body: { parent_id: 'root', name: 'mine' } });
    const copy = await s.call('POST', `/v2/accounts/${a.id}/storage/folders/${f.json.id}/copy`, { ...asA, body: { parent_id: 'root', account: b.id } });
    expect(copy.status).toBe(403);
    // Listing accounts with a bearer token shows only its own.
    const list = await s.call('GET', '/v2/accounts', asA);
    expect(list.json.objects.map((o: { id: number }) => o.id)).toEqual([a.id]);
    // And it cannot import.
    expect((await s.call('POST', '/v2/accounts', { ...asA, body: { service: 'memory', account: 'x', token: 'x' } })).status).toBe(403);
  });

  it('spec 1 Authentication: comma-separated bearer tokens reach several accounts; `me` is the token account', async () => {
    const both = { auth: `Bearer ${a.token}, ${b.token}` };
    const r = await s.call('GET', `/v1/accounts/${a.id},${b.id}/storage/search?q=zzz`, both);
    expect(r.status).toBe(200);
    expect(r.json.errors).toEqual({});
    expect((await s.call('GET', '/v1/accounts/me/storage/recent', both)).status).toBe(200);
    expect((await s.call('GET', '/v1/accounts/me', { auth: `Bearer ${b.token}` })).json.id).toBe(b.id);
    expect((await s.call('GET', '/v1/accounts/me', both)).status).toBe(400);
    expect((await s.call('GET', '/v1/accounts/me')).status).toBe(400); // `me` needs a token
  });

  it('spec 1 Authentication: account keys are v0 only; token_from_key converts one', async () => {
    const key = (await s.call('POST', `/v0/accounts/${a.id}/keys`)).json.key as string;
    expect((await s.call('GET', `/v0/accounts/${a.id}/folders/root`, { auth: `AccountKey ${key}` })).status).toBe(200);
    expect((await s.call('GET', `/v0/accounts/${b.id}/folders/root`, { auth: `AccountKey ${key}` })).status).toBe(403);
    expect((await s.call('GET', `/v1/accounts/${a.id}/storage/folders/root`, { auth: `AccountKey ${key}` })).status).toBe(401);
    const t = await s.call('POST', `/v0/accounts/${a.id}/token_from_key`, { auth: `AccountKey ${key}` });
    expect(t.json).toMatchObject({ access_token: a.token, token_type: 'Bearer', account_id: a.id });
  });

  it('spec 1 Authentication: X-Kloudless-Metadata and X-Kloudless-As-User are aliases of X-Service-*', async () => {
    const r = await s.call('POST', `/v2/accounts/${a.id}/storage/files`, {
      raw: 'alias',
      headers: { 'X-Kloudless-Metadata': JSON.stringify({ parent_id: 'root', name: 'alias.txt' }), 'X-Kloudless-As-User': 'someone', 'content-type': 'image/png' },
    });
    expect(r.status).toBe(201);
    expect(r.json.name).toBe('alias.txt');
  });

  it('spec 1 Account: retrieve_tokens only when the setting allows it', async () => {
    expect((await s.call('GET', `/v0/accounts/${a.id}?retrieve_tokens=true`)).status).toBe(403);
    s.app.settings.set('rest.retrieveTokens', true);
    const r = await s.call('GET', `/v0/accounts/${a.id}?retrieve_tokens=true&retrieve_full=false`);
    s.app.settings.set('rest.retrieveTokens', false);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ token: '', token_secret: '', account_id: String(a.id) });
  });

  it('DNS-rebinding guard: Host evil.example is refused', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: s.port, path: '/v2/accounts', headers: { host: 'evil.example', authorization: `APIKey ${s.apiKey}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});
