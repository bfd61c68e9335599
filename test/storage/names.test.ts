// The free-name rule's reservations (spec 1, "Upload a file": a conflict renames): concurrent
// writers in this process never pick the same name, also when one's listing was taken before
// another published; and reserving a name does not serialise the writes themselves.
import { randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import memory from '../../src-main/connectors/memory';
import type { Entry, StorageConnector } from '../../src-main/connectors/types';
import { NameReservations } from '../../src-main/services/names';

function store(): StorageConnector {
  return memory.create({ store: `names-${randomBytes(6).toString('hex')}` }, { dataDir: '/nonexistent', accountId: 1 }) as StorageConnector; // memory creates synchronously
}

/** A connector whose listings answer only when released: a slow server, or a stale listing. */
function heldListings(c: StorageConnector) {
  const waiting: (() => void)[] = [];
  const connector: StorageConnector = Object.assign(Object.create(c) as StorageConnector, {
    list: async (path: string): Promise<Entry[]> => {
      const listing = await c.list(path);
      await new Promise<void>((r) => waiting.push(r));
      return listing;
    },
  });
  return { connector, releaseAll: () => waiting.splice(0).forEach((r) => r()), pending: () => waiting.length };
}

describe('name reservations (services/names.ts)', () => {
  it('hands distinct names to claims in flight together, and frees a name that was not published', async () => {
    const c = store();
    const names = new NameReservations();
    const claims = await Promise.all(Array.from({ length: 5 }, () => names.claim({ account: 1, connector: c, folder: '/', name: 'a.txt', mode: 'rename' })));
    expect(claims.map((x) => x.name)).toEqual(['a.txt', 'a (1).txt', 'a (2).txt', 'a (3).txt', 'a (4).txt']);
    claims[2].release(false);
    expect((await names.claim({ account: 1, connector: c, folder: '/', name: 'a.txt', mode: 'rename' })).name).toBe('a (2).txt');
    await expect(names.claim({ account: 1, connector: c, folder: '/', name: 'a.txt', mode: 'fail' })).rejects.toMatchObject({ code: 'naming_conflict' });
    // Another folder, another account: independent.
    expect((await names.claim({ account: 2, connector: c, folder: '/', name: 'a.txt', mode: 'fail' })).name).toBe('a.txt');
  });

  it('does not reuse a name published after a concurrent claim\'s listing was taken', async () => {
    const base = store();
    const held = heldListings(base);
    const names = new NameReservations();
    const first = await names.claim({ account: 1, connector: base, folder: '/', name: 'r.txt', mode: 'rename' });
    // The second claim lists now (the file is not there yet) and answers late.
    const second = names.claim({ account: 1, connector: held.connector, folder: '/', name: 'r.txt', mode: 'rename' });
    while (held.pending() === 0) await new Promise((r) => setImmediate(r));
    await base.write(`/${first.name}`, Readable.from([Buffer.from('first')]));
    first.release(true);
    held.releaseAll();
    expect((await second).name).toBe('r (1).txt');
  });

  it('next(): a name found taken at publish moves on to the next free one (rename) or fails', async () => {
    const c = store();
    const names = new NameReservations();
    const claim = await names.claim({ account: 1, connector: c, folder: '/', name: 'n.txt', mode: 'rename' });
    await c.write('/n.txt', Readable.from([Buffer.from('outside')]));
    expect((await claim.next()).name).toBe('n (1).txt');
    const failing = await names.claim({ account: 1, connector: c, folder: '/', name: 'm.txt', mode: 'fail' });
    await expect(failing.next()).rejects.toMatchObject({ code: 'naming_conflict' });
  });
});

describe('same-name writes stay parallel (spec 1, Upload a file)', () => {
  it('a second upload of one name completes while the first one is still sending', async () => {
    const { createApp } = await import('../../src-main/app');
    const { scratchDir } = await import('../servers/util');
    const { rmSync } = await import('node:fs');
    const dir = scratchDir('names-parallel');
    const app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    try {
      const account = (await app.accounts.connect({ service: 'memory', options: { store: `parallel-${randomBytes(6).toString('hex')}` } })).id;
      const slow = new PassThrough();
      const first = app.storage.upload(account, 'root', 'p.txt', slow);
      slow.write('first, ');
      const second = await app.storage.upload(account, 'root', 'p.txt', Readable.from([Buffer.from('second')]));
      expect(second.name).toBe('p (1).txt');
      slow.end('done');
      expect((await first).name).toBe('p.txt');
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
