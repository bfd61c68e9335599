/**
 * The storage conformance suite: one set of behaviours (spec 1, Files and Folders) every
 * storage connector must show through the StorageService, i.e. with encrypted ids, never paths.
 *
 * Usage, one file per connector (see memory.test.ts, local.test.ts, webdav.test.ts):
 *
 *   describeStorageConformance('webdav (Apache)', async () => {
 *     const server = await startApache();
 *     const app = await createApp({ dataDir: scratchDir('x'), defaultLocalFolder: false });
 *     const acc = await app.accounts.connect({ service: 'webdav', options: {...} });
 *     return { app, accountId: acc.id, otherAccountIds: [...], teardown: async () => { await app.close(); await server.stop(); } };
 *   }, { bigSize: 20 << 20 });
 *
 * The suite skips only what the connector's `features` say it lacks (today: `trash`); every
 * other behaviour is mandatory. Each test works in its own fresh folder below the root, so the
 * tests do not depend on each other's leftovers. Fixture trees that are not themselves under
 * test (the 2,500 paging entries) are written through the connector directly, to keep the run
 * short on backends where every service upload re-lists the folder.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { joinPath } from '../../src-main/connectors/shared/paths';
import type { StorageConnector } from '../../src-main/connectors/types';
import type { Resource } from '../../src-main/contract';
import { ServiceError, type ErrorCode } from '../../src-main/errors';
import { startApache } from '../servers/apache';
import { scratchDir } from '../servers/util';

export interface ConformanceSetup {
  app: App;
  accountId: number;
  /** Accounts of other connectors in the same app, for cross-account copy and move. */
  otherAccountIds?: number[];
  teardown(): Promise<void>;
  /**
   * Writes fixture entries straight into the server's own storage (its folder on disk), for
   * backends where creating thousands of entries through the protocol is slow and not what the
   * test is about. `folder` is the upstream path (rawId) of an existing folder.
   */
  seed?(folder: string, entries: { name: string; kind: 'file' | 'folder'; content: string }[]): Promise<void>;
}

/**
 * The setup of a connector whose server keeps its files in a folder on this disk (SFTP, SMB):
 * the account, `local` and WebDAV (Apache) accounts as the other side of cross-account copy
 * and move, and `seed` writing straight into the server's folder.
 */
export async function diskServerSetup(
  label: string,
  server: { dir: string; stop(): Promise<void> },
  account: { service: string; options: Record<string, unknown> },
): Promise<ConformanceSetup> {
  const dataDir = scratchDir(`conf-${label}`);
  const localRoot = scratchDir(`conf-${label}-local`);
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  const acc = await app.accounts.connect(account);
  const local = await app.accounts.connect({ service: 'local', options: { path: localRoot, trashDir: join(dataDir, 'Trash') } });
  const dav = await startApache();
  const webdav = await app.accounts.connect({
    service: 'webdav',
    options: { protocol: 'http', host: dav.host, port: dav.port, path: '/', username: dav.user, password: dav.password },
  });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [local.id, webdav.id],
    async seed(folder, entries) {
      for (const e of entries) {
        const target = join(server.dir, folder, e.name);
        if (e.kind === 'folder') mkdirSync(target);
        else writeFileSync(target, e.content);
      }
    },
    async teardown() {
      await app.close();
      await server.stop();
      await dav.stop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(localRoot, { recursive: true, force: true });
    },
  };
}

export interface ConformanceOptions {
  /** Size of the "big" upload in bytes (default 20 MB). */
  bigSize?: number;
  /** Entries in the paging folder (default 2,500) and the page size used (default 1,000). */
  pagingCount?: number;
  pageSize?: number;
  /** Per-test timeout in ms (default 120 s). */
  timeout?: number;
}

/** Throws unless `p` rejects with a ServiceError of `code`; returns that error. */
export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<ServiceError> {
  let error: unknown;
  try {
    await p;
  } catch (e) {
    error = e;
  }
  expect(error, `expected a ServiceError "${code}"`).toBeInstanceOf(ServiceError);
  expect((error as ServiceError).code, (error as Error).message).toBe(code);
  return error as ServiceError;
}

/** A deterministic-size random body and its sha256, streamed in 1 MiB chunks. */
export function randomBody(size: number): { stream: Readable; sha256: string } {
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  for (let left = size; left > 0; left -= 1 << 20) {
    const chunk = randomBytes(Math.min(left, 1 << 20));
    hash.update(chunk);
    chunks.push(chunk);
  }
  return { stream: Readable.from(chunks), sha256: hash.digest('hex') };
}

export async function sha256Of(stream: Readable): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

export async function textOf(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

const body = (text: string) => Readable.from([Buffer.from(text)]);

export function describeStorageConformance(name: string, setup: () => Promise<ConformanceSetup>, options: ConformanceOptions = {}): void {
  const bigSize = options.bigSize ?? 20_000_000;
  const pagingCount = options.pagingCount ?? 2500;
  const pageSize = options.pageSize ?? 1000;
  const timeout = options.timeout ?? 120_000;

  describe(`storage conformance: ${name}`, () => {
    let env: ConformanceSetup;
    let app: App;
    let acc: number;
    let connector: StorageConnector;
    let seq = 0;

    beforeAll(async () => {
      env = await setup();
      app = env.app;
      acc = env.accountId;
      connector = await app.accounts.storage(acc);
    }, 180_000);

    afterAll(async () => {
      await env?.teardown();
    }, 60_000);

    /** A fresh, uniquely named folder under the root for one test. */
    async function scratch(accountId = acc): Promise<Resource> {
      return app.storage.mkdir(accountId, 'root', `conf-${Date.now().toString(36)}-${++seq}-${randomBytes(3).toString('hex')}`);
    }
    async function names(accountId: number, folderId: string): Promise<string[]> {
      return (await app.storage.list(accountId, folderId, 1, 1000)).items.map((i) => i.name);
    }
    async function upload(folderId: string, fileName: string, text: string, conflict?: 'rename' | 'overwrite' | 'fail', accountId = acc) {
      return app.storage.upload(accountId, folderId, fileName, body(text), { size: Buffer.byteLength(text), conflict });
    }
    async function download(id: string, accountId = acc, range?: { start?: number; end?: number }): Promise<string> {
      return textOf((await app.storage.download(accountId, id, range)).stream);
    }

    // spec 1, Folders: list contents
    it('lists the root and a new folder appears in it', { timeout }, async () => {
      const dir = await scratch();
      expect(dir.kind).toBe('folder');
      expect(await names(acc, 'root')).toContain(dir.name);
      const page = await app.storage.list(acc, dir.id);
      expect(page.items).toEqual([]);
      expect(page.folder.id).toBe(dir.id);
      expect(page.total).toBe(0);
    });

    // spec 1, Folders: Create a folder (conflict_if_exists)
    it('mkdir returns the existing folder, or naming_conflict with conflict_if_exists', { timeout }, async () => {
      const dir = await scratch();
      const a = await app.storage.mkdir(acc, dir.id, 'sub');
      const again = await app.storage.mkdir(acc, dir.id, 'sub');
      expect(again.id).toBe(a.id);
      const err = await expectCode(app.storage.mkdir(acc, dir.id, 'sub', { conflictIfExists: true }), 'naming_conflict');
      expect(err.details.conflictingResourceId).toBe(a.id);
      // A file holding the name conflicts whatever conflict_if_exists says.
      await upload(dir.id, 'taken', 'x');
      await expectCode(app.storage.mkdir(acc, dir.id, 'taken'), 'naming_conflict');
      await expectCode(app.storage.mkdir(acc, dir.id, 'taken', { conflictIfExists: true }), 'naming_conflict');
      expect(await names(acc, dir.id)).toEqual(['sub', 'taken']);
      // Nested folders get ancestors back to the root (spec 1, Retrieve metadata).
      const nested = await app.storage.mkdir(acc, a.id, 'deeper');
      const meta = await app.storage.get(acc, nested.id);
      expect(meta.ancestors?.map((x) => x.id)).toEqual([a.id, dir.id, 'root']);
    });

    // spec 1, Files: Upload a file / Download
    it.each([
      ['empty', 0],
      ['1 byte', 1],
      ['big', bigSize],
    ])('uploads a %s file and downloads it byte-identical', { timeout }, async (_label, size) => {
      const dir = await scratch();
      const { stream, sha256 } = randomBody(size as number);
      const file = await app.storage.upload(acc, dir.id, `blob-${size}.bin`, stream, { size: size as number });
      expect(file.kind).toBe('file');
      expect(file.size).toBe(size);
      expect((await app.storage.get(acc, file.id)).size).toBe(size);
      const got = await sha256Of((await app.storage.download(acc, file.id)).stream);
      expect(got).toEqual({ sha256, size });
    });

    // spec 1, Files: Download (byte ranges, used by resumable downloads and previews)
    it('downloads byte ranges', { timeout }, async () => {
      const dir = await scratch();
      const file = await upload(dir.id, 'range.txt', '0123456789');
      expect(await download(file.id, acc, { start: 2, end: 5 })).toBe('2345');
      expect(await download(file.id, acc, { start: 7 })).toBe('789');
      expect(await download(file.id, acc, { start: 0, end: 0 })).toBe('0');
    });

    // spec 1, Files: names are kept exactly (unicode, spaces)
    it.each(['Ünïcødé 文件 ✓.txt', 'a b  c.txt', "it's #1 & 50% (draft)+[x].txt", 'emoji 🦀.md'])('keeps the name %j', { timeout }, async (fileName) => {
      const dir = await scratch();
      const file = await upload(dir.id, fileName, `content of ${fileName}`);
      expect(file.name).toBe(fileName);
      expect(await names(acc, dir.id)).toEqual([fileName]);
      const meta = await app.storage.get(acc, file.id);
      expect(meta.name).toBe(fileName);
      expect(await download(file.id)).toBe(`content of ${fileName}`);
      const sub = await app.storage.mkdir(acc, dir.id, `dir ${fileName}`);
      const inner = await upload(sub.id, 'inner.txt', 'inner');
      expect(await download(inner.id)).toBe('inner');
      expect((await app.storage.get(acc, inner.id)).ancestors?.[0]).toEqual({ id: sub.id, name: `dir ${fileName}` });
    });

    // spec 1, Files: Upload a file (automatic rename unless overwrite)
    it('renames on conflict ("x (1).txt") and overwrites on request', { timeout }, async () => {
      const dir = await scratch();
      const first = await upload(dir.id, 'x.txt', 'one');
      const second = await upload(dir.id, 'x.txt', 'two');
      const third = await upload(dir.id, 'x.txt', 'three');
      expect([first.name, second.name, third.name]).toEqual(['x.txt', 'x (1).txt', 'x (2).txt']);
      const over = await upload(dir.id, 'x.txt', 'replaced', 'overwrite');
      expect(over.name).toBe('x.txt');
      expect(over.id).toBe(first.id);
      expect(await download(first.id)).toBe('replaced');
      await expectCode(upload(dir.id, 'x.txt', 'nope', 'fail'), 'naming_conflict');
      expect(await names(acc, dir.id)).toEqual(['x (1).txt', 'x (2).txt', 'x.txt']);
      // spec 1, Files: Replace content
      const replaced = await app.storage.replace(acc, second.id, body('2!'), { size: 2 });
      expect(replaced.size).toBe(2);
      expect(await download(second.id)).toBe('2!');
      // A folder's name is not overwritten by a file.
      await app.storage.mkdir(acc, dir.id, 'f');
      expect((await upload(dir.id, 'f', 'file', 'overwrite').catch((e: ServiceError) => e.code)) as unknown).toBe('naming_conflict');
    });

    // spec 1, Files: Rename / move
    it('renames a file and a folder', { timeout }, async () => {
      const dir = await scratch();
      const file = await upload(dir.id, 'old.txt', 'data');
      const renamed = await app.storage.move(acc, file.id, { name: 'new name.txt' });
      expect(renamed.name).toBe('new name.txt');
      expect(await names(acc, dir.id)).toEqual(['new name.txt']);
      expect(await download(renamed.id)).toBe('data');
      await expectCode(app.storage.get(acc, file.id), 'not_found');
      const folder = await app.storage.mkdir(acc, dir.id, 'folder');
      await upload(folder.id, 'child.txt', 'child');
      const folder2 = await app.storage.move(acc, folder.id, { name: 'folder2' });
      expect(await names(acc, folder2.id)).toEqual(['child.txt']);
      // Renaming onto a taken name yields a numbered name, not an overwrite.
      await upload(dir.id, 'b.txt', 'b');
      const clash = await app.storage.move(acc, renamed.id, { name: 'b.txt' });
      expect(clash.name).toBe('b (1).txt');
      expect(await download(clash.id)).toBe('data');
    });

    // spec 1, Files: Rename / move and Copy onto a taken name, by the caller's choice (the UI's
    // Keep both / Replace / Skip): fail changes nothing, overwrite replaces like with like.
    it('renames, moves and copies onto a taken name: fail or overwrite', { timeout }, async () => {
      const dir = await scratch();
      const a = await upload(dir.id, 'a.txt', 'A');
      await upload(dir.id, 'b.txt', 'B');
      await expectCode(app.storage.move(acc, a.id, { name: 'b.txt', conflict: 'fail' }), 'naming_conflict');
      await expectCode(app.storage.copy(acc, a.id, { parentId: dir.id, name: 'b.txt', conflict: 'fail' }), 'naming_conflict');
      expect(await names(acc, dir.id)).toEqual(['a.txt', 'b.txt']);
      const replaced = await app.storage.move(acc, a.id, { name: 'b.txt', conflict: 'overwrite' });
      expect(replaced.name).toBe('b.txt');
      expect(await names(acc, dir.id)).toEqual(['b.txt']);
      expect(await download(replaced.id)).toBe('A');
      // A folder replaces a folder (its old content goes); a file never replaces a folder.
      const sub = await app.storage.mkdir(acc, dir.id, 'sub');
      await upload(sub.id, 'old.txt', 'old');
      const other = await app.storage.mkdir(acc, dir.id, 'other');
      await upload(other.id, 'new.txt', 'new');
      const copied = await app.storage.copy(acc, other.id, { parentId: dir.id, name: 'sub', conflict: 'overwrite' });
      expect(await names(acc, copied.id)).toEqual(['new.txt']);
      await expectCode(app.storage.move(acc, replaced.id, { name: 'sub', conflict: 'overwrite' }), 'naming_conflict');
      expect(await names(acc, dir.id)).toEqual(['other', 'sub', 'b.txt']);
    });

    // spec 1, Files: Rename / move (parent_id)
    it('moves a file and a folder tree into another folder', { timeout }, async () => {
      const dir = await scratch();
      const a = await app.storage.mkdir(acc, dir.id, 'a');
      const b = await app.storage.mkdir(acc, dir.id, 'b');
      const file = await upload(a.id, 'f.txt', 'moved');
      const moved = await app.storage.move(acc, file.id, { parentId: b.id });
      expect(moved.parent?.id).toBe(b.id);
      expect(await names(acc, a.id)).toEqual([]);
      expect(await download(moved.id)).toBe('moved');
      const tree = await app.storage.mkdir(acc, a.id, 'tree');
      await upload(tree.id, 'leaf.txt', 'leaf');
      const movedTree = await app.storage.move(acc, tree.id, { parentId: b.id, name: 'tree2' });
      expect(await names(acc, b.id)).toEqual(['tree2', 'f.txt']);
      const leaf = (await app.storage.list(acc, movedTree.id)).items[0]!;
      expect(await download(leaf.id)).toBe('leaf');
      await expectCode(app.storage.move(acc, b.id, { parentId: movedTree.id }), 'invalid_parameters');
    });

    // spec 1, Files: Copy
    it('copies a file and a folder tree', { timeout }, async () => {
      const dir = await scratch();
      const file = await upload(dir.id, 'c.txt', 'copy me');
      const copy = await app.storage.copy(acc, file.id, { parentId: dir.id });
      expect(copy.name).toBe('c (1).txt');
      expect(await download(copy.id)).toBe('copy me');
      expect(await download(file.id)).toBe('copy me');
      const tree = await app.storage.mkdir(acc, dir.id, 'tree');
      const sub = await app.storage.mkdir(acc, tree.id, 'sub');
      await upload(sub.id, 'deep.txt', 'deep');
      const target = await app.storage.mkdir(acc, dir.id, 'target');
      const treeCopy = await app.storage.copy(acc, tree.id, { parentId: target.id, name: 'tree copy' });
      const subCopy = (await app.storage.list(acc, treeCopy.id)).items;
      expect(subCopy.map((i) => i.name)).toEqual(['sub']);
      const deep = (await app.storage.list(acc, subCopy[0]!.id)).items;
      expect(deep.map((i) => i.name)).toEqual(['deep.txt']);
      expect(await download(deep[0]!.id)).toBe('deep');
      expect(await names(acc, tree.id)).toEqual(['sub']);
    });

    // spec 1, Files: Copy / Rename-move with `account` (cross-account, streamed)
    it('copies and moves across accounts', { timeout }, async (ctx) => {
      const others = env.otherAccountIds ?? [];
      if (others.length === 0) return ctx.skip('no second account given for cross-account tests');
      for (const other of others) {
        const dir = await scratch();
        const there = await scratch(other);
        const { stream, sha256 } = randomBody(3 << 20);
        const file = await app.storage.upload(acc, dir.id, 'cross ✓.bin', stream, { size: 3 << 20 });
        const copied = await app.storage.copy(acc, file.id, { parentId: there.id, account: other });
        expect(copied.account).toBe(other);
        expect(copied.name).toBe('cross ✓.bin');
        expect((await sha256Of((await app.storage.download(other, copied.id)).stream)).sha256).toBe(sha256);
        const moved = await app.storage.move(acc, file.id, { parentId: there.id, account: other });
        expect(moved.name).toBe('cross ✓ (1).bin');
        expect((await sha256Of((await app.storage.download(other, moved.id)).stream)).sha256).toBe(sha256);
        await expectCode(app.storage.get(acc, file.id), 'not_found');
        // A folder tree in and back out again.
        const tree = await app.storage.mkdir(other, there.id, 'tree');
        await upload(tree.id, 'leaf.txt', 'from elsewhere', undefined, other);
        const back = await app.storage.move(other, tree.id, { parentId: dir.id, account: acc });
        expect(back.account).toBe(acc);
        const leaf = (await app.storage.list(acc, back.id)).items;
        expect(leaf.map((i) => i.name)).toEqual(['leaf.txt']);
        expect(await download(leaf[0]!.id)).toBe('from elsewhere');
        expect(await names(other, there.id)).toEqual(['cross ✓ (1).bin', 'cross ✓.bin']);
        // An id from one account is not valid in another.
        await expectCode(app.storage.get(other, back.id), 'not_found');
      }
    });

    // spec 1, Files: Delete (permanent=false goes to the trash when there is one)
    it('deletes to the trash', { timeout }, async (ctx) => {
      if (!connector.features.trash) return ctx.skip('this backend has no trash (features.trash)');
      const dir = await scratch();
      const trashName = `trashed-${randomBytes(4).toString('hex')}.txt`;
      const file = await upload(dir.id, trashName, 'bye');
      await app.storage.delete(acc, file.id);
      expect(await names(acc, dir.id)).toEqual([]);
      await expectCode(app.storage.get(acc, file.id), 'not_found');
      const trash = await app.storage.list(acc, 'trash');
      expect(trash.folder.id).toBe('trash');
      expect(trash.items.map((i) => i.name)).toContain(trashName);
      const folder = await app.storage.mkdir(acc, dir.id, `trashed-dir-${randomBytes(4).toString('hex')}`);
      await upload(folder.id, 'in.txt', 'in');
      await app.storage.delete(acc, folder.id, { recursive: true });
      expect(await names(acc, dir.id)).toEqual([]);
      expect((await app.storage.list(acc, 'trash')).items.map((i) => i.name)).toContain(folder.name);
      // Nothing can be created in the trash.
      await expectCode(upload('trash', 'x.txt', 'x'), 'invalid_parent_folder');
      // Undo: a trash that can give items back does, to where they were.
      if (connector.features.trash.restore) {
        const kept = await upload(dir.id, 'undo.txt', 'kept');
        const { restore } = await app.storage.delete(acc, kept.id);
        const back = await app.storage.restore(acc, restore!);
        expect(back.name).toBe('undo.txt');
        expect(await download(back.id)).toBe('kept');
      }
    });

    // spec 1, Files: Delete (permanent=true, and backends without a trash)
    it('deletes permanently', { timeout }, async () => {
      const dir = await scratch();
      const name1 = `gone-${randomBytes(4).toString('hex')}.txt`;
      const file = await upload(dir.id, name1, 'bye');
      await app.storage.delete(acc, file.id, { permanent: true });
      await expectCode(app.storage.get(acc, file.id), 'not_found');
      await expectCode(app.storage.download(acc, file.id), 'not_found');
      expect(await names(acc, dir.id)).toEqual([]);
      if (connector.features.trash) {
        expect((await app.storage.list(acc, 'trash')).items.map((i) => i.name)).not.toContain(name1);
      } else {
        await expectCode(app.storage.list(acc, 'trash'), 'not_found');
      }
      await expectCode(app.storage.delete(acc, file.id, { permanent: true }), 'not_found');
    });

    // spec 1, Errors: root and trash cannot be moved, renamed or deleted
    it('refuses to move, rename or delete root and trash (forbidden)', { timeout }, async () => {
      const dir = await scratch();
      for (const special of ['root', 'trash']) {
        await expectCode(app.storage.move(acc, special, { name: 'renamed' }), 'forbidden');
        await expectCode(app.storage.move(acc, special, { parentId: dir.id }), 'forbidden');
        await expectCode(app.storage.delete(acc, special), 'forbidden');
        await expectCode(app.storage.delete(acc, special, { permanent: true, recursive: true }), 'forbidden');
      }
      expect(await names(acc, 'root')).toContain(dir.name);
    });

    // spec 1, Files: Delete (folders need recursive)
    it('deletes a non-empty folder only with recursive (folder_not_empty)', { timeout }, async () => {
      const dir = await scratch();
      const folder = await app.storage.mkdir(acc, dir.id, 'full');
      await app.storage.mkdir(acc, folder.id, 'sub');
      await upload(folder.id, 'f.txt', 'f');
      await expectCode(app.storage.delete(acc, folder.id, { permanent: true }), 'folder_not_empty');
      await expectCode(app.storage.delete(acc, folder.id), 'folder_not_empty');
      expect(await names(acc, folder.id)).toEqual(['sub', 'f.txt']);
      await app.storage.delete(acc, folder.id, { permanent: true, recursive: true });
      await expectCode(app.storage.get(acc, folder.id), 'not_found');
      const empty = await app.storage.mkdir(acc, dir.id, 'empty');
      await app.storage.delete(acc, empty.id, { permanent: true });
      expect(await names(acc, dir.id)).toEqual([]);
    });

    // spec 1, Limits (page size 1 to 1000): every entry exactly once, in order
    it(`pages through ${pagingCount} entries ${pageSize} at a time`, { timeout: Math.max(timeout, 300_000) }, async () => {
      const dir = await scratch();
      const folderPath = (await app.storage.get(acc, dir.id)).rawId;
      const folders = Math.min(10, pagingCount);
      const expected: string[] = [];
      for (let i = 0; i < folders; i++) expected.push(`dir-${String(i).padStart(5, '0')}`);
      for (let i = folders; i < pagingCount; i++) expected.push(`file-${String(i).padStart(5, '0')}.txt`);
      // Fixtures on the server's disk where the setup can, else through the connector 8 at a
      // time; creating them is not what this test is about.
      let next = 0;
      if (env.seed) {
        await env.seed(folderPath, expected.map((name) => ({ name, kind: name.startsWith('dir-') ? 'folder' : 'file', content: name })));
        next = expected.length;
      }
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < expected.length) {
            const entryName = expected[next++]!;
            const path = joinPath(folderPath, entryName);
            if (entryName.startsWith('dir-')) await connector.mkdir(path);
            else await connector.write(path, Readable.from([Buffer.from(entryName)]), { size: Buffer.byteLength(entryName) });
          }
        }),
      );
      const seen: string[] = [];
      const ids = new Set<string>();
      let page = 1;
      for (;;) {
        const p = await app.storage.list(acc, dir.id, page, pageSize);
        expect(p.total).toBe(pagingCount);
        expect(p.items.length).toBe(Math.min(pageSize, pagingCount - (page - 1) * pageSize));
        for (const item of p.items) {
          seen.push(item.name);
          ids.add(item.id);
        }
        if (!p.hasNext) break;
        page++;
      }
      expect(page).toBe(Math.ceil(pagingCount / pageSize));
      expect(seen).toEqual(expected);
      expect(ids.size).toBe(pagingCount);
      const beyond = await app.storage.list(acc, dir.id, page + 1, pageSize);
      expect(beyond.items).toEqual([]);
      expect(beyond.hasNext).toBe(false);
      await app.storage.delete(acc, dir.id, { permanent: true, recursive: true });
    });

    // spec 1, Files: Search (file names)
    it('finds files by name, case-insensitively, at any depth', { timeout }, async () => {
      const dir = await scratch();
      const token = randomBytes(5).toString('hex');
      const deep = await app.storage.mkdir(acc, (await app.storage.mkdir(acc, dir.id, 'one')).id, 'two');
      const file = await upload(deep.id, `Report-${token}-Final.txt`, 'r');
      await upload(dir.id, `other-${token}.txt`, 'o');
      const hits = await app.storage.search(acc, `report-${token.toUpperCase()}`);
      expect(hits.map((h) => h.id)).toEqual([file.id]);
      expect(hits[0]!.name).toBe(`Report-${token}-Final.txt`);
      expect((await app.storage.search(acc, token)).map((h) => h.name).sort()).toEqual([`Report-${token}-Final.txt`, `other-${token}.txt`]);
      expect(await app.storage.search(acc, `absent-${token}`)).toEqual([]);
    });

    // spec 1, Files: Upload a file (only into folders)
    it('refuses to upload into a file or a missing folder', { timeout }, async () => {
      const dir = await scratch();
      const file = await upload(dir.id, 'plain.txt', 'p');
      await expectCode(upload(file.id, 'x.txt', 'x'), 'invalid_parent_folder');
      await app.storage.delete(acc, file.id, { permanent: true });
      await expectCode(upload(file.id, 'x.txt', 'x'), 'not_found');
      await expectCode(app.storage.download(acc, dir.id), 'invalid_parameters');
    });

    // Account: quota where the backend reports one
    it('reports quota when the backend has it', { timeout }, async (ctx) => {
      if (!connector.features.quota) return ctx.skip('this backend reports no quota (features.quota)');
      const q = await app.accounts.quota(acc);
      expect(q).not.toBeNull();
      expect(q!.used === null || q!.used >= 0).toBe(true);
      expect(q!.total === null || q!.total > 0).toBe(true);
    });
  });
}
