/**
 * Hostile and broken input through the storage service (spec 1, File `id`, Errors, Limits):
 * ids that are not ours, names no backend can hold, unknown accounts, and a WebDAV server that
 * dies in the middle of a big upload.
 *
 * Ids: anything that does not authenticate as (this account, some path) is `not_found`,
 * including the empty id and a 9,000-character id. We chose not_found over invalid_parameters
 * for the over-long id because no id we mint exceeds 8192 characters (spec 1, Limits), so an
 * over-long id is simply one no file has; answering differently would tell a prober nothing
 * useful and would make clients special-case lengths.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { startApache } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { expectCode } from '../conformance/storage-suite';

const text = (s: string) => Readable.from([Buffer.from(s)]);

describe('bad input (spec 1, File id / Errors / Limits)', () => {
  let app: App;
  let dir: string;
  let root: string;
  let a: number;
  let b: number;
  let fileId: string;
  let folderId: string;

  beforeAll(async () => {
    dir = scratchDir('bad-input');
    root = scratchDir('bad-input-root');
    app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
    a = (await app.accounts.connect({ service: 'local', options: { path: root, trashDir: join(dir, 'Trash') } })).id;
    b = (await app.accounts.connect({ service: 'memory', options: { store: `bad-${randomBytes(4).toString('hex')}` } })).id;
    folderId = (await app.storage.mkdir(a, 'root', 'folder')).id;
    fileId = (await app.storage.upload(a, folderId, 'file.txt', text('x'))).id;
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  /** Every id-taking operation answers `code` for `id`. */
  async function allRefuse(id: string, code: 'not_found' = 'not_found', account = a) {
    await expectCode(app.storage.get(account, id), code);
    await expectCode(app.storage.list(account, id), code);
    await expectCode(app.storage.download(account, id), code);
    await expectCode(app.storage.upload(account, id, 'n.txt', text('n')), code);
    await expectCode(app.storage.mkdir(account, id, 'n'), code);
    await expectCode(app.storage.move(account, id, { name: 'n' }), code);
    await expectCode(app.storage.copy(account, id, { parentId: 'root' }), code);
    await expectCode(app.storage.delete(account, id, { recursive: true, permanent: true }), code);
    await expectCode(app.storage.replace(account, id, text('n')), code);
  }

  it('a tampered id is not_found', async () => {
    for (const i of [0, 10, Math.floor(fileId.length / 2), fileId.length - 3]) {
      const c = fileId[i] === 'A' ? 'B' : 'A';
      await allRefuse(fileId.slice(0, i) + c + fileId.slice(i + 1));
    }
    expect((await app.storage.get(a, fileId)).name).toBe('file.txt'); // nothing was touched
  });

  it('a truncated id is not_found', async () => {
    await allRefuse(fileId.slice(0, -1));
    await allRefuse(folderId.slice(0, 30));
  });

  it("another account's id is not_found, never that account's file", async () => {
    await allRefuse(fileId, 'not_found', b);
    const memFile = await app.storage.upload(b, 'root', 'file.txt', text('mem'));
    await allRefuse(memFile.id, 'not_found', a);
  });

  it('the empty id and a 9000-character id are not_found', async () => {
    await allRefuse('');
    await allRefuse('A'.repeat(9000));
  });

  it('`ephemeral` takes uploads (spec 2 Send attachments) and nothing else', async () => {
    await expectCode(app.storage.get(a, 'ephemeral'), 'not_found');
    await expectCode(app.storage.list(a, 'ephemeral'), 'not_found');
    await expectCode(app.storage.download(a, 'ephemeral'), 'not_found');
    await expectCode(app.storage.mkdir(a, 'ephemeral', 'n'), 'not_found');
    await expectCode(app.storage.move(a, 'ephemeral', { name: 'n' }), 'not_found');
    await expectCode(app.storage.delete(a, 'ephemeral', { recursive: true, permanent: true }), 'not_found');
    const file = await app.storage.upload(a, 'ephemeral', 'n.txt', text('n'));
    expect(file.parent).toEqual({ id: 'ephemeral', name: 'ephemeral' });
  });

  it.each([
    ['..', '..'],
    ['.', '.'],
    ['slash', 'a/b'],
    ['backslash', 'a\\b'],
    ['NUL', 'a\u0000b'],
    ['newline', 'a\nb'],
    ['DEL', 'a\u007fb'],
    ['empty', ''],
    ['256 ASCII bytes', 'x'.repeat(256)],
    ['258 UTF-8 bytes in 86 characters', '日'.repeat(86)],
  ])('a name with %s is invalid_parameters', async (_label, name) => {
    await expectCode(app.storage.upload(a, folderId, name, text('n')), 'invalid_parameters');
    await expectCode(app.storage.mkdir(a, folderId, name), 'invalid_parameters');
    await expectCode(app.storage.move(a, fileId, { name }), 'invalid_parameters');
    await expectCode(app.storage.copy(a, fileId, { parentId: folderId, name }), 'invalid_parameters');
    expect(readdirSync(join(root, 'folder'))).toEqual(['file.txt']);
  });

  it('255 bytes is still a valid name', async () => {
    const name = 'y'.repeat(251) + '.txt';
    const f = await app.storage.upload(a, folderId, name, text('ok'));
    expect(f.name).toBe(name);
    await app.storage.delete(a, f.id, { permanent: true });
  });

  it('an unknown account is not_found', async () => {
    for (const acc of [999_999, -1, 0, 1.5, Number.NaN]) {
      await expectCode(app.storage.list(acc, 'root'), 'not_found');
      await expectCode(app.storage.upload(acc, 'root', 'x.txt', text('x')), 'not_found');
    }
    await expectCode(app.storage.copy(a, fileId, { parentId: 'root', account: 999_999 }), 'not_found');
    await expectCode(app.storage.move(a, fileId, { parentId: 'root', account: 999_999 }), 'not_found');
  });

  it('local: a raw id leading out of the folder (.., symlinks) is refused', async () => {
    for (const raw of ['/../../etc/passwd', '/folder/../../x', '/./folder']) {
      const { id } = await app.storage.convertId(a, raw, 'file', false);
      await expectCode(app.storage.get(a, id), 'forbidden');
      await expectCode(app.storage.upload(a, id, 'x', text('x')), 'forbidden');
    }
    const outside = scratchDir('bad-input-outside');
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    symlinkSync(outside, join(root, 'escape'));
    symlinkSync(join(root, 'folder'), join(root, 'inner-link'));
    try {
      const names = (await app.storage.list(a, 'root')).items.map((i) => i.name);
      expect(names).not.toContain('escape'); // a link out is not shown
      expect(names).toContain('inner-link'); // a link that stays inside is
      const { id } = await app.storage.convertId(a, '/escape/secret.txt', 'file', false);
      await expectCode(app.storage.download(a, id), 'forbidden');
      await expectCode(app.storage.delete(a, id, { permanent: true }), 'forbidden');
      const { id: dirId } = await app.storage.convertId(a, '/escape', 'folder', false);
      await expectCode(app.storage.upload(a, dirId, 'planted.txt', text('x')), 'forbidden');
      expect(readdirSync(outside)).toEqual(['secret.txt']);
    } finally {
      rmSync(join(root, 'escape'));
      rmSync(join(root, 'inner-link'));
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

// spec 1, Errors: an upstream that disappears mid-transfer is service_not_available, and no
// partial file appears under the final name (the connector's atomicWrites promise).
describe('WebDAV server killed mid-upload', () => {
  it('fails with a clear service_not_available and leaves no partial file', { timeout: 90_000 }, async () => {
    const server = await startApache();
    const dir = scratchDir('bad-input-dav');
    const app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({
        service: 'webdav',
        options: { protocol: 'http', host: server.host, port: server.port, username: server.user, password: server.password },
      });
      const size = 2 * 1024 ** 3;
      const chunk = randomBytes(1 << 20);
      let sent = 0;
      let killed: Promise<void> | undefined;
      let killedAt = 0;
      const body = new Readable({
        read() {
          if (sent >= size) return this.push(null);
          sent += chunk.length;
          // Once 32 MB are on their way, the server dies as if the machine lost power.
          if (sent >= 32 << 20 && !killed) {
            killedAt = Date.now();
            killed = server.kill();
          }
          this.push(chunk);
        },
      });
      const err = await expectCode(app.storage.upload(acc.id, 'root', 'big.bin', body, { size }), 'service_not_available');
      console.log(`service_not_available ${Date.now() - killedAt} ms after the kill, ${sent >> 20} MiB sent: ${err.message}`);
      expect(err.message).toContain(`127.0.0.1:${server.port}`);
      await killed;
      // Reads fail the same way while it is down.
      await expectCode(app.storage.list(acc.id, 'root'), 'service_not_available');
      await server.restart();
      const names = (await app.storage.list(acc.id, 'root')).items.map((i) => i.name);
      expect(names).not.toContain('big.bin');
      expect(existsSync(join(server.root, 'big.bin'))).toBe(false);
      // And the account works again after the restart.
      const ok = await app.storage.upload(acc.id, 'root', 'big.bin', text('after'), { size: 5 });
      expect(ok.name).toBe('big.bin');
    } finally {
      await app.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('wrong credentials are upstream_auth_failed with a clear message', async () => {
    const server = await startApache();
    const dir = scratchDir('bad-input-auth');
    const app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    try {
      const err = await expectCode(
        app.accounts.connect({ service: 'webdav', options: { protocol: 'http', host: server.host, port: server.port, username: server.user, password: 'wrong' } }),
        'upstream_auth_failed',
      );
      expect(err.message).toMatch(/user name or password/);
      const down = await expectCode(
        app.accounts.connect({ service: 'webdav', options: { protocol: 'http', host: '127.0.0.1', port: 1, username: 'x', password: 'y' } }),
        'service_not_available',
      );
      expect(down.message).toContain('127.0.0.1:1');
    } finally {
      await app.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
