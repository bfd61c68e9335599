// Cached folder listings for instant browse, and paging over one snapshot
// (spec 1 Folders: list contents with paging).
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';

describe('listing cache', () => {
  it('serves the last listing without the backend, also after a restart', async () => {
    const dataDir = scratchDir('cache');
    const store = `cache-${Date.now()}`;
    let app = await createApp({ dataDir, defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 'memory', options: { store } })).id;
    const docs = await app.storage.mkdir(account, 'root', 'Docs');
    for (const name of ['b.txt', 'a.txt', 'file 10.txt', 'file 2.txt']) {
      await app.storage.upload(account, docs.id, name, Readable.from([Buffer.from(name)]));
    }
    expect(app.storage.listCached(account, docs.id)).toBeNull(); // never listed yet
    await app.storage.list(account, docs.id);
    await app.close();

    app = await createApp({ dataDir, defaultLocalFolder: false });
    await app.accounts.update(account, { active: false }); // the backend is now out of reach
    const cached = app.storage.listCached(account, docs.id)!;
    expect(cached.items.map((i) => i.name)).toEqual(['a.txt', 'b.txt', 'file 2.txt', 'file 10.txt']);
    expect(cached.folder).toMatchObject({ id: docs.id, name: 'Docs', ancestors: [{ id: 'root', name: '' }] });
    await expect(app.storage.list(account, docs.id)).rejects.toMatchObject({ code: 'forbidden' });
    await app.close();
  });

  it('pages through one sorted snapshot: every entry once, in order', async () => {
    const app = await createApp({ dataDir: scratchDir('cache'), defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 'memory', options: { store: `pages-${Date.now()}` } })).id;
    for (let i = 0; i < 250; i++) await app.storage.upload(account, 'root', `f${i}.txt`, Readable.from([]));
    const seen: string[] = [];
    for (let page = 1; ; page++) {
      const p = await app.storage.list(account, 'root', page, 100);
      seen.push(...p.items.map((i) => i.name));
      if (!p.hasNext) break;
    }
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);
    expect(seen.slice(0, 3)).toEqual(['f0.txt', 'f1.txt', 'f2.txt']);
    expect(seen.at(-1)).toBe('f249.txt');
    await app.close();
  });
});
