// spec 1, Files and Folders: the conformance suite on the `webdav` connector against a real
// Apache mod_dav_fs (test/servers/apache.ts), with memory and local accounts as the other
// sides of cross-account copy and move.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, secretFields } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { parseMultistatus } from '../../src-main/connectors/webdav/xml';
import { createApp } from '../../src-main/app';
import { startApache } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { describeStorageConformance, textOf } from './storage-suite';

describeStorageConformance('webdav (Apache mod_dav_fs)', async () => {
  const server = await startApache();
  const dir = scratchDir('conf-webdav');
  const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const acc = await app.accounts.connect({
    service: 'webdav',
    options: { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password },
  });
  const memory = await app.accounts.connect({ service: 'memory', options: { store: `conf-webdav-${randomBytes(6).toString('hex')}` } });
  const localRoot = scratchDir('conf-webdav-local');
  const local = await app.accounts.connect({ service: 'local', options: { path: localRoot, trashDir: join(dir, 'Trash') } });
  return {
    app,
    accountId: acc.id,
    otherAccountIds: [memory.id, local.id],
    async teardown() {
      await app.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(localRoot, { recursive: true, force: true });
    },
  };
});

// WebDAV specifics the shared suite cannot see from the service.
describe('webdav connector specifics', () => {
  // spec 1, Import an account: account → username, token → password, plus connection facts
  it('maps an import body to options, and never returns the password', async () => {
    await loadConnectors();
    const def = connectorDefinition('webdav');
    const parsed = def.options.parse(def.fromImport({ account: 'alice', token: 's3cret', protocol: 'http', host: 'dav.example', port: '8080', path: '/dav/' }));
    expect(parsed).toMatchObject({ username: 'alice', password: 's3cret', protocol: 'http', host: 'dav.example', port: 8080, path: '/dav/' });
    expect(secretFields(def)).toEqual(['password']);
    const server = await startApache();
    const dir = scratchDir('webdav-import');
    const app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    try {
      const options = def.fromImport({ account: server.user, token: server.password, protocol: 'http', host: server.host, port: String(server.port) });
      const acc = await app.accounts.connect({ service: 'webdav', options });
      expect(acc.account).toBe(`${server.user}@${server.host}:${server.port}`);
      expect(acc.settings).not.toHaveProperty('password');
      expect(JSON.stringify(app.accounts.list())).not.toContain(server.password);
      // A base path below the server root: ids and listings are relative to it.
      mkdirSync(join(server.root, 'sub dir'));
      writeFileSync(join(server.root, 'sub dir', 'ä b.txt'), 'in sub');
      spawnSync('chown', ['-R', 'www-data:www-data', join(server.root, 'sub dir')]);
      const sub = await app.accounts.connect({ service: 'webdav', options: { ...(options as Record<string, unknown>), path: '/sub dir/' } });
      const page = await app.storage.list(sub.id, 'root');
      expect(page.items.map((i) => [i.name, i.path])).toEqual([['ä b.txt', '/ä b.txt']]);
      expect(await textOf((await app.storage.download(sub.id, page.items[0]!.id)).stream)).toBe('in sub');
    } finally {
      await app.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses multistatus by namespace, whatever the prefixes, keeping only 2xx propstats', async () => {
    const apacheStyle = `<?xml version="1.0" encoding="utf-8"?>
<D:multistatus xmlns:D="DAV:"><D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">
<D:href>/dav/a%20b/%C3%BC.txt</D:href><D:propstat><D:prop><lp1:resourcetype/><lp1:getcontentlength>12</lp1:getcontentlength>
<lp1:getlastmodified>Sat, 21 Nov 2026 06:21:51 GMT</lp1:getlastmodified><lp1:getetag>W/"c-660c3605533f7"</lp1:getetag></D:prop>
<D:status>HTTP/1.1 200 OK</D:status></D:propstat><D:propstat><D:prop><lp1:getcontenttype/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat></D:response>
<D:response><D:href>http://host/dav/a%20b/</D:href><D:propstat><D:prop><x:resourcetype xmlns:x="DAV:"><x:collection/></x:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>`;
    // Split inside a multi-byte character and inside tags: the parser is fed as a stream.
    const bytes = Buffer.from(apacheStyle);
    const chunks = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7));
    const [file, folder] = await parseMultistatus(Readable.from(chunks));
    expect(file).toMatchObject({ href: '/dav/a%20b/%C3%BC.txt', collection: false, length: 12, etag: 'W/"c-660c3605533f7"' });
    expect(file!.lastModified?.toISOString()).toBe('2026-11-21T06:21:51.000Z');
    expect(file!.contentType).toBeUndefined();
    expect(folder).toMatchObject({ href: 'http://host/dav/a%20b/', collection: true });
    await expect(parseMultistatus(Readable.from([Buffer.from('<D:multistatus xmlns:D="DAV:"><D:response>')]))).rejects.toMatchObject({ code: 'upstream_error' });
  });

  // RFC 4918 §14 (XML elements are matched by namespace): declarations hold only inside the
  // element that makes them, a default namespace counts, and a DAV: local name in another
  // namespace is someone else's property.
  it('resolves namespace prefixes only within the element that declares them', async () => {
    const xml = `<?xml version="1.0"?><multistatus xmlns="DAV:" xmlns:D="DAV:">
<D:response xmlns:a="DAV:"><href>/f/one.txt</href><a:propstat><a:prop><a:getetag>"1"</a:getetag></a:prop><a:status>HTTP/1.1 200 OK</a:status></a:propstat></D:response>
<D:response xmlns="urn:other" xmlns:a="urn:other"><D:href>/f/two.txt</D:href><D:propstat><D:prop><getetag>"other"</getetag>
<D:getcontentlength>2</D:getcontentlength><a:getcontentlength>9</a:getcontentlength></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
<response><href>/f/three.txt</href><propstat><prop><getetag>"3"</getetag></prop><status>HTTP/1.1 200 OK</status></propstat></response>
</multistatus>`;
    const [one, two, three, ...rest] = await parseMultistatus(Readable.from([Buffer.from(xml)]));
    expect(rest).toEqual([]);
    expect(one).toMatchObject({ href: '/f/one.txt', etag: '"1"' });
    expect(two).toMatchObject({ href: '/f/two.txt', length: 2 });
    expect(two!.etag).toBeUndefined();
    expect(three).toMatchObject({ href: '/f/three.txt', etag: '"3"' });
  });

  // spec 1, Delete a folder (recursive=false on a folder that holds anything: folder_not_empty).
  // A WebDAV DELETE of a collection removes all of it, so the temporary file of an upload still
  // going up counts too, though listings leave it out.
  it('a non-recursive delete keeps a folder that holds only an upload still going up, not one with what a killed upload left', async () => {
    const server = await startApache();
    const dir = scratchDir('webdav-remove-uploading');
    try {
      await loadConnectors();
      const def = connectorDefinition('webdav');
      const c = (await def.create(def.options.parse({ protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password }), { dataDir: dir, accountId: 1 })) as StorageConnector;
      await c.mkdir('/Incoming');
      server.place('Incoming/.tributary-0123456789ab.part', Buffer.from('half of an upload'));
      expect(await c.list('/Incoming')).toEqual([]);
      await expect(c.remove('/Incoming', { recursive: false })).rejects.toMatchObject({ code: 'folder_not_empty', message: 'The folder "Incoming" is receiving an upload.' });
      expect(readdirSync(join(server.root, 'Incoming'))).toEqual(['.tributary-0123456789ab.part']);
      await c.write('/Incoming/a.txt', Readable.from([Buffer.from('a')]), { size: 1 });
      await expect(c.remove('/Incoming', { recursive: false })).rejects.toMatchObject({ code: 'folder_not_empty', message: 'The folder "Incoming" is not empty.' });
      // What a killed upload left (untouched for over an hour) is no upload going up: the folder goes with it.
      await c.mkdir('/Left');
      server.place('Left/.tributary-ba9876543210.part', Buffer.from('left by a kill'));
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      utimesSync(join(server.root, 'Left', '.tributary-ba9876543210.part'), twoHoursAgo, twoHoursAgo);
      await c.remove('/Left', { recursive: false });
      expect(readdirSync(server.root)).not.toContain('Left');
      // Empty, it goes; recursive, it goes with everything.
      await c.mkdir('/Empty');
      await c.remove('/Empty', { recursive: false });
      await c.remove('/Incoming', { recursive: true });
      expect(readdirSync(server.root)).toEqual([]);
      await c.close();
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
