import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';

describe('core smoke', () => {
  it('uploads and lists on memory', async () => {
    const app = await createApp({ dataDir: scratchDir('smoke'), defaultLocalFolder: false });
    const acc = await app.accounts.connect({ service: 'memory', options: { store: 'smoke' } });
    const f = await app.storage.upload(acc.id, 'root', 'a.txt', Readable.from([Buffer.from('hi')]));
    const f2 = await app.storage.upload(acc.id, 'root', 'a.txt', Readable.from([Buffer.from('hi')]));
    expect(f2.name).toBe('a (1).txt');
    const page = await app.storage.list(acc.id, 'root');
    expect(page.items.map((i) => i.name)).toEqual(['a (1).txt', 'a.txt']);
    expect((await app.storage.get(acc.id, f.id)).ancestors).toEqual([{ id: 'root', name: '' }]);
    await app.close();
  });
});
