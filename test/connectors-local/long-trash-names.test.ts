/**
 * Deleting to the trash (spec 1, Delete: "permanent=false: file goes to the trash") a file whose
 * name is too long for `<name>.trashinfo` to fit 255 bytes (docs/connectors.md, Trash): it goes
 * to the trash under a shortened name, the trash listing shows its original name, and restore
 * puts it back under that name with its content (freedesktop.org Trash spec 1.0: files/ may hold
 * any name; the .trashinfo's Path is the original).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { scratchDir } from '../servers/util';

let work: string;
let root: string;
let trash: string;
let app: App;
let acc: number;

const bytes = (s: string) => Buffer.byteLength(s);

beforeAll(async () => {
  work = scratchDir('long-trash-names');
  root = join(work, 'acct');
  trash = join(work, 'trash');
  mkdirSync(root);
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  acc = (await app.accounts.connect({ service: 'local', options: { path: root, trashDir: trash } })).id;
});

afterAll(async () => {
  await app?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Deletes `name` (at the root) to the trash through the storage API; the id restore takes. */
async function trashIt(name: string): Promise<string> {
  const { restore } = await app.storage.delete(acc, app.storage.idOf(acc, `/${name}`));
  expect(restore).toBeTruthy();
  expect(existsSync(join(root, name))).toBe(false);
  return restore!;
}

describe('local trash: names too long for their .trashinfo (spec 1, Delete; docs/connectors.md, Trash)', () => {
  it('a 255-byte name goes to the trash, is listed by its name, and restores under it with its content', async () => {
    const name = `${'L'.repeat(251)}.txt`;
    expect(bytes(name)).toBe(255);
    writeFileSync(join(root, name), 'long');
    const restore = await trashIt(name);

    // In files/ under a name whose .trashinfo fits, extension kept; Path keeps the whole name.
    const [stored] = readdirSync(join(trash, 'files'));
    expect(bytes(`${stored}.trashinfo`)).toBeLessThanOrEqual(255);
    expect(stored.endsWith('.txt')).toBe(true);
    const info = readFileSync(join(trash, 'info', `${stored}.trashinfo`), 'utf8');
    expect(info).toContain(`Path=${join(root, name)}\n`);

    const listed = (await app.storage.list(acc, 'trash')).items;
    expect(listed.map((i) => i.name)).toEqual([name]);
    expect(listed[0].id).toBe(restore);
    expect((await app.storage.get(acc, restore)).name).toBe(name);

    const back = await app.storage.restore(acc, restore);
    expect(back.name).toBe(name);
    expect(readFileSync(join(root, name), 'utf8')).toBe('long');
    expect(readdirSync(join(trash, 'files'))).toEqual([]);
    expect(readdirSync(join(trash, 'info'))).toEqual([]);
  });

  it('two long names alike up to the cut, with multibyte characters, each keep their own trash entry and restore', async () => {
    // 83 CJK characters (249 bytes) and an extension: cut between characters, never inside one.
    const stem = '文'.repeat(83);
    const [a, b] = [`${stem}a.md`, `${stem}b.md`];
    writeFileSync(join(root, a), 'first');
    writeFileSync(join(root, b), 'second');
    const ra = await trashIt(a);
    const rb = await trashIt(b);
    expect(ra).not.toBe(rb);

    const stored = readdirSync(join(trash, 'files')).sort();
    expect(stored).toHaveLength(2);
    for (const s of stored) {
      expect(bytes(`${s}.trashinfo`)).toBeLessThanOrEqual(255);
      expect(s.endsWith('.md')).toBe(true);
      expect(s).not.toContain('\uFFFD');
    }
    expect((await app.storage.list(acc, 'trash')).items.map((i) => i.name).sort()).toEqual([a, b].sort());

    // Restored in the other order: each goes back under its own name with its own content.
    expect((await app.storage.restore(acc, rb)).name).toBe(b);
    expect((await app.storage.restore(acc, ra)).name).toBe(a);
    expect(readFileSync(join(root, a), 'utf8')).toBe('first');
    expect(readFileSync(join(root, b), 'utf8')).toBe('second');
  });

  it('a name whose extension alone is too long is cut as a whole, and restores', async () => {
    const name = `a.${randomBytes(126).toString('hex').slice(0, 252)}`;
    expect(bytes(name)).toBe(254);
    writeFileSync(join(root, name), 'ext');
    const restore = await trashIt(name);
    expect((await app.storage.list(acc, 'trash')).items.map((i) => i.name)).toEqual([name]);
    expect((await app.storage.restore(acc, restore)).name).toBe(name);
    expect(readFileSync(join(root, name), 'utf8')).toBe('ext');
  });
});
