// Same-name writes never overwrite each other (spec 1, "Upload a file": on a name conflict the
// file is renamed unless `overwrite`; "Multipart upload": overwrite=false picks another name).
// Many writers of one name into one folder at once — REST uploads, web uploads with
// conflict=fail, multipart sessions — on `local` and on real Apache WebDAV, OpenSSH SFTP and
// S3 (moto), Azure Blob (Azurite) and Samba SMB: every 201 is a distinct file holding exactly that request's bytes.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NAME_BYTES } from '../../src-main/connectors/shared/paths';
import type { StorageConnector } from '../../src-main/connectors/types';
import { ChangedMeanwhile } from '../../src-main/connectors/shared/if-match';
import { ServiceError } from '../../src-main/errors';
import { startRest, type RestServer } from '../rest/harness';
import { startApache, type ApacheServer } from '../servers/apache';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { startMoto, type S3Server } from '../servers/s3';
import { startSamba, type Samba } from '../servers/samba';
import { startSshd, type Sshd } from '../servers/sshd';

const UI_TOKEN = 'ui-token-for-tests-0123456789';
const MiB = 1024 * 1024;

let rest: RestServer;
let apache: ApacheServer;
let sshd: Sshd;
let moto: S3Server;
let azurite: AzuriteServer;
let samba: Samba;
const accounts: Record<string, number> = {};

beforeAll(async () => {
  [rest, apache, sshd, moto, azurite, samba] = await Promise.all([startRest(), startApache(), startSshd(), startMoto(), startAzurite(), startSamba()]);
  const localRoot = join(rest.dir, 'local-root');
  mkdirSync(localRoot);
  const connect = async (service: string, options: Record<string, unknown>) => (await rest.app.accounts.connect({ service, options })).id;
  accounts.local = await connect('local', { path: localRoot, trashDir: join(rest.dir, 'trash') });
  accounts.webdav = await connect('webdav', { protocol: 'http', host: apache.host, port: apache.port, path: '/', username: apache.user, password: apache.password });
  accounts.sftp = await connect('sftp', { host: sshd.host, port: sshd.port, username: sshd.username, password: sshd.password, root: sshd.dataDir });
  accounts.s3 = await connect('s3', moto.options);
  accounts.azure = await connect('azure', azurite.options);
  accounts.smb = await connect('smb', { host: samba.host, port: samba.port, share: samba.share, workgroup: samba.workgroup, username: samba.username, password: samba.password });
}, 120_000);

afterAll(async () => {
  await rest?.stop();
  await Promise.all([apache?.stop(), sshd?.stop(), moto?.stop(), azurite?.stop(), samba?.stop()]);
});

/** A fresh folder per test, so every test starts from an empty folder. */
async function freshFolder(account: number): Promise<string> {
  return (await rest.app.storage.mkdir(account, 'root', `t-${randomBytes(4).toString('hex')}`)).id;
}

async function contentOf(account: number, id: string): Promise<Buffer> {
  const { stream } = await rest.app.storage.download(account, id);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** The folder's files (ours only: hidden temporary names must not show). */
async function filesIn(account: number, folder: string) {
  return (await rest.app.storage.list(account, folder, 1, 1000)).items.filter((r) => r.kind === 'file');
}

const bodies = (n: number, size = 2048) => Array.from({ length: n }, (_, i) => Buffer.concat([Buffer.from(`writer ${i}\n`), randomBytes(size)]));

describe.each(['local', 'webdav', 'sftp', 's3', 'azure', 'smb'])('same-name writes on %s', (backend) => {
  const acc = () => accounts[backend];

  // spec 1, "Upload a file": a conflict renames; 20 writers of one name, all at once.
  it('20 parallel REST uploads of one name give 20 distinct files, each with its request\'s bytes', async () => {
    const folder = await freshFolder(acc());
    const sent = bodies(20);
    const answers = await Promise.all(
      sent.map((body) =>
        rest.call('POST', `/v0/accounts/${acc()}/files`, {
          raw: body,
          headers: { 'x-service-metadata': JSON.stringify({ parent_id: folder, name: 'report.txt' }), 'content-type': 'application/octet-stream' },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(sent.map(() => 201));
    const names = answers.map((a) => a.json.name as string);
    expect(new Set(names).size).toBe(20);
    expect(names).toContain('report.txt');
    for (const [i, a] of answers.entries()) expect((await contentOf(acc(), a.json.id)).equals(sent[i])).toBe(true);
    const listed = await filesIn(acc(), folder);
    expect(listed.map((f) => f.name).sort()).toEqual([...names].sort());
  }, 120_000);

  // The web UI's upload route with conflict=fail: one writer wins, the others get naming_conflict.
  it('conflict=fail via /app/upload: exactly one 201, 409 for the rest, the file holds the winner\'s bytes', async () => {
    const folder = await freshFolder(acc());
    const sent = bodies(12);
    const answers = await Promise.all(
      sent.map(async (body) => {
        const res = await request(`${rest.url}/app/upload?account=${acc()}&parent=${encodeURIComponent(folder)}&name=notes.md&conflict=fail`, {
          method: 'POST',
          body,
          headers: { 'x-tributary-token': UI_TOKEN, 'content-type': 'application/octet-stream' },
        });
        return { status: res.statusCode, json: (await res.body.json()) as any };
      }),
    );
    const won = answers.flatMap((a, i) => (a.status === 201 ? [i] : []));
    expect(won).toHaveLength(1);
    for (const a of answers) if (a.status !== 201) expect(a).toMatchObject({ status: 409, json: { status_code: 409, error_code: 'naming_conflict' } });
    const listed = await filesIn(acc(), folder);
    expect(listed.map((f) => f.name)).toEqual(['notes.md']);
    expect((await contentOf(acc(), listed[0].id)).equals(sent[won[0]])).toBe(true);
  }, 120_000);

  // spec 1, "Multipart upload" (overwrite=false): ten sessions of one name at once.
  it('10 parallel multipart sessions of one name give 10 distinct files', async () => {
    const folder = await freshFolder(acc());
    const size = 5 * MiB + 1;
    const sent = Array.from({ length: 10 }, (_, i) => Buffer.concat([Buffer.from(`session ${i}\n`), randomBytes(size)]).subarray(0, size));
    const results = await Promise.all(
      sent.map(async (data) => {
        const init = await rest.call('POST', `/v0/accounts/${acc()}/multipart`, { body: { name: 'video.bin', parent_id: folder, size } });
        expect(init.status).toBe(201);
        const partSize = init.json.part_size as number;
        for (let n = 1, off = 0; off < size; n++, off += partSize) {
          const put = await rest.call('PUT', `/v0/accounts/${acc()}/multipart/${init.json.id}?part_number=${n}`, {
            raw: data.subarray(off, off + partSize),
            headers: { 'content-type': 'application/octet-stream' },
          });
          expect(put.status).toBe(200);
        }
        return rest.call('POST', `/v0/accounts/${acc()}/multipart/${init.json.id}/complete`);
      }),
    );
    expect(results.map((r) => r.status)).toEqual(sent.map(() => 201));
    const names = results.map((r) => r.json.name as string);
    expect(new Set(names).size).toBe(10);
    for (const [i, r] of results.entries()) expect((await contentOf(acc(), r.json.id)).equals(sent[i])).toBe(true);
    expect((await filesIn(acc(), folder)).length).toBe(10);
  }, 240_000);

  // The connector contract (WriteOptions.noReplace): a name taken by a writer outside
  // Tributary is never replaced; the write goes to the next name given, or fails cleanly.
  it('a no-replace publish never replaces a file that appeared meanwhile', async () => {
    const c: StorageConnector = await rest.app.accounts.storage(acc());
    const folder = `/nr-${randomBytes(4).toString('hex')}`;
    await c.mkdir(folder);
    await c.write(`${folder}/a.txt`, Readable.from([Buffer.from('outside writer')]));
    const err = await c.write(`${folder}/a.txt`, Readable.from([Buffer.from('ours')]), { noReplace: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('naming_conflict');
    const asked: string[] = [];
    const write = () =>
      c.write(`${folder}/a.txt`, Readable.from([Buffer.from('ours')]), { noReplace: { next: async (taken) => (asked.push(taken), `${folder}/a (1).txt`) } });
    const read = async (p: string) => Buffer.concat(await (await c.read(p)).toArray()).toString();
    const consumes = backend === 's3' || backend === 'azure';
    if (consumes) {
      // S3 and Azure send the bytes with the conditional request: it cannot try another name, so it refuses.
      await expect(write()).rejects.toMatchObject({ code: 'naming_conflict' });
      expect(asked).toEqual([]);
    } else {
      const entry = await write();
      expect(asked).toEqual([`${folder}/a.txt`]);
      expect(entry.path).toBe(`${folder}/a (1).txt`);
      expect(await read(entry.path)).toBe('ours');
    }
    expect(await read(`${folder}/a.txt`)).toBe('outside writer');
    const names = (await c.list(folder)).map((e) => e.name).sort();
    expect(names).toEqual(consumes ? ['a.txt'] : ['a (1).txt', 'a.txt']);
  }, 60_000);

  // The connector contract (WriteOptions.ifMatch), what two-way sync replaces a remote file with
  // (docs/sync.md, Safety): only the version looked at is replaced; a save by someone else since,
  // or a delete, is kept, and the write leaves nothing behind.
  it('a conditional replace replaces only the version it was given', async () => {
    const c: StorageConnector = await rest.app.accounts.storage(acc());
    const folder = `/if-${randomBytes(4).toString('hex')}`;
    await c.mkdir(folder);
    const put = (text: string, ifMatch?: string) => c.write(`${folder}/a.txt`, Readable.from([Buffer.from(text)]), { size: Buffer.byteLength(text), ifMatch });
    const read = async () => Buffer.concat(await (await c.read(`${folder}/a.txt`)).toArray()).toString();
    const looked = (await put('v1')).etag!;
    expect(looked).toBeTruthy();
    await put('v2, saved by someone else');
    const err = await put('ours', looked).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChangedMeanwhile);
    expect((err as ServiceError).code).toBe('conflict');
    expect(await read()).toBe('v2, saved by someone else');
    if (c.features.writeFile) {
      // The backend reading a file of this computer itself (local, WebDAV, SMB): the same condition,
      // also when the server refuses before it has read the body (8 MiB).
      const file = join(rest.dir, `if-${backend}.txt`);
      writeFileSync(file, Buffer.alloc(8 * MiB, 'o'));
      await expect(c.features.writeFile(`${folder}/a.txt`, file, { ifMatch: looked })).rejects.toBeInstanceOf(ChangedMeanwhile);
      expect(await read()).toBe('v2, saved by someone else');
    }

    const current = (await c.stat(`${folder}/a.txt`)).etag!;
    expect((await put('ours', current)).size).toBe(4);
    expect(await read()).toBe('ours');

    const last = (await c.stat(`${folder}/a.txt`)).etag!;
    await c.remove(`${folder}/a.txt`, { recursive: false });
    await expect(put('ours again', last)).rejects.toBeInstanceOf(ChangedMeanwhile);
    await expect(c.stat(`${folder}/a.txt`)).rejects.toMatchObject({ code: 'not_found' });
    // No temporary file is left on the server's disk, where the test can see it.
    const disk = { local: join(rest.dir, 'local-root'), webdav: apache.root, sftp: sshd.dataDir, smb: samba.shareDir }[backend];
    if (disk) expect(readdirSync(join(disk, folder))).toEqual([]);
  }, 60_000);
});

// A writer outside Tributary takes the name while our bytes go up (after the name was chosen):
// the publish does not replace it; rename takes the next name, fail leaves nothing behind.
describe('a name taken behind Tributary\'s back during an upload (local)', () => {
  async function raceUpload(mode: 'rename' | 'fail') {
    const folder = await freshFolder(accounts.local);
    const dir = join(rest.dir, 'local-root', (await rest.app.storage.get(accounts.local, folder)).name);
    const body = new PassThrough();
    const upload = rest.app.storage.upload(accounts.local, folder, 'race.txt', body, { conflict: mode });
    upload.catch(() => {});
    body.write('ours, ');
    // The name is chosen once the write has begun: its hidden temporary file is there.
    while (!readdirSync(dir).some((n) => n.startsWith('.tributary-'))) await new Promise((r) => setTimeout(r, 5));
    writeFileSync(join(dir, 'race.txt'), 'outside writer');
    body.end('all of it');
    return { dir, upload };
  }

  it('rename: the upload goes to "race (1).txt", the outside file stays', async () => {
    const { dir, upload } = await raceUpload('rename');
    expect((await upload).name).toBe('race (1).txt');
    expect(readFileSync(join(dir, 'race.txt'), 'utf8')).toBe('outside writer');
    expect(readFileSync(join(dir, 'race (1).txt'), 'utf8')).toBe('ours, all of it');
    expect(readdirSync(dir).sort()).toEqual(['race (1).txt', 'race.txt']);
  });

  it('fail: naming_conflict, the outside file stays, nothing else is left', async () => {
    const { dir, upload } = await raceUpload('fail');
    await expect(upload).rejects.toMatchObject({ code: 'naming_conflict' });
    expect(readFileSync(join(dir, 'race.txt'), 'utf8')).toBe('outside writer');
    expect(readdirSync(dir)).toEqual(['race.txt']);
  });
});

// spec 1, "Upload a file" + README limits: a 255-byte name uploaded twice still gets a free name
// of at most 255 bytes, with its extension, never cutting a character in two.
describe('numbered names of long names', () => {
  it('a 255-byte name uploaded twice gives "stem… (1).ext" within 255 bytes on a real file system', async () => {
    const folder = await freshFolder(accounts.local);
    // 'é' is 2 bytes: an odd byte budget for the stem would cut one in half if done naively.
    const long = `${'é'.repeat(124)}x.targz`;
    expect(Buffer.byteLength(long)).toBe(MAX_NAME_BYTES);
    const up = () =>
      rest.call('POST', `/v0/accounts/${accounts.local}/files`, {
        raw: 'x',
        headers: { 'x-service-metadata': JSON.stringify({ parent_id: folder, name: long }), 'content-type': 'application/octet-stream' },
      });
    const first = await up();
    const second = await up();
    const third = await up();
    expect([first.status, second.status, third.status]).toEqual([201, 201, 201]);
    for (const [n, r] of [[1, second], [2, third]] as const) {
      const got = r.json.name as string;
      expect(Buffer.byteLength(got)).toBeLessThanOrEqual(MAX_NAME_BYTES);
      expect(got.endsWith(` (${n}).targz`)).toBe(true);
      expect(got).not.toContain('\uFFFD');
      expect(long.startsWith(got.slice(0, got.length - ` (${n}).targz`.length))).toBe(true);
    }
  });
});

// Guard the scratch folders of the servers above from leaking when a test fails midway.
afterAll(() => {
  if (rest?.dir) rmSync(rest.dir, { recursive: true, force: true });
});
