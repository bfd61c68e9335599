// The listing cache's write-behind runs from a timer: whatever fails there (a date that is none, a
// database error while comparing with the stored rows) is the cache's and must not end the
// process. Each case starts after a restart, so a listing is compared with rows read back.
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { Entry } from '../../src-main/connectors/types';
import { scratchDir } from '../servers/util';

/** An app over a data folder whose `/Docs` was listed (and cached) by an earlier run. */
async function restartedWithCachedFolder(): Promise<{ app: App; account: number }> {
  const dataDir = scratchDir('write-behind');
  let app = await createApp({ dataDir, defaultLocalFolder: false });
  const account = (await app.accounts.connect({ service: 'memory', options: { store: `write-behind-${Date.now()}-${Math.random()}` } })).id;
  const docs = await app.storage.mkdir(account, 'root', 'Docs');
  for (const name of ['a.txt', 'b.txt']) await app.storage.upload(account, docs.id, name, Readable.from([Buffer.from(name)]));
  await app.storage.list(account, docs.id);
  await app.close();
  app = await createApp({ dataDir, defaultLocalFolder: false });
  return { app, account };
}

/** Runs the scheduled write-behind (its own turn of the event loop) and returns what it threw out. */
async function writeBehind(): Promise<unknown[]> {
  const thrown: unknown[] = [];
  const onError = (e: unknown) => thrown.push(e);
  process.on('uncaughtException', onError);
  try {
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('uncaughtException', onError);
  }
  return thrown;
}

const file = (name: string, modified: Date, created: Date | null = null): Entry => ({
  path: `/Docs/${name}`,
  name,
  kind: 'file',
  size: 1,
  modified,
  created,
});

describe('listing cache write-behind', () => {
  let app: App | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await app?.close();
    app = undefined;
  });

  it('stores an entry whose dates are Invalid Dates with no date, over rows written before a restart', async () => {
    const r = await restartedWithCachedFolder();
    app = r.app;
    const before = app.storage.entries.listing(r.account, '/Docs')!;
    expect(before.entries.map((e) => e.name).sort()).toEqual(['a.txt', 'b.txt']);
    const good = new Date('2024-01-02T03:04:05.000Z');
    app.storage.entries.replaceListing(r.account, '/Docs', [file('a.txt', new Date('not a date'), new Date('nor this')), file('b.txt', good)]);
    expect(await writeBehind()).toEqual([]);
    const cached = app.storage.entries.listing(r.account, '/Docs')!;
    const byName = new Map(cached.entries.map((e) => [e.name, e]));
    expect(byName.get('a.txt')).toMatchObject({ modified: null, created: null, size: 1 });
    expect(byName.get('b.txt')?.modified?.toISOString()).toBe(good.toISOString());
    // The same listing again compares equal to what was stored: nothing is rewritten.
    const changes = () => (app!.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    const mid = changes();
    app.storage.entries.replaceListing(r.account, '/Docs', [file('a.txt', new Date('not a date')), file('b.txt', good)]);
    app.storage.entries.flush();
    expect(changes() - mid).toBe(0);
  });

  it('a database error while comparing with the stored rows drops the cached listing instead of escaping the timer', async () => {
    const r = await restartedWithCachedFolder();
    app = r.app;
    const db = app.db;
    const prepare = db.prepare.bind(db);
    // The comparison's read of the folder's rows fails as a failing disk makes it fail.
    const spy = vi.spyOn(db, 'prepare').mockImplementation((sql: string) => {
      if (/^SELECT path, name\b.* FROM entries WHERE account_id = \? AND parent = \?$/.test(sql)) {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }
      return prepare(sql);
    });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    app.storage.entries.replaceListing(r.account, '/Docs', [file('a.txt', new Date('2024-01-01T00:00:00Z'))]);
    expect(await writeBehind()).toEqual([]);
    expect(spy).toHaveBeenCalled();
    expect(warn.mock.calls.join('\n')).toMatch(/could not update the cached listing of \/Docs.*disk I\/O error/);
    // Its rows are older than what was listed: not served.
    expect(app.storage.entries.listing(r.account, '/Docs')).toBeUndefined();

    spy.mockRestore();
    app.storage.entries.replaceListing(r.account, '/Docs', [file('a.txt', new Date('2024-01-01T00:00:00Z'))]);
    expect(await writeBehind()).toEqual([]);
    expect(app.storage.entries.listing(r.account, '/Docs')!.entries.map((e) => e.name)).toEqual(['a.txt']);
  });
});
