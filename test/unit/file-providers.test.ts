// Files outside any folder tree served as storage files: the `ephemeral` area (spec 1 Limits:
// kept at least 60 minutes; spec 2 Send: attachments uploaded with parent_id `ephemeral`).
// Mail attachments use the same hook and are proven in test/conformance/mail-suite.ts.
import { Readable } from 'node:stream';
import { utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { EPHEMERAL_TTL_MS } from '../../src-main/services/ephemeral';
import { scratchDir } from '../servers/util';

describe('ephemeral files', () => {
  it('upload to `ephemeral`, read metadata, download byte-identical, refuse folder operations', async () => {
    const dataDir = scratchDir('eph');
    const app = await createApp({ dataDir, defaultLocalFolder: false });
    const a = (await app.accounts.connect({ service: 'memory', options: { store: `eph-${Date.now()}` } })).id;
    const b = (await app.accounts.connect({ service: 'memory', options: { store: `eph2-${Date.now()}` } })).id;
    const bytes = Buffer.from('attachment bytes \u00e9');
    const file = await app.storage.upload(a, 'ephemeral', 'report.pdf', Readable.from([bytes]));
    expect(file).toMatchObject({ name: 'report.pdf', size: bytes.length, mimeType: 'application/pdf', parent: { id: 'ephemeral' } });
    expect(await app.storage.get(a, file.id)).toEqual(file);
    const { stream } = await app.storage.download(a, file.id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks)).toEqual(bytes);
    // Another account cannot see it; folder operations are refused, not crashed.
    await expect(app.storage.get(b, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(app.storage.move(a, file.id, { name: 'x.pdf' })).rejects.toMatchObject({ code: 'forbidden' });
    await expect(app.storage.list(a, 'ephemeral')).rejects.toMatchObject({ code: 'not_found' });

    // Swept only once older than the retention (which is well over the spec's 60 minutes).
    expect(EPHEMERAL_TTL_MS).toBeGreaterThanOrEqual(60 * 60_000);
    expect(await app.ephemeral.sweep()).toBe(0);
    const key = (await app.storage.get(a, file.id)).rawId.split(':')[1];
    const old = new Date(Date.now() - EPHEMERAL_TTL_MS - 60_000);
    utimesSync(join(dataDir, 'ephemeral', String(a), key), old, old);
    expect(await app.ephemeral.sweep()).toBe(1);
    await expect(app.storage.get(a, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await app.close();
  });
});
