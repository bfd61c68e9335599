/**
 * Every REST route of spec 1 (accounts, account keys, files, folders, convert_id, recent,
 * search, links, legacy permissions), plus spec 2 email (email.ts) and spec 3 activity
 * (activity.ts), declared once and served in v0, v1 and v2: handlers call
 * the services and hand service objects to the version mappers in shapes/storage.ts.
 */
import { finished, pipeline, Readable, Transform } from 'node:stream';
import type { Response } from 'undici';
import type { Account, Resource } from '../contract';
import { connectorDefinition, credentialsOf } from '../connectors/registry';
import type { Permission, PermissionChanges } from '../connectors/types';
import { ServiceError, toServiceError } from '../errors';
import { isWellFormedId, MAX_ID_LENGTH } from '../ids';
import type { LinkChanges } from '../services/links';
import { accountOf, accountsOf, requireAccount, requireApiKey } from './auth';
import { errorBody } from '../server/errors';
import { bodyStream, bool, DECIMAL_ID, int, jsonBody, jsonBytes, JsonText, jsonValue, serviceHeader, str, timestamp, type Ctx, type Route, type Version } from './http';
import * as shape from './shapes/storage';
import { SETTING_RETRIEVE_TOKENS } from '../services/settings-keys';
import { guardedAgent, guardedGet, outboundPolicy, undici } from '../services/outbound';
import { activityRoutes, eventBusRoutes, webhookRoutes } from './activity';
import { emailRoutes } from './email';

const ALL: Version[] = ['v0', 'v1', 'v2'];
const V0: Version[] = ['v0'];

type Json = Record<string, unknown>;

// ---- helpers -------------------------------------------------------------------------------------

function paging(ctx: Ctx, defaultSize: number, maxSize: number): { page: number; pageSize: number; offset: number } {
  const page = int(ctx.query.page, 'page', 1, 1, 1_000_000_000);
  const pageSize = int(ctx.query.page_size, 'page_size', defaultSize, 1, maxSize);
  return { page, pageSize, offset: (page - 1) * pageSize };
}

/**
 * A page past the end of a list is not_found (404), as the original service's paging answered
 * ("Invalid page"), so a client that walks `page` until it fails stops there. Page 1 of an empty
 * list is an empty page.
 */
function requirePage(page: number, offset: number, total: number): void {
  if (page > 1 && offset >= total) throw new ServiceError('not_found', `Invalid page: page ${page} is past the last page.`);
}

function resourceId(value: string | undefined, name = 'id'): string {
  if (!value) throw new ServiceError('invalid_parameters', `\`${name}\` is required.`);
  if (value.length > MAX_ID_LENGTH) throw new ServiceError('invalid_parameters', `\`${name}\` is longer than ${MAX_ID_LENGTH} characters.`);
  return value;
}

/**
 * A resource id given in a request body (`parent_id`): one that cannot be an id at all is a bad
 * parameter (400); a well-formed id that names nothing in the account is not_found (404), as in
 * a path.
 */
function bodyResourceId(body: Record<string, unknown>, name: string): string {
  const id = resourceId(str(body, name, true), name);
  if (!isWellFormedId(id)) throw new ServiceError('invalid_parameters', `\`${name}\` is not a file or folder id.`);
  return id;
}

function accountBodyId(ctx: Ctx, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new ServiceError('invalid_parameters', '`account` must be an account id.');
  requireAccount(ctx, n);
  return n;
}

async function getKind(ctx: Ctx, account: number, id: string, kind: 'file' | 'folder'): Promise<Resource> {
  const r = await ctx.app.storage.get(account, resourceId(id));
  if (r.kind !== kind) throw new ServiceError('not_found', `No ${kind} has this id in this account.`);
  return r;
}

/**
 * The JSON of a listing page's objects, per version, made once per page of resources: the
 * storage service hands out the same page while the folder's listing is unchanged.
 */
const pageJson = new WeakMap<readonly Resource[], Partial<Record<Version, JsonText>>>();

function listingObjects(v: Version, items: readonly Resource[]): { json: JsonText; count: number } {
  let byVersion = pageJson.get(items);
  if (!byVersion) pageJson.set(items, (byVersion = {}));
  const json = (byVersion[v] ??= new JsonText(jsonBytes(items.map((r) => shape.resource(v, r)))));
  return { json, count: items.length };
}

const ok = (body: unknown) => ({ status: 200, body });
const created = (body: unknown) => ({ status: 201, body });
const noContent = () => ({ status: 204 });

function linkUrl(ctx: Ctx, token: string): string {
  return `${ctx.req.protocol}://${ctx.req.host}/l/${token}`;
}

/**
 * Credential attributes for `retrieve_tokens` (spec 1, Account): what was imported or last
 * updated — `token` and `token_secret` as the connector holds them, and what it holds no option
 * for (a `refresh_token`, a `token_secret` the service takes none of) as stored beside them.
 */
function credentials(ctx: Ctx, a: Account): Json {
  const held = credentialsOf(connectorDefinition(a.service), ctx.app.accounts.options(a.id));
  const extra = ctx.app.accounts.importCredentials(a.id);
  return {
    token: held.token ?? '',
    token_secret: held.token_secret ?? extra.token_secret ?? '',
    refresh_token: extra.refresh_token ?? '',
    account_id: a.userId ?? String(a.id),
    token_expiry: a.tokenExpiry,
    refresh_token_expiry: a.refreshTokenExpiry,
  };
}

/**
 * The options an update's credential fields change: the connector's import mapping applied to
 * the body, minus what the same mapping yields for the display name alone (so renaming an
 * account or sending unknown keys changes no connection setting).
 */
function changedOptions(service: string, body: Json): Json | undefined {
  const withBody = (fromImport(service, body) ?? {}) as Json;
  const base = (fromImport(service, { account: body.account }) ?? {}) as Json;
  const changed: Json = {};
  for (const [k, v] of Object.entries(withBody)) if (v !== undefined && serialized(k, v) !== serialized(k, base[k])) changed[k] = v;
  return Object.keys(changed).length ? changed : undefined;
}

/** A body value as JSON, for comparing; one nested deeper than the serializer's stack goes is a bad parameter, not a 500. */
function serialized(key: string, v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch {
    throw new ServiceError('invalid_parameters', `\`${key}\` is nested too deeply.`);
  }
}

/** A connector's import mapping; a mapping that trips over an odd body is a bad parameter, not a 500. */
function fromImport(service: string, body: Json): unknown {
  const def = connectorDefinition(service);
  try {
    return def.fromImport(body);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw new ServiceError('invalid_parameters', `Invalid ${def.name} import parameters: ${(e as Error).message}`);
  }
}

/**
 * Keeps what an import or update gave as `refresh_token`, and as `token_secret` where the
 * connector holds no option for it, so that `retrieve_tokens` reads back what was set.
 */
function keepImportCredentials(ctx: Ctx, a: Account, given: { refresh_token?: string; token_secret?: string }): void {
  const kept: { refresh_token?: string; token_secret?: string } = {};
  if (given.refresh_token !== undefined) kept.refresh_token = given.refresh_token;
  const held = credentialsOf(connectorDefinition(a.service), ctx.app.accounts.options(a.id));
  if (given.token_secret !== undefined && held.token_secret === undefined) kept.token_secret = given.token_secret;
  if (Object.keys(kept).length) ctx.app.accounts.setImportCredentials(a.id, kept);
}

/** `refresh_token` and `token_secret` of an import or update body (spec 1), checked before anything changes. */
function givenCredentials(body: Json): { refresh_token?: string; token_secret?: string } {
  return { refresh_token: str(body, 'refresh_token', false, 65_536), token_secret: str(body, 'token_secret', false, 65_536) };
}

function importExpiries(a: Account): Json {
  return { token_expiry: a.tokenExpiry, refresh_token_expiry: a.refreshTokenExpiry };
}

// ---- accounts ------------------------------------------------------------------------------------

const accountRoutes: Route[] = [
  {
    method: 'GET',
    path: '/accounts',
    versions: ALL,
    summary: 'List accounts (spec 1, Accounts)',
    async handler(ctx) {
      const { page, pageSize, offset } = paging(ctx, 10, 1000);
      const filter = { active: bool(ctx.query[ctx.version === 'v2' ? 'enabled' : 'active'] ?? ctx.query.active, 'active'), admin: bool(ctx.query.admin, 'admin') };
      let all: Account[];
      let total: number;
      if (ctx.auth.kind === 'api_key') {
        all = ctx.app.accounts.list(filter, { offset, limit: pageSize });
        total = ctx.app.accounts.count(filter);
      } else {
        const mine = ctx.auth.accounts
          .map((id) => ctx.app.accounts.get(id))
          .filter((a) => (filter.active === undefined || a.active === filter.active) && (filter.admin === undefined || a.admin === filter.admin));
        total = mine.length;
        all = mine.slice(offset, offset + pageSize);
      }
      requirePage(page, offset, total);
      return ok(shape.page(ctx.version, { objects: all.map((a) => shape.account(ctx.version, a)), total, page, hasNext: offset + all.length < total }, { api: 'meta' }));
    },
  },
  {
    method: 'POST',
    path: '/accounts',
    versions: ALL,
    summary: 'Import an account (spec 1, Import an account)',
    async handler(ctx) {
      requireApiKey(ctx, 'Importing an account');
      const body = await jsonBody(ctx.req);
      const service = str(body, 'service', true, 100);
      const accountName = str(body, 'account', true, 500);
      const def = connectorDefinition(service);
      const options = fromImport(def.id, body);
      const given = givenCredentials(body);
      const a = await ctx.app.accounts.connect({
        service: def.id,
        options,
        account: accountName,
        tokenExpiry: timestamp(body.token_expiry, 'token_expiry') ?? null,
        refreshTokenExpiry: timestamp(body.refresh_token_expiry, 'refresh_token_expiry') ?? null,
      });
      keepImportCredentials(ctx, a, given);
      const token = ctx.apiKeys.bearerToken(a.id);
      return created(shape.account(ctx.version, a, { ...importExpiries(a), bearer_token: { key: token } }));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account',
    versions: ALL,
    summary: 'Retrieve an account (spec 1, Retrieve an account)',
    async handler(ctx) {
      const id = accountOf(ctx, ctx.params.account!);
      const a = ctx.app.accounts.get(id);
      const active = bool(ctx.query.active ?? ctx.query.enabled, 'active');
      if (active !== undefined && a.active !== active) throw new ServiceError('not_found', `Account ${id} is not ${active ? 'active' : 'inactive'}.`);
      const extra: Json = {};
      if (bool(ctx.query.retrieve_tokens, 'retrieve_tokens', false)) {
        if (!ctx.app.settings.get(SETTING_RETRIEVE_TOKENS, false)) {
          throw new ServiceError('forbidden', 'Returning account credentials is switched off (Settings → API → "Allow retrieve_tokens").');
        }
        Object.assign(extra, credentials(ctx, a));
      }
      if (bool(ctx.query.retrieve_full, 'retrieve_full', true)) {
        // spec 1, Account `quota`: `used` and `total` are bytes, or null where the service does
        // not say (an S3 bucket has no size limit; a disabled or unreachable account says nothing).
        const quota = a.active ? await ctx.app.accounts.quota(id).catch(() => null) : null;
        extra.quota = { used: quota?.used ?? null, total: quota?.total ?? null };
      }
      return ok(shape.account(ctx.version, a, extra));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account',
    versions: ALL,
    summary: 'Update an account (spec 1, Update an account)',
    async handler(ctx) {
      const id = accountOf(ctx, ctx.params.account!);
      const body = await jsonBody(ctx.req);
      const current = ctx.app.accounts.get(id);
      const service = str(body, 'service', false, 100);
      if (service !== undefined && service !== current.service) throw new ServiceError('invalid_parameters', 'The service of an account cannot be changed; import a new account.');
      const active = bool(ctx.version === 'v2' ? (body.enabled ?? body.active) : body.active, 'active');
      const given = givenCredentials(body);
      const a = await ctx.app.accounts.update(id, {
        account: str(body, 'account', false, 500),
        active,
        options: changedOptions(current.service, body),
        tokenExpiry: body.token_expiry === null ? null : timestamp(body.token_expiry, 'token_expiry'),
        refreshTokenExpiry: body.refresh_token_expiry === null ? null : timestamp(body.refresh_token_expiry, 'refresh_token_expiry'),
      }, { credentialsOnly: ctx.auth.kind !== 'api_key' });
      keepImportCredentials(ctx, a, given);
      return ok(shape.account(ctx.version, a));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account',
    versions: ALL,
    summary: 'Delete an account (spec 1, Delete an account)',
    async handler(ctx) {
      const id = accountOf(ctx, ctx.params.account!);
      await ctx.app.accounts.delete(id);
      return noContent();
    },
  },
];

// ---- account keys (v0, deprecated) ---------------------------------------------------------------

function accountKeyId(value: string | undefined): number {
  if (!value || !DECIMAL_ID.test(value)) throw new ServiceError('not_found', 'No account key has this id.');
  return Number(value);
}

const keyRoutes: Route[] = [
  {
    method: 'GET',
    path: '/accounts/:accounts/keys',
    versions: V0,
    summary: 'List account keys (spec 1, Account keys)',
    async handler(ctx) {
      const ids = accountsOf(ctx, ctx.params.accounts!, true);
      const { page, pageSize, offset } = paging(ctx, 30, 1000);
      const { total, keys } = ctx.apiKeys.listAccountKeys(ids, { offset, limit: pageSize });
      requirePage(page, offset, total);
      return ok(shape.page('v0', { objects: keys.map(shape.accountKey), total, page, hasNext: offset + keys.length < total }));
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/keys',
    versions: V0,
    summary: 'Create an account key (Tributary extension; spec 1 only lists and deletes them)',
    async handler(ctx) {
      requireApiKey(ctx, 'Creating an account key');
      const id = accountOf(ctx, ctx.params.account!);
      const body = await jsonBody(ctx.req);
      return created(shape.accountKey(ctx.apiKeys.createAccountKey(id, timestamp(body.expiration, 'expiration') ?? null)));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/keys/:key',
    versions: V0,
    summary: 'Retrieve an account key (spec 1, Account keys)',
    async handler(ctx) {
      const id = accountOf(ctx, ctx.params.account!);
      return ok(shape.accountKey(ctx.apiKeys.getAccountKey(id, accountKeyId(ctx.params.key))));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/keys/:key',
    versions: V0,
    summary: 'Delete an account key (spec 1, Account keys)',
    async handler(ctx) {
      const id = accountOf(ctx, ctx.params.account!);
      ctx.apiKeys.deleteAccountKey(id, accountKeyId(ctx.params.key));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/token_from_key',
    versions: V0,
    summary: 'Bearer token from an account key (spec 1, Account keys)',
    async handler(ctx) {
      if (ctx.auth.kind !== 'account_key') throw new ServiceError('forbidden', 'token_from_key is authorized by an account key (Authorization: AccountKey …).');
      const id = accountOf(ctx, ctx.params.account!);
      const a = ctx.app.accounts.get(id);
      return ok({ access_token: ctx.apiKeys.bearerToken(id), token_type: 'Bearer', scope: `${a.service}:normal.storage`, account_id: id });
    },
  },
];

// ---- files ---------------------------------------------------------------------------------------

async function uploadFromUrl(ctx: Ctx, account: number, body: Json, overwrite: boolean): Promise<Resource> {
  const url = str(body, 'url', true);
  const parentId = bodyResourceId(body, 'parent_id');
  const name = str(body, 'name', true, 1024);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ServiceError('invalid_parameters', '`url` is not a valid URL.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ServiceError('invalid_parameters', '`url` must be an http or https URL.');
  // Fail on a bad parent before fetching anything.
  await getKind(ctx, account, parentId, 'folder');
  // Only the targets Settings → Network allows, checked at each connection and redirect.
  const agent = await guardedAgent(() => outboundPolicy(ctx.app.settings), { headersTimeoutMs: 30_000, bodyTimeoutMs: 60_000 });
  try {
    const res = await guardedGet(parsed, agent);
    const length = Number(res.headers['content-length']);
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new ServiceError('invalid_parameters', `\`url\` answered HTTP ${res.statusCode}.`);
    }
    if (res.headers['content-length'] === undefined || !Number.isSafeInteger(length) || length < 0) {
      throw new ServiceError('invalid_parameters', 'The response from `url` must carry a Content-Length header.');
    }
    // Streamed: memory stays bounded, and undici stops at the declared length.
    return await ctx.app.storage.upload(account, parentId, name, res.body, { conflict: overwrite ? 'overwrite' : 'rename', size: length });
  } finally {
    await agent.destroy().catch(() => {});
  }
}

function parseMetadata(raw: string, where = 'X-Service-Metadata', fallbackName?: string): { parentId: string; name: string } {
  let meta: unknown;
  try {
    meta = JSON.parse(raw);
  } catch {
    throw new ServiceError('bad_request', `${where} must be a JSON object with \`parent_id\` and \`name\`.`);
  }
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) throw new ServiceError('bad_request', `${where} must be a JSON object with \`parent_id\` and \`name\`.`);
  const m = meta as Json;
  if (m.name === undefined && fallbackName) m.name = fallbackName;
  return { parentId: bodyResourceId(m, 'parent_id'), name: str(m, 'name', true, 1024) };
}

/** Bytes of a deprecated v0 form upload; the whole form is read before the file is written. */
export const MAX_FORM_UPLOAD_BYTES = 64 << 20;

/**
 * The deprecated v0 upload (spec 1, Upload a file: "a multipart form POST (a `metadata` part
 * with the JSON and a `file` part)"), answered like the binary form: 201 with the file. The
 * form is parsed by undici's fetch `formData()`, which holds it in memory, hence the cap; the
 * binary form streams any size.
 */
async function formUpload(ctx: Ctx, account: number, overwrite: boolean): Promise<Resource> {
  const form = await readForm(bodyStream(ctx.req), String(ctx.req.headers['content-type']));
  const file = form.get('file');
  const metadata = form.get('metadata');
  if (file === null || typeof file === 'string') throw new ServiceError('bad_request', 'A form upload needs a `file` part with the bytes.');
  if (typeof metadata !== 'string') throw new ServiceError('bad_request', 'A form upload needs a `metadata` part: JSON with `parent_id` and `name`.');
  const { parentId, name } = parseMetadata(metadata, 'The `metadata` part', file.name || undefined);
  const body = Readable.fromWeb(file.stream() as import('node:stream/web').ReadableStream);
  return ctx.app.storage.upload(account, parentId, name, body, { conflict: overwrite ? 'overwrite' : 'rename', size: file.size });
}

/**
 * A multipart form read whole (at most MAX_FORM_UPLOAD_BYTES). A body that fails or closes
 * before its end fails the read: the parser would otherwise wait for the rest for good, holding
 * what came. Only the failure is passed on, not a pipeline: a form refused as too large must not
 * destroy the request, whose socket still carries the answer.
 */
export async function readForm(source: Readable, contentType: string): Promise<Awaited<ReturnType<Response['formData']>>> {
  let size = 0;
  const capped = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > MAX_FORM_UPLOAD_BYTES) done(new ServiceError('payload_too_large', `A form upload is at most ${MAX_FORM_UPLOAD_BYTES} bytes; send larger files as binary with X-Service-Metadata.`));
      else done(null, chunk);
    },
  });
  finished(source, (e) => {
    if (e) capped.destroy(new ServiceError('bad_request', 'The form\'s body ended before its end.', {}, { cause: e }));
  });
  source.pipe(capped);
  try {
    const { Response } = await undici();
    return await new Response(Readable.toWeb(capped) as ReadableStream, { headers: { 'content-type': contentType } }).formData();
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause;
    if (e instanceof ServiceError) throw e;
    if (cause instanceof ServiceError) throw cause;
    throw new ServiceError('bad_request', 'The request body is not a valid multipart form.');
  }
}

const FORM_DATA = /^\s*multipart\/form-data\s*;/i;

function contentLength(ctx: Ctx): number | undefined {
  const h = ctx.req.headers['content-length'];
  const n = h === undefined ? NaN : Number(h);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

const THUMB_FORMATS = new Set(['png', 'jpeg']);

/**
 * Metadata, rename/move, copy and delete behave the same for files and folders; only the kind
 * the id must name (a folder's id on a files route is not_found) and `recursive` differ.
 */
function resourceRoutes(kind: 'file' | 'folder'): Route[] {
  const path = `/accounts/:account/{s}${kind}s/:id`;
  /** The id, after checking it names a resource of this route's kind (root/trash are folders). */
  const checked = async (ctx: Ctx, account: number) => {
    const id = resourceId(ctx.params.id);
    if (id !== 'root' && id !== 'trash') await getKind(ctx, account, id, kind);
    return id;
  };
  return [
    {
      method: 'GET',
      path,
      versions: ALL,
      summary: kind === 'file' ? 'Retrieve file metadata (spec 1, Retrieve metadata)' : 'Retrieve folder metadata (`root`, `trash` or an id)',
      async handler(ctx) {
        const account = accountOf(ctx, ctx.params.account!);
        return ok(shape.resource(ctx.version, await getKind(ctx, account, ctx.params.id!, kind)));
      },
    },
    {
      method: 'PATCH',
      path,
      versions: ALL,
      summary: `Rename or move a ${kind}, also to another account (spec 1, Rename / move)`,
      async handler(ctx) {
        const account = accountOf(ctx, ctx.params.account!);
        const body = await jsonBody(ctx.req);
        const id = await checked(ctx, account);
        // spec 1, Rename / move: `user` (the destination user of an admin account) requires `parent_id`.
        if (body.user !== undefined && body.parent_id === undefined) throw new ServiceError('invalid_parameters', '`user` requires `parent_id`.');
        if (body.user !== undefined && typeof body.user !== 'string') throw new ServiceError('invalid_parameters', '`user` must be a user id.');
        const r = await ctx.app.storage.move(account, id, {
          parentId: body.parent_id === undefined ? undefined : bodyResourceId(body, 'parent_id'),
          name: str(body, 'name', false, 1024),
          account: accountBodyId(ctx, body.account),
        });
        return ok(shape.resource(ctx.version, r));
      },
    },
    {
      method: 'POST',
      path: `${path}/copy`,
      versions: ALL,
      summary: kind === 'file' ? 'Copy a file, also to another account (spec 1, Copy)' : 'Copy a folder tree, also to another account',
      async handler(ctx) {
        const account = accountOf(ctx, ctx.params.account!);
        const body = await jsonBody(ctx.req);
        const id = resourceId(ctx.params.id);
        await getKind(ctx, account, id, kind);
        if (body.user !== undefined && typeof body.user !== 'string') throw new ServiceError('invalid_parameters', '`user` must be a user id.');
        const r = await ctx.app.storage.copy(account, id, {
          parentId: bodyResourceId(body, 'parent_id'),
          name: str(body, 'name', false, 1024),
          account: accountBodyId(ctx, body.account),
        });
        return created(shape.resource(ctx.version, r));
      },
    },
    {
      method: 'DELETE',
      path,
      versions: ALL,
      summary: kind === 'file' ? 'Delete a file, to the trash unless permanent (spec 1, Delete)' : 'Delete a folder; a non-empty one needs recursive=true',
      async handler(ctx) {
        const account = accountOf(ctx, ctx.params.account!);
        const recursive = kind === 'folder' && bool(ctx.query.recursive, 'recursive', false);
        const permanent = bool(ctx.query.permanent, 'permanent', false);
        await ctx.app.storage.delete(account, await checked(ctx, account), { recursive, permanent });
        return noContent();
      },
    },
  ];
}

const fileRoutes: Route[] = [
  ...resourceRoutes('file'),
  {
    method: 'POST',
    path: '/accounts/:account/{s}files',
    versions: ALL,
    summary: 'Upload a file: binary with X-Service-Metadata, JSON {parent_id, name, url}, or in v0 the deprecated multipart form (spec 1, Upload a file)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const overwrite = bool(ctx.query.overwrite, 'overwrite', false);
      const metadata = serviceHeader(ctx.req, 'metadata');
      let r: Resource;
      if (metadata !== undefined) {
        const { parentId, name } = parseMetadata(metadata);
        r = await ctx.app.storage.upload(account, parentId, name, bodyStream(ctx.req), { conflict: overwrite ? 'overwrite' : 'rename', size: contentLength(ctx) });
      } else if (FORM_DATA.test(String(ctx.req.headers['content-type'] ?? ''))) {
        // spec 3, Versioning (v0 → v1): "Files are uploaded as binary content instead of a multipart form POST".
        if (ctx.version !== 'v0') throw new ServiceError('unsupported_media_type', 'Multipart form uploads exist in v0 only; send the bytes with an X-Service-Metadata header.');
        r = await formUpload(ctx, account, overwrite);
      } else {
        const body = await jsonBody(ctx.req);
        if (body.url === undefined) throw new ServiceError('bad_request', 'Send the file bytes with an X-Service-Metadata header, or a JSON body with `parent_id`, `name` and `url`.');
        r = await uploadFromUrl(ctx, account, body, overwrite);
      }
      return created(shape.resource(ctx.version, r));
    },
  },
  {
    method: 'PUT',
    path: '/accounts/:account/{s}files/:id',
    versions: ALL,
    summary: 'Replace file content (spec 1, Replace content)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const r = await ctx.app.storage.replace(account, resourceId(ctx.params.id), bodyStream(ctx.req), { size: contentLength(ctx) });
      return ok(shape.resource(ctx.version, r));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}files/:id/contents',
    versions: ALL,
    summary: 'Download a file (spec 1, Download)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      // `content_type` picks among several formats; no connected backend offers more than one.
      const { resource, stream } = await ctx.app.storage.download(account, resourceId(ctx.params.id));
      ctx.reply.code(200).header('content-type', resource.mimeType ?? 'application/octet-stream');
      if (resource.size !== null) ctx.reply.header('content-length', String(resource.size));
      ctx.reply.header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(resource.name)}`);
      await ctx.reply.send(stream);
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}files/:id/thumbnail',
    versions: ALL,
    summary: 'Thumbnail of an image, png or jpeg, 1-1024 px (spec 1, Thumbnail)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const size = int(ctx.query.size, 'size', 256, 1, 1024);
      const requested = (ctx.query.image_format ?? 'png').toLowerCase();
      const format = requested === 'jpg' ? 'jpeg' : THUMB_FORMATS.has(requested) ? requested : 'png';
      const { resource, stream } = await ctx.app.storage.download(account, resourceId(ctx.params.id));
      if (!resource.mimeType?.startsWith('image/')) {
        stream.destroy();
        throw new ServiceError('invalid_parameters', 'Thumbnails exist for images only.');
      }
      let image: Buffer;
      // A read that fails or stops part-way is the backend's failure, not the image's (sharp
      // decodes only once its input has ended).
      let readFailed: unknown;
      let readEnded = false;
      stream.once('error', (e) => (readFailed ??= e));
      stream.once('end', () => (readEnded = true));
      try {
        // libvips (about 10 MB in memory) is loaded with the first thumbnail asked for.
        const { default: sharp } = await import('sharp');
        const resize = sharp({ limitInputPixels: 100_000_000, failOn: 'error' }).rotate().resize(size, size, { fit: 'inside', withoutEnlargement: true });
        const out = format === 'jpeg' ? resize.jpeg({ quality: 80 }) : resize.png();
        image = await new Promise<Buffer>((resolve, reject) => {
          // pipeline: a source that fails or closes early ends the wait (sharp's toBuffer
          // waits for the end of its input) without an unhandled error on sharp's stream.
          pipeline(stream, out, (e) => e && reject(e));
          out.toBuffer().then(resolve, reject);
        });
      } catch (e) {
        if (e instanceof ServiceError) throw e;
        if (readFailed) throw readFailed instanceof ServiceError ? readFailed : new ServiceError('upstream_error', `Reading "${resource.name}" failed: ${(readFailed as Error).message}`);
        if (!readEnded) throw new ServiceError('upstream_error', `Reading "${resource.name}" stopped before its end.`);
        throw new ServiceError('invalid_parameters', `This image cannot be read: ${(e as Error).message}`);
      }
      ctx.reply.code(200).header('content-type', `image/${format}`).header('content-length', String(image.length));
      await ctx.reply.send(image);
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/{s}convert_id',
    versions: ALL,
    summary: 'Convert an upstream id into a Tributary id (spec 1, Convert a raw id)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const withMetadata = bool(ctx.query.retrieve_metadata, 'retrieve_metadata', false);
      const body = await jsonBody(ctx.req);
      const rawId = str(body, 'raw_id', true, MAX_ID_LENGTH);
      const type = str(body, 'type', true, 10);
      if (type !== 'file' && type !== 'folder') throw new ServiceError('invalid_parameters', '`type` must be file or folder.');
      const { id, resource } = await ctx.app.storage.convertId(account, rawId, type, withMetadata);
      const out: Json = { id, type };
      if (resource) out.metadata = shape.resource(ctx.version, resource);
      if (ctx.version !== 'v0') out.api = 'storage';
      return ok(out);
    },
  },
  {
    method: 'GET',
    path: '/accounts/:accounts/{s}recent',
    versions: ALL,
    summary: 'Recently modified files, from what Tributary has seen (spec 1, Recent files)',
    async handler(ctx) {
      const ids = accountsOf(ctx, ctx.params.accounts!, true);
      const { page, pageSize, offset } = paging(ctx, 30, 1000);
      const after = timestamp(ctx.query.after, 'after');
      let total = 0;
      const merged: Resource[] = [];
      for (const id of ids) {
        // Enough of each account to cut the merged page out of.
        const r = ctx.app.storage.recent(id, { after, page: 1, pageSize: offset + pageSize });
        total += r.total;
        merged.push(...r.items);
      }
      // Newest first. The sort is stable: equal times (second-precision backends) keep each
      // account's order, the order Tributary learned of the changes.
      merged.sort((a, b) => (b.modified ?? '').localeCompare(a.modified ?? ''));
      requirePage(page, offset, total);
      const items = merged.slice(offset, offset + pageSize);
      return ok(shape.page(ctx.version, { objects: items.map((r) => shape.resource(ctx.version, r)), total, page, hasNext: offset + items.length < total }, { member: 'files' }));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:accounts/{s}search',
    versions: ALL,
    summary: 'Search file names in one or several accounts, results interleaved (spec 1, Search)',
    async handler(ctx) {
      const ids = accountsOf(ctx, ctx.params.accounts!, true);
      const q = ctx.query.q;
      if (!q || !q.trim()) throw new ServiceError('invalid_parameters', '`q` is required.');
      if (q.length > 1000) throw new ServiceError('invalid_parameters', '`q` is at most 1000 characters.');
      // Reserved by the spec ("not yet functional") but still range-checked.
      paging(ctx, 30, 100);
      const results = await Promise.allSettled(ids.map((id) => ctx.app.storage.search(id, q)));
      const lists: Resource[][] = [];
      const errors: Json = {};
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') lists.push(r.value);
        else errors[String(ids[i])] = errorBody(toServiceError(r.reason));
      });
      const interleaved: Resource[] = [];
      for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) interleaved.push(l[i]!);
      const objects = interleaved.map((r) => shape.resource(ctx.version, r));
      const out: Json =
        ctx.version === 'v0' ? { count: objects.length, objects } : shape.page(ctx.version, { objects, total: objects.length, page: 1, hasNext: false });
      if (ids.length > 1) out.errors = errors;
      else if (Object.keys(errors).length) throw results.find((r) => r.status === 'rejected')!.reason;
      return ok(out);
    },
  },
];

// ---- folders -------------------------------------------------------------------------------------

const folderRoutes: Route[] = [
  ...resourceRoutes('folder'),
  {
    method: 'POST',
    path: '/accounts/:account/{s}folders',
    versions: ALL,
    summary: 'Create a folder: body {parent_id, name}; the existing one is returned unless conflict_if_exists (spec 1, Create a folder)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const conflictIfExists = bool(ctx.query.conflict_if_exists, 'conflict_if_exists', false);
      const body = await jsonBody(ctx.req);
      const parentId = bodyResourceId(body, 'parent_id');
      const r = await ctx.app.storage.mkdir(account, parentId, str(body, 'name', true, 1024), { conflictIfExists });
      return created(shape.resource(ctx.version, r));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}folders/:id/contents',
    versions: ALL,
    summary: 'List folder contents, folders first then by name; page_size 1-1000, default 100',
    costly: true,
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const { page, pageSize } = paging(ctx, 100, 1000);
      const id = resourceId(ctx.params.id);
      const notFolder = () => new ServiceError('not_found', 'No folder has this id in this account.');
      const p = await ctx.app.storage.list(account, id, page, pageSize).catch(async (e: unknown) => {
        // A file's id: to this route it is no folder at all, whatever the backend said when asked
        // to list a file (invalid_parent_folder, or worse). Checked only on failure: listing
        // stays one upstream call.
        const resource = id === 'root' || id === 'trash' ? undefined : await ctx.app.storage.get(account, id).catch(() => undefined);
        throw resource?.kind === 'file' ? notFolder() : e;
      });
      if (p.folder.kind !== 'folder') throw notFolder();
      requirePage(page, (page - 1) * pageSize, p.total);
      return ok(shape.page(ctx.version, { objects: listingObjects(ctx.version, p.items), total: p.total, page, hasNext: p.hasNext }, { hasNextMember: true }));
    },
  },
];

// ---- links ---------------------------------------------------------------------------------------

function linkChanges(body: Json): LinkChanges {
  const password = body.password;
  if (password !== undefined && password !== null && (typeof password !== 'string' || password.length > 1000)) {
    throw new ServiceError('invalid_parameters', '`password` must be a string.');
  }
  const expiration = body.expiration === null ? null : timestamp(body.expiration, 'expiration');
  return {
    direct: bool(body.direct, 'direct'),
    active: bool(body.active, 'active'),
    expiration,
    password: password as string | null | undefined,
  };
}

const linkRoutes: Route[] = [
  {
    method: 'POST',
    path: '/accounts/:account/{s}links',
    versions: ALL,
    summary: 'Create a link to a file: {file_id, direct, expiration, password, active}',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const body = await jsonBody(ctx.req);
      const fileId = resourceId(str(body, 'file_id', true), 'file_id');
      await getKind(ctx, account, fileId, 'file');
      const l = await ctx.links.create(account, fileId, linkChanges(body));
      return created(shape.link(ctx.version, l, linkUrl(ctx, l.token)));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}links',
    versions: ALL,
    summary: 'List links, newest first; filter `active`',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const { page, pageSize, offset } = paging(ctx, 30, 1000);
      const { total, links } = ctx.links.list(account, { active: bool(ctx.query.active, 'active') }, { offset, limit: pageSize });
      requirePage(page, offset, total);
      const objects = links.map((l) => shape.link(ctx.version, l, linkUrl(ctx, l.token)));
      return ok(shape.page(ctx.version, { objects, total, page, hasNext: offset + links.length < total }));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}links/:id',
    versions: ALL,
    summary: 'Retrieve a link',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const l = ctx.links.get(account, ctx.params.id!);
      return ok(shape.link(ctx.version, l, linkUrl(ctx, l.token)));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account/{s}links/:id',
    versions: ALL,
    summary: 'Update a link: direct, expiration, password, active',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const body = await jsonBody(ctx.req);
      const l = await ctx.links.update(account, ctx.params.id!, linkChanges(body));
      return ok(shape.link(ctx.version, l, linkUrl(ctx, l.token)));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/{s}links/:id',
    versions: ALL,
    summary: 'Delete a link; its URL answers 404 from then on',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      ctx.links.delete(account, ctx.params.id!);
      return noContent();
    },
  },
];

// ---- multipart uploads and upload URLs (src-main/uploads) ----------------------------------------

function multipartId(value: string | undefined): number {
  if (!value || !DECIMAL_ID.test(value)) throw new ServiceError('not_found', 'No multipart session has this id.');
  return Number(value);
}

function session(v: Version, m: Json): Json {
  return v === 'v0' ? m : { ...m, type: 'multipart', api: 'storage' };
}

const multipartRoutes: Route[] = [
  {
    method: 'POST',
    path: '/accounts/:account/{s}multipart',
    versions: ALL,
    summary: 'Initialize a multipart upload: {name, parent_id, size} (spec 1, Multipart upload)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const overwrite = bool(ctx.query.overwrite, 'overwrite', false);
      const body = await jsonBody(ctx.req);
      const size = body.size === undefined || body.size === null ? undefined : int(body.size, 'size', 0, 0, Number.MAX_SAFE_INTEGER);
      const m = await ctx.multipart.init(account, { parentId: bodyResourceId(body, 'parent_id'), name: str(body, 'name', true, 1024), size, overwrite });
      return created(session(ctx.version, { ...m }));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/{s}multipart/:id',
    versions: ALL,
    summary: 'Multipart session info (spec 1, Multipart upload)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return ok(session(ctx.version, { ...ctx.multipart.info(account, multipartId(ctx.params.id)) }));
    },
  },
  {
    method: 'PUT',
    path: '/accounts/:account/{s}multipart/:id',
    versions: ALL,
    summary: 'Upload one part: query part_number 1-10000, raw bytes (spec 1, Multipart upload)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const partNumber = int(ctx.query.part_number, 'part_number', 0, 1, 10_000);
      if (ctx.query.part_number === undefined) throw new ServiceError('invalid_parameters', '`part_number` is required.');
      const part = await ctx.multipart.putPart(account, multipartId(ctx.params.id), partNumber, bodyStream(ctx.req), contentLength(ctx));
      return ok({ part_number: part.partNumber, size: part.size });
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/{s}multipart/:id/complete',
    versions: ALL,
    summary: 'Complete a multipart upload; 201 with the file (spec 1, Multipart upload)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return created(shape.resource(ctx.version, await ctx.multipart.complete(account, multipartId(ctx.params.id))));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/{s}multipart/:id',
    versions: ALL,
    summary: 'Abort a multipart upload (spec 1, Multipart upload)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      await ctx.multipart.abort(account, multipartId(ctx.params.id));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/{s}files/upload_url',
    versions: ALL,
    summary: 'Presigned upload URL (object stores): {parent_id, name}; expires_in 1-10000 (spec 1, Create an upload URL)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const overwrite = bool(ctx.query.overwrite, 'overwrite', false);
      const expiresIn = int(ctx.query.expires_in, 'expires_in', 300, 1, 10_000);
      const useHttp = bool(ctx.query.use_http, 'use_http', false);
      const body = await jsonBody(ctx.req);
      const r = await ctx.multipart.uploadUrl(account, { parentId: bodyResourceId(body, 'parent_id'), name: str(body, 'name', true, 1024), overwrite, expiresIn, useHttp });
      return created(ctx.version === 'v0' ? r : { ...r, type: 'upload_url', api: 'storage' });
    },
  },
];

// ---- permissions ---------------------------------------------------------------------------------

/**
 * The body of a permission update as principal → role: spec 1's legacy mapping (`{email:
 * role}`, v0) or spec 3's list of permission objects (`[{id | email, role}]`, v1 on; also
 * `{permissions: [...]}`). Either form is read in every version.
 */
function permissionChanges(body: unknown): PermissionChanges {
  const list = Array.isArray(body) ? body : body && typeof body === 'object' && Array.isArray((body as Json).permissions) ? ((body as Json).permissions as unknown[]) : undefined;
  // No prototype: a principal named `__proto__` or `constructor` is a key like any other (and refused as unknown).
  const changes: PermissionChanges = Object.create(null);
  if (list) {
    for (const p of list) {
      const o = p && typeof p === 'object' && !Array.isArray(p) ? (p as Json) : undefined;
      const who = o ? (o.id ?? o.email) : undefined;
      const role = o?.role ?? '';
      if (typeof who !== 'string' || !who || typeof role !== 'string') throw new ServiceError('invalid_parameters', 'Each permission is an object with `id` or `email` and a `role` string.');
      changes[who] = role;
    }
    return changes;
  }
  if (body === undefined) return changes;
  if (!body || typeof body !== 'object') throw new ServiceError('invalid_parameters', 'Permissions are a list of permission objects or an object of e-mail → role.');
  for (const [who, role] of Object.entries(body as Json)) {
    if (typeof role !== 'string') throw new ServiceError('invalid_parameters', `The role of "${who}" must be a string ("" removes it).`);
    changes[who] = role;
  }
  return changes;
}

function permissionsBody(v: Version, permissions: Permission[]): Json {
  const objects = permissions.map((p) => (v === 'v0' ? { ...p } : { ...p, type: 'permission', api: 'storage' }));
  return v === 'v0' ? { permissions: objects } : { permissions: objects, type: 'permission_list', api: 'storage' };
}

function permissionRoute(method: 'GET' | 'PUT' | 'PATCH', kind: 'files' | 'folders', versions: Version[]): Route {
  return {
    method,
    path: `/accounts/:account/{s}${kind}/:id/permissions`,
    versions,
    summary:
      method === 'GET'
        ? 'Sharing permissions {id, email, name, role}: POSIX modes (local, SFTP); 501 elsewhere'
        : `${method === 'PUT' ? 'Replace' : 'Change'} sharing permissions: {email: role} (spec 1, legacy) or [{id | email, role}] (spec 3, v1); 501 where the backend has none`,
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const id = resourceId(ctx.params.id);
      await getKind(ctx, account, id, kind === 'files' ? 'file' : 'folder');
      if (method === 'GET') return ok(permissionsBody(ctx.version, await ctx.app.storage.permissions(account, id)));
      const body = await jsonValue(ctx.req);
      // Unsupported backends answer 501 whatever the (well-formed) body says.
      await ctx.app.storage.permissions(account, id);
      const updated = await ctx.app.storage.updatePermissions(account, id, permissionChanges(body), { replace: method === 'PUT' });
      return ok(permissionsBody(ctx.version, updated));
    },
  };
}

const permissionRoutes: Route[] = (['files', 'folders'] as const).flatMap((kind) => [
  permissionRoute('PUT', kind, ALL),
  permissionRoute('PATCH', kind, ALL),
  permissionRoute('GET', kind, ['v1', 'v2']),
]);

export const ROUTES: Route[] = [
  ...accountRoutes,
  ...keyRoutes,
  ...multipartRoutes,
  ...fileRoutes,
  ...folderRoutes,
  ...linkRoutes,
  ...permissionRoutes,
  ...emailRoutes,
  ...activityRoutes,
  ...webhookRoutes,
  ...eventBusRoutes,
];

/** The public side of a link (`/l/{token}`), no auth: the bytes (direct) or a download page. */
/**
 * What a shared file may do in the browser that opens its link: nothing. The content is served
 * from the UI's own origin, so HTML, SVG or script in it must never run there (it could read the
 * UI token): a sandboxed, resource-less CSP, no sniffing, and every type that can carry active
 * content served as an attachment.
 */
// allow-downloads: a sandboxed page may still hand over the attachment (browsers block downloads
// from sandboxed documents otherwise); scripts, forms, popups and same-origin stay off.
export const LINK_CSP = "sandbox allow-downloads; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'";

/** Types a browser shows without running anything in them; every other type is downloaded. */
const PASSIVE_TYPE = /^(image\/(png|jpeg|gif|webp|avif|bmp|x-icon|vnd\.microsoft\.icon)|audio\/[\w.+-]+|video\/[\w.+-]+|text\/plain|application\/json)$/;

export function servesInline(mimeType: string | null): boolean {
  return PASSIVE_TYPE.test((mimeType ?? '').split(';')[0]!.trim().toLowerCase());
}

export async function serveLink(ctx: Pick<Ctx, 'app' | 'links' | 'reply'>, token: string, query: Record<string, string>): Promise<void> {
  const link = await ctx.links.resolve(token, query.password);
  const { resource, stream } = await ctx.app.storage.download(link.account, link.fileId);
  ctx.reply.header('content-security-policy', LINK_CSP).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
  if (link.direct || bool(query.download, 'download', false)) {
    const inline = link.direct && servesInline(resource.mimeType);
    ctx.reply.code(200).header('content-type', resource.mimeType ?? 'application/octet-stream');
    if (resource.size !== null) ctx.reply.header('content-length', String(resource.size));
    ctx.reply.header('content-disposition', `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(resource.name)}`);
    await ctx.reply.send(stream);
    return;
  }
  stream.destroy();
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const params = new URLSearchParams({ download: '1', ...(query.password !== undefined ? { password: query.password } : {}) });
  const html = `<!doctype html><meta charset="utf-8"><title>${esc(resource.name)}</title><h1>${esc(resource.name)}</h1><p>${resource.size ?? '?'} bytes</p><p><a href="?${esc(params.toString())}">Download</a></p>`;
  await ctx.reply.code(200).header('content-type', 'text/html; charset=utf-8').send(Readable.from([Buffer.from(html)]));
}
