/**
 * The golden scenario: every REST route of spec 1 in one version, against one account, with
 * each response normalised (ids, timestamps, tokens) so the JSON can be compared with the
 * committed golden file test/rest/golden/<backend>-<version>.json.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import type { Version } from '../../src-main/rest/http';
import { SETTING_OUTBOUND_ALLOW_PRIVATE } from '../../src-main/services/settings-keys';
import type { CallOptions, CallResult, RestServer } from './harness';

export interface Step {
  name: string;
  method: string;
  path: string;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface GoldenOptions {
  server: RestServer;
  version: Version;
  /** Imports the account under test (through the REST API) and returns its id and bearer token. */
  importAccount(): Promise<{ id: number; token: string }>;
}

/** Replaces what differs run to run with stable placeholders. */
export class Normaliser {
  private readonly ids = new Map<string, string>();

  private placeholder(v: string): string {
    if (!this.ids.has(v)) this.ids.set(v, `<id ${this.ids.size + 1}>`);
    return this.ids.get(v)!;
  }

  /** A request path: every long opaque segment (ids, link tokens) becomes a placeholder. */
  path(p: string): string {
    const [path, query] = p.split('?');
    const segs = path!.split('/').map((seg) => (/^[A-Za-z0-9_-]{16,}$/.test(seg) && /[A-Z0-9]/.test(seg) ? this.placeholder(seg) : seg));
    return segs.join('/') + (query !== undefined ? `?${query}` : '');
  }

  value(v: unknown, key?: string): unknown {
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === 'object' && key === 'raw') out[k] = '<raw upstream data>';
        // Disk usage of the machine (local) or server: its shape is golden, not its value.
        else if (key === 'quota' && typeof x === 'number') out[k] = '<bytes>';
        // The owner of a local file is whoever runs the tests.
        else if (k === 'name' && (v as Record<string, unknown>).role === 'owner') out[k] = '<owner>';
        else out[k] = this.value(x, k);
      }
      if (key === 'raw' && !('object' in out) && !('id' in out)) return '<raw upstream data>';
      return out;
    }
    if (typeof v !== 'string') return v;
    if (key === 'id' && /^[0-9a-f-]{36}$/.test(v)) return '<request id>';
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v)) return '<timestamp>';
    if (/^trb[tk]?_[A-Za-z0-9_-]+$/.test(v)) return '<secret>';
    if (/^https?:\/\/[^/]+\/l\/[A-Za-z0-9_-]+$/.test(v)) return '<link url>';
    if (/^[A-Za-z0-9_-]{40,}$/.test(v) || (key === 'id' && /^[A-Za-z0-9_-]{16}$/.test(v))) return this.placeholder(v);
    return v;
  }
}

export interface Recorded {
  name: string;
  request: string;
  status: number;
  contentType: string | undefined;
  body: unknown;
}

/** A tiny origin for upload-from-URL: /fixed answers with Content-Length, /chunked without. */
async function startOrigin(): Promise<{ url: string; close(): Promise<void>; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url === '/fixed') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '13' });
      res.end('from-the-web\n');
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('chunk');
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * Runs the scenario; every step checks its documented status code (the test fails at the first
 * step that does not answer it) and records the normalised response.
 */
export async function runGolden(opts: GoldenOptions, check: (step: Step, res: CallResult) => void): Promise<Recorded[]> {
  const { server, version: v } = opts;
  const n = new Normaliser();
  const out: Recorded[] = [];
  const origin = await startOrigin();
  // The origin is on loopback, which upload from a URL reaches only when allowed.
  server.app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, true);
  const { id: acc, token } = await opts.importAccount();
  const s = v === 'v0' ? '' : 'storage/';
  const P = `/${v}/accounts/${acc}/${s}`;
  /** `status`: the documented status, or those a step may answer depending on the backend. */
  const send = async (name: string, method: string, path: string, status: number | number[], options: CallOptions & { timeOrdered?: boolean } = {}): Promise<CallResult> => {
    const res = await server.call(method, path, options);
    check({ name, method, path, status: Array.isArray(status) ? (status.includes(res.status) ? res.status : status[0]!) : status }, res);
    const isJson = res.headers['content-type'] === 'application/json';
    if (options.timeOrdered && isJson) {
      // Newest first is checked here; the golden copy is sorted by path, because which files
      // share a second (WebDAV times have 1 s precision) changes from run to run.
      const list = (res.json.files ?? res.json.objects) as { modified: string; path: string }[];
      for (let i = 1; i < list.length; i++) if (list[i - 1]!.modified < list[i]!.modified) throw new Error(`${name}: not newest first`);
      list.sort((a, b) => a.path.localeCompare(b.path));
    }
    out.push({
      name,
      request: `${method} ${n.path(path.replace(/\/accounts\/\d+(,\d+)?/, '/accounts/{account}'))}`,
      status: res.status,
      contentType: res.headers['content-type'] as string | undefined,
      body: isJson ? n.value(res.json) : res.status === 204 ? null : `<${res.buffer.length} bytes>`,
    });
    return res;
  };
  const upload = (name: string, parent: string, fileName: string, data: string | Buffer, status: number, query = '') =>
    send(name, 'POST', `${P}files/${query}`, status, {
      raw: data,
      headers: { 'x-service-metadata': JSON.stringify({ parent_id: parent, name: fileName }), 'content-type': 'application/octet-stream' },
    });

  try {
    // spec 1, Accounts
    await send('list accounts', 'GET', `/${v}/accounts?page_size=5`, 200);
    await send('retrieve account (retrieve_full)', 'GET', `/${v}/accounts/${acc}/`, 200);
    await send('retrieve account with bearer token and me', 'GET', `/${v}/accounts/me`, 200, { auth: `Bearer ${token}` });
    await send('retrieve_tokens is off by default', 'GET', `/${v}/accounts/${acc}?retrieve_tokens=True`, 403);
    await send('update account name', 'PATCH', `/${v}/accounts/${acc}`, 200, { body: { account: 'Renamed account', unknown_key: 1 } });

    // spec 1, Folders
    const docs = await send('create folder', 'POST', `${P}folders/`, 201, { body: { parent_id: 'root', name: 'docs' } });
    const docsId = docs.json.id as string;
    await send('create existing folder returns it', 'POST', `${P}folders`, 201, { body: { parent_id: 'root', name: 'docs' } });
    await send('create folder conflict_if_exists', 'POST', `${P}folders?conflict_if_exists=1`, 409, { body: { parent_id: 'root', name: 'docs' } });
    await send('create folder in missing parent', 'POST', `${P}folders`, 404, { body: { parent_id: 'A'.repeat(60), name: 'x' } });

    // spec 1, Files: Upload a file
    const hello = await upload('upload binary', docsId, 'hello.txt', 'hello world\n', 201);
    const fileId = hello.json.id as string;
    await upload('upload conflict renames', docsId, 'hello.txt', 'second\n', 201);
    await upload('upload overwrite', docsId, 'hello.txt', 'hello again\n', 201, '?overwrite=true');
    await send('upload from URL with Content-Length', 'POST', `${P}files`, 201, { body: { parent_id: 'root', name: 'web.txt', url: `${origin.url}/fixed` } });
    await send('upload from URL without Content-Length', 'POST', `${P}files`, 400, { body: { parent_id: 'root', name: 'web2.txt', url: `${origin.url}/chunked` } });
    await send('upload without metadata or url', 'POST', `${P}files`, 400, { raw: 'bytes', headers: { 'content-type': 'application/octet-stream' } });

    // Metadata, download, replace, rename, copy
    const meta = await send('retrieve file metadata', 'GET', `${P}files/${fileId}`, 200);
    await send('download', 'GET', `${P}files/${fileId}/contents?content_type=application/pdf`, 200);
    await send('replace content', 'PUT', `${P}files/${fileId}`, 200, { raw: 'replaced!\n', headers: { 'content-type': 'text/plain' } });
    await send('rename file', 'PATCH', `${P}files/${fileId}`, 200, { body: { name: 'renamed.txt' } });
    const renamedId = (await server.call('GET', `${P}folders/${docsId}/contents`)).json.objects.find((o: { name: string }) => o.name === 'renamed.txt').id as string;
    await send('move file to root', 'PATCH', `${P}files/${renamedId}`, 200, { body: { parent_id: 'root' } });
    const moved = (await server.call('POST', `${P}convert_id`, { body: { raw_id: '/renamed.txt', type: 'file' } })).json.id as string;
    await send('copy file', 'POST', `${P}files/${moved}/copy`, 201, { body: { parent_id: docsId, name: 'copy.txt' } });
    void meta;

    // Thumbnails
    const png = await sharp({ create: { width: 64, height: 32, channels: 3, background: { r: 200, g: 10, b: 10 } } }).png().toBuffer();
    const image = await upload('upload image', 'root', 'red.png', png, 201);
    const thumb = await send('thumbnail jpeg 16px', 'GET', `${P}files/${image.json.id}/thumbnail?size=16&image_format=jpeg`, 200);
    const dims = await sharp(thumb.buffer).metadata();
    out.push({ name: 'thumbnail dimensions', request: '-', status: 0, contentType: dims.format, body: { width: dims.width, height: dims.height } });
    await send('thumbnail size out of range', 'GET', `${P}files/${image.json.id}/thumbnail?size=2000`, 400);
    await send('thumbnail of a text file', 'GET', `${P}files/${moved}/thumbnail`, 400);

    // Folder reads and paging
    await send('retrieve root folder', 'GET', `${P}folders/root`, 200);
    await send('retrieve folder', 'GET', `${P}folders/${docsId}/`, 200);
    await send('list root page 1', 'GET', `${P}folders/root/contents/?page_size=2`, 200);
    await send('list root page 2', 'GET', `${P}folders/root/contents?page_size=2&page=2`, 200);
    await send('list page_size 0', 'GET', `${P}folders/root/contents?page_size=0`, 400);
    await send('list page 0', 'GET', `${P}folders/root/contents?page=0`, 400);

    // convert_id, recent, search
    await send('convert_id with metadata', 'POST', `${P}convert_id?retrieve_metadata=true`, 200, { body: { raw_id: '/docs', type: 'folder' } });
    await send('convert_id wrong type', 'POST', `${P}convert_id?retrieve_metadata=true`, 404, { body: { raw_id: '/docs', type: 'file' } });
    // The whole list: on second-precision backends a page boundary could split equal times.
    await send('recent', 'GET', `${P}recent`, 200, { timeOrdered: true });
    await send('recent after the future', 'GET', `${P}recent?after=2999-01-01T00:00:00Z`, 200);
    await send('search', 'GET', `${P}search?q=renamed`, 200);
    await send('search without q', 'GET', `${P}search`, 400);

    // Links
    const link = await send('create link', 'POST', `${P}links`, 201, { body: { file_id: moved, direct: true, password: 'pw' } });
    const linkUrl = new URL(link.json.url as string);
    await send('public link without password', 'GET', linkUrl.pathname, 403, { auth: null });
    await send('public link with password', 'GET', `${linkUrl.pathname}?password=pw`, 200, { auth: null });
    await send('list links', 'GET', `${P}links/`, 200);
    await send('retrieve link', 'GET', `${P}links/${link.json.id}`, 200);
    await send('deactivate link', 'PATCH', `${P}links/${link.json.id}`, 200, { body: { active: 'False', password: null } });
    await send('public link inactive', 'GET', linkUrl.pathname, 403, { auth: null });
    await send('expire link', 'PATCH', `${P}links/${link.json.id}`, 200, { body: { active: true, expiration: '2001-01-01T00:00:00Z' } });
    await send('public link expired', 'GET', linkUrl.pathname, 403, { auth: null });
    await send('delete link', 'DELETE', `${P}links/${link.json.id}`, 204);
    await send('public link deleted', 'GET', linkUrl.pathname, 404, { auth: null });

    // spec 1, Multipart upload (files larger than 5 MB) and Create an upload URL
    const big = Buffer.alloc(5 * 1024 * 1024 + 1000, 7);
    const session = await send('multipart initialize', 'POST', `${P}multipart?overwrite=false`, 201, { body: { name: 'big.bin', parent_id: docsId, size: big.length } });
    const partSize = session.json.part_size as number;
    for (let n = 1; (n - 1) * partSize < big.length; n++) {
      await send(`multipart part ${n}`, 'PUT', `${P}multipart/${session.json.id}?part_number=${n}`, 200, {
        raw: big.subarray((n - 1) * partSize, n * partSize),
        headers: { 'content-type': 'application/octet-stream' },
      });
    }
    await send('multipart info', 'GET', `${P}multipart/${session.json.id}`, 200);
    await send('multipart complete', 'POST', `${P}multipart/${session.json.id}/complete`, 201);
    const doomed = await send('multipart initialize (to abort)', 'POST', `${P}multipart`, 201, { body: { name: 'gone.bin', parent_id: 'root', size: big.length } });
    await send('multipart abort', 'DELETE', `${P}multipart/${doomed.json.id}`, 204);
    await send('multipart aborted is gone', 'GET', `${P}multipart/${doomed.json.id}`, 404);
    await send('multipart below 5 MB', 'POST', `${P}multipart`, 400, { body: { name: 'small.bin', parent_id: 'root', size: 10 } });
    await send('upload_url on a non-object store', 'POST', `${P}files/upload_url?expires_in=60`, 501, { body: { parent_id: 'root', name: 'u.bin' } });
    await send('upload_url expires_in out of range', 'POST', `${P}files/upload_url?expires_in=0`, 400, { body: { parent_id: 'root', name: 'u.bin' } });

    // Legacy permissions, reserved folders, errors
    // spec 1, Legacy permission endpoints: 200 where the backend has permissions (local POSIX
    // modes: `others`), 501 where it has none.
    await send('permissions PUT', 'PUT', `${P}files/${moved}/permissions`, [200, 501], { body: { others: 'reader' } });
    await send('permissions PATCH list', 'PATCH', `${P}files/${moved}/permissions`, [200, 501], { body: [{ id: 'group', role: 'reader' }] });
    await send('delete root', 'DELETE', `${P}folders/root`, 403);
    await send('rename root', 'PATCH', `${P}folders/root`, 403, { body: { name: 'x' } });
    await send('delete non-empty folder', 'DELETE', `${P}folders/${docsId}`, 409);
    await send('missing file', 'GET', `${P}files/${'B'.repeat(50)}`, 404);
    await send('file id too long', 'GET', `${P}files/${'C'.repeat(8193)}`, 400);
    await send('folder id used as file', 'GET', `${P}files/${docsId}`, 404);
    await send('file id used as folder', 'GET', `${P}folders/${moved}/contents`, 404);
    await send('unknown route', 'GET', `/${v}/nothing/here`, 404);
    await send('method not allowed', 'PUT', `/${v}/accounts`, 405);

    // Folder rename, copy, delete
    await send('rename folder', 'PATCH', `${P}folders/${docsId}`, 200, { body: { name: 'docs2' } });
    const docs2 = (await server.call('POST', `${P}convert_id`, { body: { raw_id: '/docs2', type: 'folder' } })).json.id as string;
    await send('copy folder', 'POST', `${P}folders/${docs2}/copy`, 201, { body: { parent_id: 'root', name: 'docs3' } });
    await send('delete folder recursive', 'DELETE', `${P}folders/${docs2}?recursive=true`, 204);
    await send('delete file permanent', 'DELETE', `${P}files/${moved}?permanent=1`, 204);

    if (v === 'v0') {
      // spec 1, Account keys (deprecated)
      const key = await send('create account key', 'POST', `/v0/accounts/${acc}/keys/`, 201);
      await send('list account keys', 'GET', `/v0/accounts/${acc}/keys/?page_size=10`, 200);
      await send('retrieve account key', 'GET', `/v0/accounts/${acc}/keys/${key.json.id}/`, 200);
      await send('account key reads files', 'GET', `/v0/accounts/${acc}/folders/root`, 200, { auth: `AccountKey ${key.json.key}` });
      await send('token_from_key', 'POST', `/v0/accounts/${acc}/token_from_key`, 200, { auth: `accountkey ${key.json.key}` });
      await send('delete account key', 'DELETE', `/v0/accounts/${acc}/keys/${key.json.id}`, 204);
      await send('deleted account key refused', 'GET', `/v0/accounts/${acc}/folders/root`, 401, { auth: `AccountKey ${key.json.key}` });
    } else {
      await send('account keys gone after v0', 'GET', `/${v}/accounts/${acc}/keys`, 404);
    }

    await send('deactivate account', 'PATCH', `/${v}/accounts/${acc}`, 200, { body: v === 'v2' ? { enabled: false } : { active: 0 } });
    await send('inactive account refuses storage', 'GET', `${P}folders/root`, 403);
    await send('delete account', 'DELETE', `/${v}/accounts/${acc}`, 204);
    await send('deleted account', 'GET', `/${v}/accounts/${acc}`, 404);
  } finally {
    await origin.close();
  }
  return out;
}
