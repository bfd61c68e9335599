// Spec 1, Account `active` and "States and transitions" (Account): an account whose credentials
// the server refuses, or that stays unreachable, is deactivated automatically with a reason;
// only reconnecting re-activates it, a PATCH of `active: true` alone does not.
// Against real Apache WebDAV whose password file is changed under it.
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HEALTH } from '../../src-main/services/accounts';
import { startApache, type ApacheServer } from '../servers/apache';
import { run } from '../servers/util';
import { startRest, type RestServer } from './harness';

const DAY = 24 * 3600_000;
let apache: ApacheServer;
let s: RestServer;
const clock = { now: Date.parse('2026-03-01T00:00:00.000Z') };

beforeAll(async () => {
  apache = await startApache();
  s = await startRest({ accountHealth: { ...DEFAULT_HEALTH, now: () => clock.now } });
});

afterAll(async () => {
  await s?.stop();
  await apache?.stop();
});

const webdavBody = (token: string) => ({ service: 'webdav', account: apache.user, token, protocol: 'http', host: apache.host, port: apache.port, path: '/' });
const list = (id: number) => s.call('GET', `/v1/accounts/${id}/storage/folders/root/contents`);
const setPassword = (password: string) => run('htpasswd', ['-b', join(dirname(apache.root), 'htpasswd'), apache.user, password]);

describe('spec 1, Account `active`: credentials the server refuses', () => {
  it('deactivate the account with a reason (v1 deactivation_code, v2 disable_reason); only new credentials that connect re-activate it', async () => {
    const created = await s.call('POST', '/v1/accounts', { body: webdavBody(apache.password) });
    expect(created.status).toBe(201);
    const id = created.json.id as number;
    expect((await list(id)).status).toBe(200);

    setPassword('changed-on-the-server');
    const refused = await list(id);
    expect(refused.json.error_code).toBe('upstream_auth_failed');
    await s.app.accounts.settled();

    const v1 = (await s.call('GET', `/v1/accounts/${id}`)).json;
    expect(v1).toMatchObject({ active: false, deactivation_code: 'credentials_refused' });
    expect((await s.call('GET', `/v2/accounts/${id}`)).json).toMatchObject({ enabled: false, disable_reason: 'credentials_refused' });
    expect((await s.call('GET', `/v0/accounts/${id}`)).json.active).toBe(false);
    expect((await s.call('GET', `/v1/accounts?active=false`)).json.objects.map((a: { id: number }) => a.id)).toContain(id);
    const blocked = await list(id);
    expect(blocked.status).toBe(403);
    expect(blocked.json.message).toMatch(/deactivated because the server refused its credentials .*Reconnect/);

    // "inactive → user reconnects → active" (spec 1): setting the flag is not reconnecting.
    const flag = await s.call('PATCH', `/v1/accounts/${id}`, { body: { active: true } });
    expect(flag.status).toBe(409);
    expect(flag.json.error_code).toBe('conflict');
    expect((await s.call('PATCH', `/v2/accounts/${id}`, { body: { enabled: true } })).status).toBe(409);
    expect((await s.call('GET', `/v1/accounts/${id}`)).json.active).toBe(false);

    // Credentials that still do not connect change nothing.
    expect((await s.call('PATCH', `/v1/accounts/${id}`, { body: { token: apache.password } })).status).toBeGreaterThanOrEqual(400);
    expect((await s.call('GET', `/v1/accounts/${id}`)).json.active).toBe(false);

    const reconnected = await s.call('PATCH', `/v1/accounts/${id}`, { body: { token: 'changed-on-the-server' } });
    expect(reconnected.status).toBe(200);
    expect(reconnected.json).toMatchObject({ active: true, deactivation_code: null });
    expect((await list(id)).status).toBe(200);
    setPassword(apache.password);
    await s.call('DELETE', `/v1/accounts/${id}`);
  });

  it('a refusal that a fresh connection does not repeat (one object, not the credentials) leaves the account active', async () => {
    const id = (await s.call('POST', '/v1/accounts', { body: webdavBody(apache.password) })).json.id as number;
    // The live connection's password is wrong, the stored one is right: as when a server
    // refuses one request for reasons of its own.
    setPassword('briefly-different');
    expect((await list(id)).json.error_code).toBe('upstream_auth_failed');
    setPassword(apache.password);
    await s.app.accounts.settled();
    expect((await s.call('GET', `/v1/accounts/${id}`)).json).toMatchObject({ active: true, deactivation_code: null });
    await s.call('DELETE', `/v1/accounts/${id}`);
  });
});

describe('spec 1, Account `active`: an account that stays unreachable (docs/ui.md, Accounts: a week, three attempts an hour apart)', () => {
  it('is deactivated after a week of failures in a row in three attempts; an answer in between starts the count again; Retry re-activates it', async () => {
    const id = (await s.call('POST', '/v1/accounts', { body: webdavBody(apache.password) })).json.id as number;
    expect((await list(id)).status).toBe(200);
    const start = clock.now;

    await apache.kill();
    expect((await list(id)).json.error_code).toBe('service_not_available');
    await apache.restart();
    expect((await list(id)).status).toBe(200); // reached: the failure before does not count

    await apache.kill();
    clock.now = start + DAY;
    expect((await list(id)).status).toBe(503);
    clock.now = start + 8 * DAY; // a week since the first failure in a row, but only the second attempt
    expect((await list(id)).status).toBe(503);
    clock.now += 60_000; // within the hour: the same attempt
    expect((await list(id)).status).toBe(503);
    const stillActive = (await s.call('GET', `/v1/accounts/${id}`)).json;
    expect(stillActive.active).toBe(true);
    expect(s.app.accounts.get(id).unreachableSince).toBe(new Date(start + DAY).toISOString());

    clock.now = start + 8 * DAY + 3600_000; // the third attempt, an hour later
    expect((await list(id)).status).toBe(503);
    expect((await s.call('GET', `/v1/accounts/${id}`)).json).toMatchObject({ active: false, deactivation_code: 'unreachable' });
    expect(s.app.accounts.get(id).disableMessage).toMatch(/not reachable/);
    expect((await list(id)).json.message).toMatch(/could not be reached since .*Reconnect/);

    await apache.restart();
    expect((await s.call('PATCH', `/v1/accounts/${id}`, { body: { active: true } })).status).toBe(409);
    // Retry (the UI's, and the RPC `accounts.reconnect` without options): the stored credentials connect again.
    const retried = await s.app.accounts.reconnect(id);
    expect(retried).toMatchObject({ active: true, disableReason: null, unreachableSince: null });
    expect((await list(id)).status).toBe(200);
    await s.call('DELETE', `/v1/accounts/${id}`);
  });

  it('deactivated by the user, the account comes back with `active: true` alone (no reconnect needed)', async () => {
    const id = (await s.call('POST', '/v1/accounts', { body: webdavBody(apache.password) })).json.id as number;
    expect((await s.call('PATCH', `/v1/accounts/${id}`, { body: { active: false } })).json).toMatchObject({ active: false, deactivation_code: 'deactivated_by_user' });
    expect((await s.call('PATCH', `/v1/accounts/${id}`, { body: { active: true } })).json).toMatchObject({ active: true, deactivation_code: null });
    await s.call('DELETE', `/v1/accounts/${id}`);
  });
});
