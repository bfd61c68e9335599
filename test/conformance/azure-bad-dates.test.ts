// An `azure` account's endpoint is the user's to set, so any Azure-compatible server or proxy can
// answer. This one is a real HTTP server speaking the Blob service's list and properties answers,
// whose dates turn into no dates: real Azure and Azurite never send these (so Azurite cannot
// stand in), but the SDK reads them as Invalid Dates without a word. Tributary must list such a
// folder with the dates unknown, and its listing cache must take it, also after a restart.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';

const GOOD = 'Mon, 01 Jan 2024 00:00:00 GMT';

/** A container `cont` holding `a.txt` and the folder `dir/` (its marker blob). */
function fakeAzure(dates: { lastModified: string; created: string }): Server {
  return createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    const common = { 'x-ms-version': '2025-01-05', 'x-ms-request-id': '1' };
    if (url.searchParams.get('comp') === 'list') {
      const blob = (name: string, size: number) =>
        `<Blob><Name>${name}</Name><Properties><Creation-Time>${dates.created}</Creation-Time><Last-Modified>${dates.lastModified}</Last-Modified>` +
        `<Etag>0x1</Etag><Content-Length>${size}</Content-Length><Content-Type>text/plain</Content-Type><BlobType>BlockBlob</BlobType></Properties></Blob>`;
      const prefix = url.searchParams.get('prefix') ?? '';
      const blobs = prefix === 'dir/' ? blob('dir/', 0) : blob('a.txt', 3);
      const prefixes = prefix === '' ? '<BlobPrefix><Name>dir/</Name></BlobPrefix>' : '';
      res.writeHead(200, { ...common, 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://127.0.0.1/devacct/" ContainerName="cont">` +
          `<Prefix>${prefix}</Prefix><MaxResults>1000</MaxResults><Delimiter>/</Delimiter><Blobs>${blobs}${prefixes}</Blobs><NextMarker /></EnumerationResults>`,
      );
      return;
    }
    const name = decodeURIComponent(url.pathname.replace(/^\/devacct\/cont\/?/, ''));
    if (name === '' || name === 'a.txt' || name === 'dir/') {
      // The container's own properties, or a blob's.
      res.writeHead(200, {
        ...common,
        'last-modified': name === '' ? GOOD : dates.lastModified,
        ...(name === '' ? {} : { 'x-ms-creation-time': dates.created, 'x-ms-blob-type': 'BlockBlob', 'content-type': 'text/plain' }),
        etag: '"0x1"',
        'content-length': name === 'a.txt' ? '3' : '0',
      });
      res.end();
      return;
    }
    res.writeHead(404, { ...common, 'x-ms-error-code': 'BlobNotFound', 'content-length': '0' });
    res.end();
  });
}

describe('azure: a server whose dates are no dates', () => {
  const dates = { lastModified: GOOD, created: GOOD };
  const server = fakeAzure(dates);
  let endpoint = '';
  const thrown: unknown[] = [];
  const onError = (e: unknown) => thrown.push(e);
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/devacct`;
    process.on('uncaughtException', onError);
  });
  afterAll(async () => {
    process.off('uncaughtException', onError);
    await new Promise((r) => server.close(r));
  });

  it('lists and stats with the dates unknown, and caches that, also right after a restart', async () => {
    const dataDir = scratchDir('azure-dates');
    let app = await createApp({ dataDir, defaultLocalFolder: false });
    const options = { accountName: 'devacct', accountKey: Buffer.from('k'.repeat(32)).toString('base64'), endpoint, container: 'cont' };
    const account = (await app.accounts.connect({ service: 'azure', options })).id;
    const good = await app.storage.list(account, 'root');
    expect(good.items.find((i) => i.name === 'a.txt')?.modified).toBe('2024-01-01T00:00:00.000Z');

    dates.lastModified = 'not a date';
    dates.created = 'nor this';
    const names = (items: { name: string; kind: string; modified: string | null; created: string | null }[]) =>
      items.map(({ name, kind, modified, created }) => ({ name, kind, modified, created }));
    const expected = [
      { name: 'dir', kind: 'folder', modified: null, created: null },
      { name: 'a.txt', kind: 'file', modified: null, created: null },
    ];
    expect(names((await app.storage.list(account, 'root')).items)).toEqual(expected);
    await app.close();

    // A restart: the listing is now compared with rows this process did not write.
    app = await createApp({ dataDir, defaultLocalFolder: false });
    const listed = await app.storage.list(account, 'root');
    expect(names(listed.items)).toEqual(expected);
    await new Promise((r) => setImmediate(r)); // the cache's write-behind
    expect(names(app.storage.listCached(account, 'root')!.items)).toEqual(expected);
    const file = listed.items.find((i) => i.name === 'a.txt')!;
    const dir = listed.items.find((i) => i.name === 'dir')!;
    expect(await app.storage.get(account, file.id)).toMatchObject({ size: 3, modified: null, created: null });
    expect(await app.storage.get(account, dir.id)).toMatchObject({ kind: 'folder', modified: null });
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
    expect(thrown).toEqual([]);
  });
});
