// Cached folder listings for instant browse, and paging over one snapshot
// (spec 1 Folders: list contents with paging).
import fc from 'fast-check';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { EntriesTable } from '../../src-main/cache/queries/entries';
import type { Entry } from '../../src-main/connectors/types';
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

  it('rewrites only the rows that changed when a folder is listed again', async () => {
    const app = await createApp({ dataDir: scratchDir('cache'), defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 'memory', options: { store: `changed-${Date.now()}` } })).id;
    const folder = await app.storage.mkdir(account, 'root', 'Docs');
    for (let i = 0; i < 50; i++) await app.storage.upload(account, folder.id, `f${i}.txt`, Readable.from([Buffer.from('x')]));
    const changes = () => (app.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    await app.storage.list(account, folder.id);
    app.storage.entries.flush();
    const before = changes();
    await app.storage.list(account, folder.id);
    app.storage.entries.flush();
    expect(changes() - before).toBe(0); // same listing: nothing written

    // Changed behind Tributary's back (straight on the backend): one row and the listing mark.
    const connector = await app.accounts.storage(account);
    await connector.write('/Docs/f7.txt', Readable.from([Buffer.from('longer now')]), { size: 10 });
    await connector.remove('/Docs/f8.txt', { recursive: false });
    const mid = changes();
    await app.storage.list(account, folder.id);
    // Read right after the listing: the cache already answers with it.
    const cached = app.storage.listCached(account, folder.id)!;
    expect(changes() - mid).toBe(3); // f7 updated, f8 deleted, listed_at
    expect(cached.items).toHaveLength(49);
    expect(cached.items.find((i) => i.name === 'f7.txt')?.size).toBe(10);
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

  it('writes a long listing a slice per turn of the event loop, served only whole (cache writes off the request path)', async () => {
    const app = await createApp({ dataDir: scratchDir('cache'), defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 'memory', options: { store: `slices-${Date.now()}` } })).id;
    const listing = (n: number, size: number): Entry[] =>
      Array.from({ length: n }, (_, i) => ({ path: `/big/f${String(i).padStart(5, '0')}`, name: `f${String(i).padStart(5, '0')}`, kind: 'file' as const, size, modified: new Date(1000), created: null }));
    const rows = () => (app.db.prepare("SELECT count(*) AS n FROM entries WHERE account_id = ? AND parent = '/big'").get(account) as { n: number }).n;
    const marked = () => app.db.prepare("SELECT 1 FROM folder_listings WHERE account_id = ? AND path = '/big'").get(account) !== undefined;
    const turn = () => new Promise((r) => setImmediate(r));
    const table = app.storage.entries;

    table.replaceListing(account, '/big', listing(3500, 1));
    await turn();
    // Part written, and not served as the folder's listing yet.
    expect(rows()).toBeGreaterThan(0);
    expect(rows()).toBeLessThan(3500);
    expect(marked()).toBe(false);
    // A read in between writes the rest first.
    expect(table.listing(account, '/big')?.entries).toHaveLength(3500);
    expect(marked()).toBe(true);

    // Left alone, it is written whole within a few turns; a newer listing replaces the rest of an older one.
    table.replaceListing(account, '/big', listing(3000, 2));
    await turn();
    expect(rows()).toBe(3500);
    table.replaceListing(account, '/big', listing(2000, 3));
    for (let i = 0; i < 20 && rows() !== 2000; i++) await turn();
    for (let i = 0; i < 5; i++) await turn();
    expect(rows()).toBe(2000);
    const sizes = app.db.prepare("SELECT DISTINCT size FROM entries WHERE account_id = ? AND parent = '/big'").all(account);
    expect(sizes).toEqual([{ size: 3 }]);
    expect(table.listing(account, '/big')?.entries).toHaveLength(2000);
    await app.close();
  });

  it('a listing compared with the one last written in memory writes exactly what one compared with the stored rows writes', async () => {
    const app = await createApp({ dataDir: scratchDir('cache'), defaultLocalFolder: false });
    const [a, b] = [(await app.accounts.connect({ service: 'memory', options: { store: `mem-a-${Date.now()}` } })).id, (await app.accounts.connect({ service: 'memory', options: { store: `mem-b-${Date.now()}` } })).id];
    const changes = () => (app.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    const rows = (account: number) =>
      app.db.prepare('SELECT path, name, kind, size, modified, created, etag, mime_type, seen_at, learned_at FROM entries WHERE account_id = ? ORDER BY path').all(account);
    const inMemory = app.storage.entries; // keeps the listing it wrote last
    const entry = fc.record({
      n: fc.integer({ min: 0, max: 30 }),
      kind: fc.constantFrom('file' as const, 'folder' as const),
      size: fc.constantFrom(null, 0, 7),
      modified: fc.constantFrom(null, new Date(1000), new Date(1001)),
      created: fc.constantFrom(null, new Date(5)),
      etag: fc.constantFrom(undefined, '"a"', '"b"'),
      mimeType: fc.constantFrom(undefined, 'text/plain'),
    });
    const toEntry = (e: { n: number; kind: 'file' | 'folder'; size: number | null; modified: Date | null; created: Date | null; etag?: string; mimeType?: string }): Entry => ({
      path: `/f/e${e.n}`,
      name: `e${e.n}`,
      kind: e.kind,
      size: e.size,
      modified: e.modified,
      created: e.created,
      ...(e.etag !== undefined ? { etag: e.etag } : {}),
      ...(e.mimeType !== undefined ? { mimeType: e.mimeType } : {}),
    });
    // Each listing is the one before with a few changes: one field of an entry, an entry gone, one new.
    const change = fc.record({ at: fc.nat(), field: fc.constantFrom('kind', 'size', 'modified', 'created', 'etag', 'mimeType', 'gone', 'new'), to: entry });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(entry, { selector: (e) => e.n, maxLength: 12 }), fc.array(fc.array(change, { maxLength: 3 }), { maxLength: 6 }), async (first, steps) => {
        const listings = [first];
        for (const step of steps) {
          const next = listings.at(-1)!.map((e) => ({ ...e }));
          for (const c of step) {
            const i = next.length ? c.at % next.length : -1;
            if (c.field === 'new' || i < 0) {
              if (!next.some((e) => e.n === c.to.n)) next.push(c.to);
            } else if (c.field === 'gone') next.splice(i, 1);
            else (next[i] as Record<string, unknown>)[c.field] = c.to[c.field];
          }
          listings.push(next);
        }
        for (const listing of listings) {
          const entries = listing.map(toEntry);
          const c0 = changes();
          inMemory.replaceListing(a, '/f', entries);
          inMemory.flush();
          const c1 = changes();
          // A table that never wrote this folder: compared with the stored rows.
          const fresh = new EntriesTable(app.db);
          fresh.replaceListing(b, '/f', entries.map((e) => ({ ...e })));
          fresh.flush();
          // Rows written, without the folder's listing mark (not refreshed when nothing changed,
          // as before): the same rows either way.
          expect(Math.max(0, c1 - c0 - 1)).toBe(changes() - c1 - 1);
          const [ra, rb] = [rows(a), rows(b)];
          expect(ra.map((r) => ({ ...(r as object), seen_at: 0, learned_at: 0 }))).toEqual(rb.map((r) => ({ ...(r as object), seen_at: 0, learned_at: 0 })));
        }
      }),
      { numRuns: 60, seed: 17 },
    );
    await app.close();
  });
});

// spec 1, Recent files: `after` on a backend that keeps whole seconds (S3).
describe('recent files on whole-second times', () => {
  it('a file Tributary learned of only after its second ended still counts as inside that second', async () => {
    const app = await createApp({ dataDir: scratchDir('cache-recent'), defaultLocalFolder: false });
    const account = (await app.accounts.connect({ service: 'memory', options: { store: `recent-${Date.now()}` } })).id;
    const row = app.db.prepare(
      "INSERT INTO entries (account_id, path, parent, name, kind, size, modified, seen_at, learned_at) VALUES (?, ?, '/', ?, 'file', 1, ?, ?, ?)",
    );
    // Both made in second :10 of the bucket's clock; the second one was learned of at :11.050 (a slow answer).
    row.run(account, '/first.txt', 'first.txt', '2026-01-01T00:00:10.000Z', '2026-01-01T00:00:10.950Z', '2026-01-01T00:00:10.950Z');
    row.run(account, '/second.txt', 'second.txt', '2026-01-01T00:00:10.000Z', '2026-01-01T00:00:11.050Z', '2026-01-01T00:00:11.050Z');
    row.run(account, '/later.txt', 'later.txt', '2026-01-01T00:00:11.000Z', '2026-01-01T00:00:11.060Z', '2026-01-01T00:00:11.060Z');
    const names = (after: string | null) => app.storage.entries.recent(account, after, 10, 0).rows.map((e) => e.name);
    expect(names('2026-01-01T00:00:10.000Z')).toEqual(['later.txt', 'second.txt', 'first.txt']);
    expect(names('2026-01-01T00:00:10.960Z')).toEqual(['later.txt', 'second.txt']);
    // Never later than its own second: a file of :11 stays after it.
    expect(names('2026-01-01T00:00:10.999Z')).toEqual(['later.txt']);
    await app.close();
  });
});
