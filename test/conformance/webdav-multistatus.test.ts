/**
 * Real Apache mod_dav answers (RFC 4918 §9.1 PROPFIND, §13 Multi-Status) read by the Multi-Status
 * scanner and by saxes: the same responses whatever the chunking, and a listing through the
 * connector that names every file as it is on the server's disk (spec 1, "List a folder").
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { PROPFIND_BODY } from '../../src-main/connectors/webdav';
import type { Entry } from '../../src-main/connectors/types';
import { parseMultistatus, parseMultistatusSaxes } from '../../src-main/connectors/webdav/xml';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';

// Names that need escaping in XML or in a URL, and characters of 2, 3 and 4 UTF-8 bytes.
const NAMES = ['plain.txt', 'a & b.txt', '<tag>.txt', 'quote " and \' .txt', '100% #1 ?.txt', 'é ü ß.txt', '日本語.txt', '😀 emoji.txt', ' lead and trail .txt', 'semi;colon=.txt', ']]>.txt'];
const MANY = 3000;

describe('WebDAV Multi-Status from Apache: scanner and saxes read the same (RFC 4918 §13)', () => {
  let server: ApacheServer;
  let raw: Buffer;
  beforeAll(async () => {
    server = await startApache();
    const dir = join(server.root, 'mixed');
    mkdirSync(join(dir, 'sub folder & more'), { recursive: true });
    for (const [i, name] of NAMES.entries()) writeFileSync(join(dir, name), 'x'.repeat(i));
    for (let i = 0; i < MANY; i++) writeFileSync(join(dir, `file-${i}-é.bin`), '');
    spawnSync('chown', ['-R', 'www-data:www-data', dir]);
    const res = await fetch(`${server.url}mixed/`, {
      method: 'PROPFIND',
      headers: { depth: '1', 'content-type': 'application/xml; charset=utf-8', authorization: `Basic ${Buffer.from(`${server.user}:${server.password}`).toString('base64')}` },
      body: PROPFIND_BODY,
    });
    expect(res.status).toBe(207);
    raw = Buffer.from(await res.arrayBuffer());
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** An app with the Apache share connected as an account; closed and removed after `fn`. */
  async function withAccount(fn: (app: App, acc: { id: number }) => Promise<void>): Promise<void> {
    const dir = scratchDir('dav-multistatus');
    const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
    try {
      const acc = await app.accounts.connect({
        service: 'webdav',
        options: { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password },
      });
      await fn(app, acc);
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('gives the same responses in 64 KiB chunks, in chunks of 1 to 7 bytes, and in one piece', async () => {
    const reference = await parseMultistatusSaxes([raw]);
    expect(reference).toHaveLength(NAMES.length + MANY + 2);
    const cut = (sizes: () => number) => {
      const out: Buffer[] = [];
      for (let i = 0; i < raw.length; ) {
        const n = sizes();
        out.push(raw.subarray(i, i + n));
        i += n;
      }
      return out;
    };
    let k = 0;
    for (const body of [[raw], cut(() => 65536), cut(() => 1 + (k++ % 7)), cut(() => 4093)]) {
      expect(await parseMultistatus(body)).toEqual(reference);
      expect(await parseMultistatusSaxes(body)).toEqual(reference);
      // Handed over one by one: the same responses, in the same order.
      const each: unknown[] = [];
      expect(await parseMultistatus(body, (r) => each.push(r))).toEqual([]);
      expect(each).toEqual(reference);
    }
    const file = reference.find((r) => r.href.endsWith('/plain.txt'))!;
    expect(file).toMatchObject({ collection: false, length: 0, contentType: 'text/plain' });
    expect(file.lastModified).toBeInstanceOf(Date);
    expect(file.etag).toMatch(/"/);
    expect(reference.find((r) => r.href.endsWith('/mixed/'))).toMatchObject({ collection: true });
  });

  it('hands each response over while the rest of the answer has not arrived', async () => {
    const half = raw.length >> 1;
    for (const parse of [parseMultistatus, parseMultistatusSaxes]) {
      let before = 0;
      let seen = 0;
      async function* body() {
        yield raw.subarray(0, half);
        before = seen;
        yield raw.subarray(half);
      }
      await parse(body(), () => seen++);
      expect(before).toBeGreaterThan(MANY / 3);
      expect(seen).toBe(NAMES.length + MANY + 2);
    }
  });

  it('lists every name as it is on the server, through the connector', async () => {
    await withAccount(async (app, acc) => {
      const folder = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'mixed')!;
      const page = await app.storage.list(acc.id, folder.id, 1, 5000);
      const names = page.items.map((i) => i.name);
      for (const name of [...NAMES, 'sub folder & more', 'file-0-é.bin', `file-${MANY - 1}-é.bin`]) expect(names).toContain(name);
      expect(page.total).toBe(NAMES.length + MANY + 1);
      expect(page.items.find((i) => i.name === '😀 emoji.txt')).toMatchObject({ size: 7 });
    });
  });

  it('hands each entry over as it is made, in the order of the listing it returns (spec 1, "List a folder")', async () => {
    await withAccount(async (app, acc) => {
      const connector = await app.accounts.storage(acc.id);
      const handed: Entry[] = [];
      const listed = await connector.list('/mixed', (e) => handed.push(e));
      expect(listed).toHaveLength(NAMES.length + MANY + 1);
      expect(handed).toHaveLength(listed.length);
      expect(handed.every((e, i) => e === listed[i])).toBe(true);
    });
  });

  it('a folder listed again shows what changed, folders first then by name (spec 1, "List a folder")', async () => {
    const folderOnDisk = join(server.root, 'changing');
    mkdirSync(join(folderOnDisk, 'b folder'), { recursive: true });
    for (let i = 0; i < 3000; i++) writeFileSync(join(folderOnDisk, `f${i}.txt`), '');
    spawnSync('chown', ['-R', 'www-data:www-data', folderOnDisk]);
    await withAccount(async (app, acc) => {
      const folder = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'changing')!;
      const names = async () => (await app.storage.list(acc.id, folder.id, 1, 5000)).items.map((i) => `${i.name}:${i.size ?? '-'}`);
      const first = await names();
      expect(first.slice(0, 4)).toEqual(['b folder:-', 'f0.txt:0', 'f1.txt:0', 'f2.txt:0']);
      expect(first.at(-1)).toBe('f2999.txt:0');
      expect(await names()).toEqual(first);
      // One file grown, one gone, one new: the next listing differs from the last part-way through.
      writeFileSync(join(folderOnDisk, 'f10.txt'), 'abc');
      rmSync(join(folderOnDisk, 'f2999.txt'));
      writeFileSync(join(folderOnDisk, 'A new.txt'), 'z');
      spawnSync('chown', ['-R', 'www-data:www-data', folderOnDisk]);
      const second = await names();
      expect(second).toEqual(['b folder:-', 'A new.txt:1', ...first.slice(1, -1).map((n) => (n === 'f10.txt:0' ? 'f10.txt:3' : n))]);
    }).finally(() => rmSync(folderOnDisk, { recursive: true, force: true }));
  });
});
