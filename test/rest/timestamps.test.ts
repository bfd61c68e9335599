/**
 * Times in requests (docs/rest.md, The three versions: times are ISO 8601 date-times or dates in
 * the years 0000–9999; anything else is 400 invalid_parameters naming the parameter): account
 * key `expiration` (spec 1, Account keys) and recent `after` (spec 1, Recent files). Activity
 * `from`/`until` are covered in activity.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestamp } from '../../src-main/rest/http';
import { importMemory, isErrorBody, startRest, type CallResult, type RestServer } from './harness';

let s: RestServer;
let account: number;

beforeAll(async () => {
  s = await startRest();
  account = (await importMemory(s, 'timestamps')).id;
});
afterAll(async () => {
  await s?.stop();
});

function expectBadParameter(res: CallResult, name: string): void {
  expect(res.status, res.text).toBe(400);
  expect(isErrorBody(res.json, 400), res.text).toBe(true);
  expect(res.json.error_code).toBe('invalid_parameters');
  expect(res.json.message).toContain(`\`${name}\``);
}

const NOT_TIMES = ['1', '2001', 'March 7', '+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00Z', '2024-02-30T00:00:00Z', '2023-02-29', '2024-01-01T24:00:00Z', '2024-01-01T00:00:00+25:00', 'Mon, 01 Jan 2024 00:00:00 GMT', '9999-12-31T23:59:59-01:00', '0000-01-01T00:00:00+01:00'];

describe('the ISO 8601 time parser of every REST time parameter (docs/rest.md, The three versions)', () => {
  it('reads date-times with Z or an offset, fractions, and dates; stores them as UTC with milliseconds', () => {
    expect(timestamp('2024-01-31T12:00:00Z', 't')).toBe('2024-01-31T12:00:00.000Z');
    expect(timestamp('2024-01-31T12:00:00.123456+01:00', 't')).toBe('2024-01-31T11:00:00.123Z');
    expect(timestamp('2024-01-31T12:00:00-0130', 't')).toBe('2024-01-31T13:30:00.000Z');
    expect(timestamp('2024-01-31T12:00Z', 't')).toBe('2024-01-31T12:00:00.000Z');
    expect(timestamp('2024-02-29', 't')).toBe('2024-02-29T00:00:00.000Z');
    expect(timestamp('0000-01-01T00:00:00Z', 't')).toBe('0000-01-01T00:00:00.000Z');
    expect(timestamp('9999-12-31T23:59:59.999Z', 't')).toBe('9999-12-31T23:59:59.999Z');
    expect(timestamp('2024-01-31T12:00:00', 't')).toBe(new Date(2024, 0, 31, 12).toISOString());
    expect(timestamp('', 't')).toBeUndefined();
  });

  it('refuses everything else with invalid_parameters naming the parameter', () => {
    for (const value of [...NOT_TIMES, 1_700_000_000_000, true]) {
      expect(() => timestamp(value, 'after'), String(value)).toThrow(expect.objectContaining({ code: 'invalid_parameters', message: expect.stringContaining('`after`') }));
    }
  });
});

describe('spec 1 Account keys: `expiration` (docs/rest.md, The three versions)', () => {
  it('a key that is accepted and authenticates is listed; an expanded year is 400', async () => {
    expectBadParameter(await s.call('POST', `/v0/accounts/${account}/keys`, { body: { expiration: '+275760-09-13T00:00:00.000Z' } }), 'expiration');
    for (const expiration of NOT_TIMES) {
      expectBadParameter(await s.call('POST', `/v0/accounts/${account}/keys`, { body: { expiration } }), 'expiration');
    }
    const late = await s.call('POST', `/v0/accounts/${account}/keys`, { body: { expiration: '9999-12-31T23:59:59Z' } });
    expect(late.status, late.text).toBe(201);
    expect(late.json.expiration).toBe('9999-12-31T23:59:59.000Z');
    const expired = await s.call('POST', `/v0/accounts/${account}/keys`, { body: { expiration: '2001-01-01T00:00:00Z' } });
    expect(expired.status, expired.text).toBe(201);
    expect((await s.call('GET', `/v0/accounts/${account}`, { auth: `AccountKey ${late.json.key}` })).status).toBe(200);
    expect((await s.call('GET', `/v0/accounts/${account}`, { auth: `AccountKey ${expired.json.key}` })).status).toBe(401);
    const listed = await s.call('GET', `/v0/accounts/${account}/keys`);
    expect(listed.status).toBe(200);
    expect(listed.json.objects.map((k: { id: number }) => k.id)).toEqual([late.json.id]);
    expect(listed.json.total).toBe(1);
  });
});

describe('spec 1 Account keys: an expired key behaves like a deleted key, and only an expired one', () => {
  it('listing, reading and authenticating agree on a stored expiration whatever its spelling', async () => {
    const keys = s.app.apiKeys;
    const other = (await importMemory(s, 'timestamps-stored')).id;
    // Spellings written before times were checked as they are now.
    const far = keys.createAccountKey(other, '+275760-09-13T00:00:00.000Z');
    const past = keys.createAccountKey(other, '2001-01-01T00:00:00.000Z');
    expect(keys.verifyAccountToken(far.key, 'account_key')).toBe(other);
    expect(keys.verifyAccountToken(past.key, 'account_key')).toBeUndefined();
    expect(keys.getAccountKey(other, far.id).id).toBe(far.id);
    expect(keys.listAccountKeys([other], { offset: 0, limit: 10 })).toMatchObject({ total: 1, keys: [{ id: far.id }] });
  });
});

describe('spec 1 Recent files: `after` (docs/rest.md, The three versions)', () => {
  it('a bare number, a month name or an impossible day is 400; ISO 8601 times are 200', async () => {
    for (const after of ['1', 'March 7', '2024-02-30T00:00:00Z', '+275760-09-13T00:00:00.000Z']) {
      expectBadParameter(await s.call('GET', `/v2/accounts/${account}/storage/recent?after=${encodeURIComponent(after)}`), 'after');
    }
    for (const after of ['2024-01-31', '2024-01-31T12:00:00Z', '2024-01-31T12:00:00.5+01:00']) {
      const r = await s.call('GET', `/v2/accounts/${account}/storage/recent?after=${encodeURIComponent(after)}`);
      expect(r.status, `${after}: ${r.text}`).toBe(200);
    }
  });
});
