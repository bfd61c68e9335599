/**
 * A move to another account copies what the source's listing shows, then removes the source.
 * A local folder can hold entries its listing leaves out (a name that is not valid UTF-8, a
 * link leading out of the account's folder): they are never copied, so they must not be
 * destroyed either. Only what was copied is removed; what is left goes to the source account's
 * trash (or stays where it was without one), and the move answers folder_not_empty saying so.
 * Spec 1, Rename / move (`account`); the error body as in docs/rest.md "Errors".
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLocal, importMemory, isErrorBody, startRest, type RestServer } from '../rest/harness';
import { expectCode } from '../conformance/storage-suite';

let s: RestServer;
let src: { id: number; folder: string };
let dst: { id: number; folder: string };
let bare: { id: number; folder: string };
let mem: number;

/** "café.txt" spelled in Latin-1: not valid UTF-8. */
const LATIN1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]);
const latin1In = (dir: string) => Buffer.concat([Buffer.from(`${dir}/`), LATIN1]);
/** Names as the disk has them, in Latin-1 so that the undecodable one reads as "café.txt". */
const onDisk = (dir: string) => (existsSync(dir) ? readdirSync(dir, { encoding: 'buffer' }).map((b) => b.toString('latin1')).sort() : null);

/** `folder` with ok.txt, sub/deep.txt, and what no listing shows: a Latin-1 name and a link out. */
function seed(folder: string, options: { hiddenInSub?: boolean } = {}): void {
  mkdirSync(join(folder, 'sub'), { recursive: true });
  writeFileSync(join(folder, 'ok.txt'), 'ok');
  writeFileSync(join(folder, 'sub', 'deep.txt'), 'deep');
  writeFileSync(latin1In(folder), 'precious');
  if (options.hiddenInSub) writeFileSync(latin1In(join(folder, 'sub')), 'precious too');
  writeFileSync(join(s.dir, 'outside.txt'), 'outside');
  symlinkSync(join(s.dir, 'outside.txt'), join(folder, 'out'));
}

beforeAll(async () => {
  s = await startRest();
  src = await importLocal(s, 'src');
  dst = await importLocal(s, 'dst');
  bare = await importLocal(s, 'bare');
  mem = (await importMemory(s, `move-unlisted-${process.pid}`)).id;
  // An account without a trash: what it cannot remove stays where it was.
  const bareConnector = await s.app.accounts.storage(bare.id);
  (bareConnector.features as { trash?: unknown }).trash = undefined;
});

afterAll(async () => {
  await s?.stop();
});

describe('moving a folder to another account with entries the listing leaves out (spec 1, Rename / move)', () => {
  it('local to local: the copy arrives, the unlisted entries go to the source trash, and the answer is 409 folder_not_empty naming them', async () => {
    seed(join(src.folder, 'docs'));
    const id = s.app.storage.idOf(src.id, '/docs');
    const r = await s.call('PATCH', `/v2/accounts/${src.id}/storage/folders/${id}`, { body: { account: dst.id, parent_id: 'root' } });
    expect(r.status).toBe(409);
    expect(isErrorBody(r.json, 409)).toBe(true);
    expect(r.json.error_code).toBe('folder_not_empty');
    expect(r.json.message).toContain('1 item was left in the source');
    expect(r.json.message).toContain('"/docs"');
    expect(r.json.message).toContain('trash');
    // Everything the listing showed arrived.
    expect(onDisk(join(dst.folder, 'docs'))).toEqual(['ok.txt', 'sub']);
    expect(readFileSync(join(dst.folder, 'docs', 'sub', 'deep.txt'), 'utf8')).toBe('deep');
    // The source is gone from where it was; the trash holds only what was not copied.
    expect(onDisk(join(src.folder, 'docs'))).toBeNull();
    const trashed = join(s.dir, 'src-trash', 'files', 'docs');
    expect(onDisk(trashed)).toEqual(['café.txt', 'out']);
    expect(readFileSync(latin1In(trashed), 'utf8')).toBe('precious');
    expect(readFileSync(join(trashed, 'out'), 'utf8')).toBe('outside');
  });

  it('local to memory: every folder still holding unlisted entries is named', async () => {
    seed(join(src.folder, 'photos'), { hiddenInSub: true });
    const e = await expectCode(s.app.storage.move(src.id, s.app.storage.idOf(src.id, '/photos'), { account: mem, parentId: 'root' }), 'folder_not_empty');
    expect(e.message).toMatch(/2 items were left in the source: "\/photos\/sub", "\/photos" still hold entries Tributary does not list/);
    const moved = (await s.app.storage.list(mem, 'root')).items.find((i) => i.name === 'photos')!;
    expect((await s.app.storage.list(mem, moved.id)).items.map((i) => i.name).sort()).toEqual(['ok.txt', 'sub']);
    const trashed = join(s.dir, 'src-trash', 'files', 'photos');
    expect(onDisk(trashed)).toEqual(['café.txt', 'out', 'sub']);
    expect(onDisk(join(trashed, 'sub'))).toEqual(['café.txt']);
    expect(onDisk(join(src.folder, 'photos'))).toBeNull();
  });

  it('from an account without a trash: only what was copied is removed, the rest stays where it was', async () => {
    seed(join(bare.folder, 'docs'));
    const e = await expectCode(s.app.storage.move(bare.id, s.app.storage.idOf(bare.id, '/docs'), { account: dst.id, parentId: 'root', name: 'from-bare' }), 'folder_not_empty');
    expect(e.message).toMatch(/1 item was left in the source: "\/docs".*"\/docs" was left where it was\./);
    expect(onDisk(join(dst.folder, 'from-bare'))).toEqual(['ok.txt', 'sub']);
    expect(onDisk(join(bare.folder, 'docs'))).toEqual(['café.txt', 'out']);
  });

  it('a link to a folder elsewhere in the account: the copy has what it leads to, the link goes, that folder stays', async () => {
    mkdirSync(join(src.folder, 'library'));
    writeFileSync(join(src.folder, 'library', 'book.txt'), 'book');
    mkdirSync(join(src.folder, 'desk'));
    writeFileSync(join(src.folder, 'desk', 'note.txt'), 'note');
    symlinkSync(join(src.folder, 'library'), join(src.folder, 'desk', 'shelf'));
    await s.app.storage.move(src.id, s.app.storage.idOf(src.id, '/desk'), { account: dst.id, parentId: 'root' });
    expect(readFileSync(join(dst.folder, 'desk', 'shelf', 'book.txt'), 'utf8')).toBe('book');
    expect(onDisk(join(src.folder, 'desk'))).toBeNull();
    expect(readFileSync(join(src.folder, 'library', 'book.txt'), 'utf8')).toBe('book');
  });

  it('a folder with nothing unlisted moves as before: success, no source left, nothing in the trash', async () => {
    mkdirSync(join(src.folder, 'plain', 'inner'), { recursive: true });
    writeFileSync(join(src.folder, 'plain', 'a.txt'), 'a');
    writeFileSync(join(src.folder, 'plain', 'inner', 'b.txt'), 'b');
    const trashBefore = onDisk(join(s.dir, 'src-trash', 'files'));
    const moved = await s.app.storage.move(src.id, s.app.storage.idOf(src.id, '/plain'), { account: dst.id, parentId: 'root' });
    expect(moved).toMatchObject({ account: dst.id, name: 'plain', path: '/plain' });
    expect(onDisk(join(dst.folder, 'plain'))).toEqual(['a.txt', 'inner']);
    expect(readFileSync(join(dst.folder, 'plain', 'inner', 'b.txt'), 'utf8')).toBe('b');
    expect(onDisk(join(src.folder, 'plain'))).toBeNull();
    expect(onDisk(join(s.dir, 'src-trash', 'files'))).toEqual(trashBefore);
  });
});
