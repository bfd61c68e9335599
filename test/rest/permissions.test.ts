/**
 * spec 1, Legacy permission endpoints (PUT replaces, PATCH changes the listed users, both answer
 * `{permissions: [{id, email, name, role}]}`) and spec 3, Versioning (v0 → v1: "Permission
 * updates take a list of permission objects instead of a mapping of e-mail to role"), mapped onto
 * POSIX modes on a local account and on SFTP (OpenSSH), and onto object ACLs on S3 (moto); a
 * backend without permissions answers 501 not_implemented, also for a JSON list body.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetObjectAclCommand, S3Client } from '@aws-sdk/client-s3';
import { startMoto } from '../servers/s3';
import { startSshd, type Sshd } from '../servers/sshd';
import { importLocal, importMemory, isErrorBody, startRest, type RestServer } from './harness';

let s: RestServer;
let sshd: Sshd;

beforeAll(async () => {
  s = await startRest();
  sshd = await startSshd();
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await sshd?.stop();
});

const mode = (path: string) => statSync(path).mode & 0o777;
const roles = (json: any) => Object.fromEntries((json.permissions as { id: string; role: string }[]).map((p) => [p.id, p.role]));

async function idOf(account: number, name: string): Promise<string> {
  const r = await s.call('GET', `/v1/accounts/${account}/storage/folders/root/contents`);
  return (r.json.objects as { id: string; name: string }[]).find((o) => o.name === name)!.id;
}

describe('spec 1 legacy permissions and spec 3 list-based updates over POSIX modes', () => {
  it('local: GET shows owner/group/others; v0 PUT {others: reader} replaces; v1 PATCH [{id, role}] changes only the listed', async () => {
    const acc = await importLocal(s, 'perm-local');
    const file = join(acc.folder, 'p.txt');
    writeFileSync(file, 'x');
    chmodSync(file, 0o640);
    const id = await idOf(acc.id, 'p.txt');

    const got = await s.call('GET', `/v1/accounts/${acc.id}/storage/files/${id}/permissions`);
    expect(got.status, got.text).toBe(200);
    expect(roles(got.json)).toEqual({ owner: 'owner', group: 'reader' });
    expect(got.json.permissions[0]).toMatchObject({ id: 'owner', email: null, role: 'owner', type: 'permission', api: 'storage' });

    const put = await s.call('PUT', `/v0/accounts/${acc.id}/files/${id}/permissions`, { body: { others: 'reader' } });
    expect(put.status, put.text).toBe(200);
    expect(roles(put.json)).toEqual({ owner: 'owner', others: 'reader' });
    expect(put.json.permissions.every((p: object) => Object.keys(p).sort().join() === 'email,id,name,role')).toBe(true);
    expect(mode(file)).toBe(0o604);

    const patch = await s.call('PATCH', `/v1/accounts/${acc.id}/storage/files/${id}/permissions`, { body: [{ id: 'group', role: 'writer' }] });
    expect(patch.status, patch.text).toBe(200);
    expect(roles(patch.json)).toEqual({ owner: 'owner', group: 'writer', others: 'reader' });
    expect(mode(file)).toBe(0o664);

    // "" removes; an empty PUT removes everyone but the owner.
    await s.call('PATCH', `/v2/accounts/${acc.id}/storage/files/${id}/permissions`, { body: { permissions: [{ id: 'others', role: '' }] } });
    expect(mode(file)).toBe(0o660);
    await s.call('PUT', `/v0/accounts/${acc.id}/files/${id}/permissions`, { body: {} });
    expect(mode(file)).toBe(0o600);
  });

  it('local folders get the search bit with read; unknown principals, roles and the owner are 400', async () => {
    const acc = await importLocal(s, 'perm-folder');
    const dir = join(acc.folder, 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o700);
    const id = await idOf(acc.id, 'shared');
    const r = await s.call('PATCH', `/v1/accounts/${acc.id}/storage/folders/${id}/permissions`, { body: [{ id: 'others', role: 'reader' }] });
    expect(r.status, r.text).toBe(200);
    expect(mode(dir)).toBe(0o705);
    // Names of an object's own machinery are principals like any other: unknown, so 400.
    const builtIn = [[{ id: 'constructor', role: 'reader' }], [{ id: '__proto__', role: 'reader' }], [{ id: 'toString', role: '' }], { hasOwnProperty: 'reader' }];
    for (const body of [{ 'bob@example.com': 'reader' }, { group: 'previewer' }, { owner: 'reader' }, [{ role: 'reader' }], [1], ...builtIn]) {
      const bad = await s.call('PATCH', `/v1/accounts/${acc.id}/storage/folders/${id}/permissions`, { body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(isErrorBody(bad.json, 400)).toBe(true);
    }
    expect(mode(dir)).toBe(0o705);
    // PUT replaces: a refused body must not leave group and others cleared.
    const put = await s.call('PUT', `/v1/accounts/${acc.id}/storage/folders/${id}/permissions`, { body: [{ id: 'constructor', role: 'reader' }] });
    expect(put.status, put.text).toBe(400);
    expect(mode(dir)).toBe(0o705);
  });

  it('SFTP (OpenSSH): the same mapping over SFTP stat/chmod', async () => {
    const account = (await s.app.accounts.connect({ service: 'sftp', options: { host: sshd.host, port: sshd.port, username: sshd.username, password: sshd.password, root: sshd.dataDir } })).id;
    // Uploaded over SFTP, so the server's user owns it (only the owner may chmod).
    const up = await s.call('POST', `/v1/accounts/${account}/storage/files`, { raw: 'x', headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'remote.txt' }) } });
    expect(up.status, up.text).toBe(201);
    const file = join(sshd.dataDir, 'remote.txt');
    const id = up.json.id as string;
    const put = await s.call('PUT', `/v1/accounts/${account}/storage/files/${id}/permissions`, { body: [] });
    expect(put.status, put.text).toBe(200);
    expect(mode(file)).toBe(0o600);
    const got = await s.call('GET', `/v1/accounts/${account}/storage/files/${id}/permissions`);
    expect(got.status, got.text).toBe(200);
    expect(roles(got.json)).toEqual({ owner: 'owner' });
    expect(got.json.permissions[0].name).toBe(`uid ${statSync(file).uid}`);
    const patch = await s.call('PATCH', `/v1/accounts/${account}/storage/files/${id}/permissions`, { body: [{ id: 'group', role: 'reader' }, { id: 'others', role: 'reader' }] });
    expect(patch.status, patch.text).toBe(200);
    expect(roles(patch.json)).toEqual({ owner: 'owner', group: 'reader', others: 'reader' });
    expect(mode(file)).toBe(0o644);
  });

  it('S3 (moto): object ACL grants as permissions; v1 PATCH adds a group grant, PUT {} leaves the owner; folders 501', async () => {
    const moto = await startMoto('perm-bucket');
    try {
      const account = (await s.app.accounts.connect({ service: 's3', options: moto.options })).id;
      const up = await s.call('POST', `/v1/accounts/${account}/storage/files`, { raw: 'x', headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'o.txt' }) } });
      expect(up.status, up.text).toBe(201);
      const base = `/v1/accounts/${account}/storage/files/${up.json.id}/permissions`;
      const got = await s.call('GET', base);
      expect(got.status, got.text).toBe(200);
      expect(got.json.permissions).toHaveLength(1);
      const owner = got.json.permissions[0];
      expect(owner.role).toBe('owner');

      // moto keeps one grantee per permission, so one new grant here (S3 itself takes several).
      const patch = await s.call('PATCH', base, { body: [{ id: 'AllUsers', role: 'reader' }] });
      expect(patch.status, patch.text).toBe(200);
      expect(roles(patch.json)).toEqual({ [owner.id]: 'owner', AllUsers: 'reader' });
      // The grants are really on the object, as S3 reports them to any client.
      const client = new S3Client({ endpoint: moto.endpoint, region: moto.region, forcePathStyle: true, credentials: { accessKeyId: moto.accessKeyId, secretAccessKey: moto.secretAccessKey } });
      const acl = await client.send(new GetObjectAclCommand({ Bucket: moto.bucket, Key: 'o.txt' }));
      client.destroy();
      expect(acl.Grants!.map((g) => [g.Grantee!.URI ?? g.Grantee!.ID, g.Permission]).sort()).toEqual(
        [[owner.id, 'FULL_CONTROL'], ['http://acs.amazonaws.com/groups/global/AllUsers', 'READ']].sort(),
      );
      expect((await s.call('PATCH', base, { body: [{ id: 'not-a-user', role: 'reader' }] })).status).toBe(400);

      const put = await s.call('PUT', `/v0/accounts/${account}/files/${up.json.id}/permissions`, { body: {} });
      expect(put.status, put.text).toBe(200);
      expect(roles(put.json)).toEqual({ [owner.id]: 'owner' });
      expect((await s.call('PATCH', base, { body: [{ id: owner.id, role: 'reader' }] })).status).toBe(400);

      const folder = await s.call('POST', `/v1/accounts/${account}/storage/folders`, { body: { parent_id: 'root', name: 'dir' } });
      const f = await s.call('GET', `/v1/accounts/${account}/storage/folders/${folder.json.id}/permissions`);
      expect(f.status, f.text).toBe(501);
    } finally {
      await moto.stop();
    }
  }, 60_000);

  it('a backend without permissions answers 501, for a JSON list body too', async () => {
    const acc = await importMemory(s, 'perm-none');
    const up = await s.call('POST', `/v1/accounts/${acc.id}/storage/files`, { raw: 'x', headers: { 'x-service-metadata': JSON.stringify({ parent_id: 'root', name: 'm.txt' }) } });
    expect(up.status, up.text).toBe(201);
    const base = `/v1/accounts/${acc.id}/storage/files/${up.json.id}/permissions`;
    for (const [method, body] of [['PUT', [{ email: 'bob@example.com', role: 'reader' }]], ['PATCH', { 'bob@example.com': 'writer' }], ['GET', undefined]] as const) {
      const r = await s.call(method, base, body === undefined ? {} : { body });
      expect(r.status, `${method} ${r.text}`).toBe(501);
      expect(r.json.error_code).toBe('not_implemented');
    }
    const v0 = await s.call('PUT', `/v0/accounts/${acc.id}/files/${up.json.id}/permissions`, { body: [] });
    expect(v0.status).toBe(501);
  });
});
