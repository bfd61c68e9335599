/**
 * Ids and tokens name exactly one thing (spec 1, File `id`; Errors: a tampered id is 404
 * not_found): every single-character append, insertion, removal or substitution of a file id,
 * mail tracking token, link token, API key, bearer token or account key is rejected. base64url
 * decoding ignores trailing characters, so these compare canonical forms, not decoded bytes.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdCodec } from '../../src-main/ids';
import { Tracker } from '../../src-main/mail/tracking';
import { restServices } from '../../src-main/rest';
import { importMemory, startRest, type RestServer } from './harness';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~';
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

type Edit = { kind: 'append' | 'insert' | 'remove' | 'substitute'; at: number; char: string };
const edit = fc.record({
  kind: fc.constantFrom<Edit['kind']>('append', 'insert', 'remove', 'substitute'),
  at: fc.nat(),
  char: fc.constantFrom(...ALPHABET.split('')),
});

/** One single-character change of `s` (never `s` itself). */
function applyEdit(s: string, e: Edit): string {
  const i = e.at % s.length;
  switch (e.kind) {
    case 'append':
      return s + e.char;
    case 'insert':
      return s.slice(0, i) + e.char + s.slice(i);
    case 'remove':
      return s.slice(0, i) + s.slice(i + 1);
    case 'substitute': {
      const c = s[i] === e.char ? (e.char === 'A' ? 'B' : 'A') : e.char;
      return s.slice(0, i) + c + s.slice(i + 1);
    }
  }
}

describe('single-character changes are rejected (spec 1, File id; Errors)', () => {
  it('file ids: IdCodec.decode refuses every edited id', () => {
    const codec = new IdCodec(randomBytes(32));
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 1000 }), edit, (upstream, account, e) => {
        const id = codec.encode(account, upstream);
        expect(codec.decode(account, id)).toBe(upstream);
        const changed = applyEdit(id, e);
        expect(() => codec.decode(account, changed)).toThrow(expect.objectContaining({ code: 'not_found' }));
      }),
      { numRuns: RUNS },
    );
  });

  it('file ids: one appended character used to decode to the same file', () => {
    const codec = new IdCodec(randomBytes(32));
    const id = codec.encode(1, '/a.txt');
    // Every id whose length is 2 or 3 mod 4 has unused trailing bits; a 4n+1 length is padded away.
    for (const c of ['A', 'B', 'Q', '_']) expect(() => codec.decode(1, id + c)).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('mail tracking tokens: Tracker.verify refuses every edited click and open token', () => {
    const tracker = new Tracker(undefined as never, randomBytes(32));
    fc.assert(
      fc.property(fc.constantFrom<'open' | 'click'>('open', 'click'), fc.string({ maxLength: 30 }), edit, (kind, m, e) => {
        const t = tracker.token({ account: 1, messageId: `<${m}@x>`, kind, url: kind === 'click' ? 'https://example.org/' : undefined });
        expect(tracker.verify(t)).not.toBeNull();
        expect(tracker.verify(applyEdit(t, e))).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });
});

describe('over HTTP: edited ids and tokens are 404 / 401, and a click counts once (spec 1, Errors; spec 2, Send tracking)', () => {
  let s: RestServer;
  let account = 0;
  let token = '';
  let fileId = '';
  beforeAll(async () => {
    s = await startRest();
    ({ id: account, token } = await importMemory(s, `exact-${Date.now()}`));
    const file = await s.call('POST', `/v2/accounts/${account}/storage/files`, {
      raw: 'hello',
      headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'a.txt' }) },
    });
    expect(file.status).toBe(201);
    fileId = file.json.id;
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a file id with one character appended is not_found, as is any other single edit', async () => {
    expect((await s.call('GET', `/v2/accounts/${account}/storage/files/${fileId}`)).status).toBe(200);
    for (const c of ['A', 'Q', 'g', 'w']) {
      const r = await s.call('GET', `/v2/accounts/${account}/storage/files/${fileId}${c}`);
      expect(r.status).toBe(404);
      expect(r.json.error_code).toBe('not_found');
    }
    await fc.assert(
      fc.asyncProperty(edit, async (e) => {
        const r = await s.call('GET', `/v2/accounts/${account}/storage/files/${encodeURIComponent(applyEdit(fileId, e))}`);
        expect(r.status).toBe(404);
      }),
      { numRuns: 40 },
    );
  });

  it('a click token with one character appended does not redirect and is not counted', async () => {
    const tracker = s.app.mail.tracker;
    const t = tracker.token({ account, messageId: '<click@x>', kind: 'click', url: 'https://example.org/p' });
    const before = tracker.events().filter((e) => e.messageId === '<click@x>').length;
    const good = await s.call('GET', `/t/c/${t}`, { auth: null });
    expect(good.status).toBe(302);
    for (const c of ['A', 'B', 'Q', 'w']) {
      const r = await s.call('GET', `/t/c/${t}${c}`, { auth: null });
      expect(r.status).toBe(404);
    }
    expect(tracker.events().filter((e) => e.messageId === '<click@x>').length).toBe(before + 1);
  });

  it('link tokens, API keys, bearer tokens and account keys: every edit is refused', async () => {
    const link = await s.call('POST', `/v1/accounts/${account}/storage/links`, { body: { file_id: fileId, direct: true } });
    expect(link.status).toBe(201);
    const linkToken = new URL(link.json.url).pathname.split('/').pop()!;
    expect((await s.call('GET', `/l/${linkToken}`, { auth: null })).status).toBe(200);
    const keys = restServices(s.app).apiKeys;
    const accountKey = keys.createAccountKey(account).key;
    await fc.assert(
      fc.asyncProperty(edit, async (e) => {
        expect((await s.call('GET', `/l/${encodeURIComponent(applyEdit(linkToken, e))}`, { auth: null })).status).toBe(404);
        expect(keys.verify(applyEdit(s.apiKey, e))).toBeUndefined();
        expect(keys.verifyAccountToken(applyEdit(token, e), 'bearer')).toBeUndefined();
        expect(keys.verifyAccountToken(applyEdit(accountKey, e), 'account_key')).toBeUndefined();
      }),
      { numRuns: 60 },
    );
    // Over HTTP too, including a trailing comma that used to shorten the token list.
    for (const auth of [`Bearer ${token},`, `Bearer ,${token}`, `Bearer ${token},,${token}`, `Bearer ${token}x`, `APIKey ${s.apiKey}x`]) {
      const r = await s.call('GET', `/v1/accounts/${account}/storage/folders/root/contents`, { auth });
      expect(r.status, auth).toBe(401);
    }
    expect((await s.call('GET', `/v1/accounts/${account}/storage/folders/root/contents`, { auth: `Bearer ${token}` })).status).toBe(200);
  });

  it('numeric ids (accounts, account keys): only the canonical decimal names one', async () => {
    const key = await s.call('POST', `/v0/accounts/${account}/keys`, { body: {} });
    expect(key.status).toBe(201);
    expect((await s.call('GET', `/v0/accounts/${account}/keys/${key.json.id}`)).status).toBe(200);
    expect((await s.call('GET', `/v0/accounts/${account}/keys/0${key.json.id}`)).status).toBe(404);
    expect((await s.call('GET', `/v1/accounts/${account}`)).status).toBe(200);
    expect((await s.call('GET', `/v1/accounts/0${account}`)).status).toBe(400);
  });

  it('multipart session ids: only the canonical decimal names a session', async () => {
    const m = await s.call('POST', `/v1/accounts/${account}/storage/multipart`, { body: { parent_id: 'root', name: 'big.bin', size: 6 * 1024 * 1024 } });
    expect(m.status).toBe(201);
    const id = String(m.json.id);
    expect((await s.call('GET', `/v1/accounts/${account}/storage/multipart/${id}`)).status).toBe(200);
    for (const changed of [`0${id}`, `${id}0`, `${id}x`, `+${id}`]) {
      expect((await s.call('GET', `/v1/accounts/${account}/storage/multipart/${changed}`)).status, changed).toBe(404);
    }
  });
});
