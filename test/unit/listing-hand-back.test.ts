/**
 * Reading a big folder page by page leaves its garbage in the heap once idle, so each page of a
 * folder of 10,000 entries or more asks for the memory to be handed back (src-main/memory.ts;
 * the figures are in its header). The memory account is the reference backend.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src-main/app';
import { handMemoryBackSoon } from '../../src-main/memory';
import { scratchDir } from '../servers/util';

vi.mock('../../src-main/memory', () => ({ handMemoryBackSoon: vi.fn(), withStreamingHeadroom: <T>(transfer: () => Promise<T>) => transfer() }));

let app: Awaited<ReturnType<typeof createApp>>;
let accountId: number;

/** A folder of `count` empty files, written straight into the account's connector. */
async function folderOf(name: string, count: number): Promise<string> {
  const folder = await app.storage.mkdir(accountId, 'root', name);
  const connector = await app.accounts.storage(accountId);
  for (let i = 0; i < count; i++) await connector.write(`/${name}/f-${String(i).padStart(5, '0')}.txt`, Readable.from([]), { size: 0 });
  return folder.id;
}

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('hand-back'), defaultLocalFolder: false });
  accountId = (await app.accounts.connect({ service: 'memory', options: { store: 'hand-back' } })).id;
});

afterAll(() => app?.close());

describe('a big folder read page by page (spec 1, List folder contents)', () => {
  it('asks for the memory back on every page from 10,000 entries, and not below', { timeout: 60_000 }, async () => {
    const small = await folderOf('small', 9_999);
    const big = await folderOf('big', 10_000);
    const ask = vi.mocked(handMemoryBackSoon);
    ask.mockClear();
    for (let page = 1; page <= 10; page++) await app.storage.list(accountId, small, page, 1000);
    expect(ask).not.toHaveBeenCalled();
    for (let page = 1; page <= 10; page++) {
      const p = await app.storage.list(accountId, big, page, 1000);
      expect(p.items).toHaveLength(1000);
    }
    expect(ask).toHaveBeenCalledTimes(10);
  });
});
