/**
 * The email API (spec 2, v1 only) over MailService: one service call and one spec 2 serializer
 * per route. Email routes answer `501 not_implemented` on a storage account, as storage routes
 * do on a mail account (the account exists, it just has no such API). Also the public tracking
 * endpoints `/t/o/{token}` and `/t/c/{token}` (no auth: the signed token is the capability).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MailPage } from '../contract/mail';
import { closeAll, type SendAttachment, type SendInput } from '../mail/outgoing';
import { toV1Folder, toV1Label, toV1List, toV1Message, toV1MessageList, type V1Context } from './shapes/mail';
import { connectorDefinition } from '../connectors/registry';
import { ServiceError } from '../errors';
import { accountOf } from './auth';
import { bool, jsonBody, type Ctx, type RestDeps, type Route, type Version } from './http';

const V1: Version[] = ['v1'];
type Json = Record<string, unknown>;

/** The account of the path, which must be a mail account. */
function mailAccount(ctx: Ctx): number {
  const account = accountOf(ctx, ctx.params.account!);
  const a = ctx.app.accounts.get(account);
  if (connectorDefinition(a.service).kind !== 'mail') {
    throw new ServiceError('not_implemented', `${a.serviceName} accounts have no email API; email routes need a mail account.`);
  }
  return account;
}

/** `href` of attachment and rfc822 file objects: the file under the v1 storage API. */
function v1Context(ctx: Ctx, account: number): V1Context {
  const base = `${ctx.req.protocol}://${ctx.req.host}/v1/accounts/${account}/storage/files/`;
  return { fileHref: (id) => base + encodeURIComponent(id) };
}

/**
 * `page`: clients of this API family send `page=1` for the first page (spec 3, v0→v1 paging);
 * MailService's page identifiers are opaque, so `1` (and nothing) mean the first page.
 */
function pageParam(v: string | undefined): string | undefined {
  return v === undefined || v === '' || v === '1' ? undefined : v;
}

/** `labels` is repeatable (`labels=a&labels=b`); flatQuery keeps only the first value. */
function labelsParam(ctx: Ctx): string[] | undefined {
  const raw = (ctx.req.query as Record<string, unknown> | undefined)?.labels;
  if (raw === undefined) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.every((l) => typeof l === 'string')) throw new ServiceError('invalid_parameters', '`labels` must be label names.');
  return list as string[];
}

/**
 * A page past the end of the list is 404 `not_found` ("Invalid page"), as every other paged list
 * answers (spec 1, Paging); page 1 of an empty list is an empty 200.
 */
function messagePage(ctx: Ctx, account: number, p: MailPage): Json {
  if (p.page && p.objects.length === 0) throw pastTheEnd(p.page);
  return toV1MessageList({ ...p, page: p.page || '1' }, v1Context(ctx, account));
}

const pastTheEnd = (page: string) => new ServiceError('not_found', `Invalid page: page ${page} is past the last page.`);

/** Label and folder lists are one page: any other page than the first is past the end. */
function onePage(ctx: Ctx): void {
  const page = pageParam(ctx.query.page);
  if (page !== undefined) throw pastTheEnd(page);
}

/** `attachments: [{id}]`: storage files of this account (normally `ephemeral` uploads), opened for sending. */
async function attachments(ctx: Ctx, account: number, value: unknown): Promise<SendAttachment[]> {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > 100) throw new ServiceError('invalid_parameters', '`attachments` must be an array of at most 100 objects `{id}`.');
  const ids = value.map((a, i) => {
    const id = (a as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || !id) throw new ServiceError('invalid_parameters', `\`attachments[${i}].id\` must be a storage file id.`);
    return id;
  });
  const files: SendAttachment[] = [];
  try {
    for (const [i, id] of ids.entries()) {
      const { resource, stream } = await ctx.app.storage.download(account, id).catch((e: unknown) => {
        if (e instanceof ServiceError && (e.code === 'not_found' || e.code === 'invalid_parameters' || e.code === 'not_implemented')) {
          throw new ServiceError('invalid_parameters', `\`attachments[${i}].id\` is not a file of this account; upload it with parent_id \`ephemeral\` first.`);
        }
        throw e;
      });
      files.push({ name: resource.name, content: stream, mimeType: resource.mimeType ?? undefined });
    }
  } catch (e) {
    closeAll(files);
    throw e;
  }
  return files;
}

/**
 * `tracking`: `subscription_id` is a spec 3 subscription id (an integer, sent as a number or a
 * string, or `default`) and must name this account's `analytics` subscription; it travels on
 * as the canonical id string, which is what the tracking tokens and events carry.
 */
function trackingParam(ctx: Ctx, account: number, value: unknown): { opens?: boolean; clicks?: boolean; subscription_id?: string } | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new ServiceError('invalid_parameters', '`tracking` must be an object {opens, clicks, subscription_id}.');
  const t = value as Json;
  // Booleans mean the same in every body as in the query: true, True, 1 or JSON true.
  const opens = bool(t.opens, 'tracking.opens');
  const clicks = bool(t.clicks, 'tracking.clicks');
  let subscriptionId: string | undefined;
  const sid = t.subscription_id;
  if (sid !== undefined && sid !== null) {
    if (typeof sid !== 'number' && typeof sid !== 'string') throw new ServiceError('invalid_parameters', '`tracking.subscription_id` must be a subscription id.');
    const sub = (() => {
      try {
        return ctx.app.activity.subscriptions.get(account, typeof sid === 'number' ? sid : sid.trim());
      } catch {
        return undefined;
      }
    })();
    if (!sub || sub.subscriptionType !== 'analytics') {
      throw new ServiceError('invalid_parameters', '`tracking.subscription_id` must name an `analytics` subscription of this account; create one with POST /v1/accounts/{id}/subscriptions.');
    }
    subscriptionId = String(sub.id);
  }
  return { opens, clicks, subscription_id: subscriptionId };
}

const ok = (body: unknown) => ({ status: 200, body });
const created = (body: unknown) => ({ status: 201, body });

export const emailRoutes: Route[] = [
  {
    method: 'GET',
    path: '/accounts/:account/email/messages',
    versions: V1,
    summary: 'List messages, newest first: page, page_size 1-1000, folder_id, thread_id, labels (repeatable), after, before (spec 2, List messages)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const q = ctx.query;
      const p = await ctx.app.mail.messages.list(account, {
        page: pageParam(q.page),
        page_size: q.page_size,
        folder_id: q.folder_id || undefined,
        thread_id: q.thread_id || undefined,
        labels: labelsParam(ctx),
        after: q.after,
        before: q.before,
      });
      return ok(messagePage(ctx, account, p));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/email/search',
    versions: V1,
    summary: 'Search messages from the local index: q, page, page_size 1-1000 (spec 2, Search)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const p = await ctx.app.mail.messages.search(account, { q: ctx.query.q, page: pageParam(ctx.query.page), page_size: ctx.query.page_size });
      return ok(messagePage(ctx, account, p));
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/email/messages/send',
    versions: V1,
    summary: 'Send a message: to, subject, cc, bcc, text_body/body, reply_to, attachments [{id}], tracking (spec 2, Send)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      const tracking = trackingParam(ctx, account, body.tracking);
      const files = await attachments(ctx, account, body.attachments);
      try {
        const m = await ctx.app.mail.outgoing.send(account, { ...(body as unknown as SendInput), tracking }, files);
        return created(toV1Message(m, v1Context(ctx, account)));
      } finally {
        // A send refused before it read them leaves the opened files to close.
        closeAll(files);
      }
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/email/messages/:id',
    versions: V1,
    summary: 'Retrieve a message with its body (spec 2, Messages)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      return ok(toV1Message(await ctx.app.mail.messages.get(account, ctx.params.id!), v1Context(ctx, account)));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account/email/messages/:id',
    versions: V1,
    summary: 'Update a message: label_names replaces its labels (spec 2, Update a message)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      return ok(toV1Message(await ctx.app.mail.messages.update(account, ctx.params.id!, { label_names: body.label_names }), v1Context(ctx, account)));
    },
  },
  // ---- labels (IMAP keywords) ----
  {
    method: 'GET',
    path: '/accounts/:account/email/labels',
    versions: V1,
    summary: 'List labels (spec 2, Labels)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      onePage(ctx);
      const labels = await ctx.app.mail.labels.list(account);
      return ok(toV1List(labels, toV1Label, '1', null));
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/email/labels',
    versions: V1,
    summary: 'Create a label: {name} (spec 2, Labels)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      return created(toV1Label(await ctx.app.mail.labels.create(account, body.name)));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/email/labels/:id',
    versions: V1,
    summary: 'Retrieve a label (spec 2, Labels)',
    async handler(ctx) {
      return ok(toV1Label(await ctx.app.mail.labels.get(mailAccount(ctx), ctx.params.id!)));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account/email/labels/:id',
    versions: V1,
    summary: 'Rename a label on every message: {name} (spec 2, Labels)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      return ok(toV1Label(await ctx.app.mail.labels.rename(account, ctx.params.id!, body.name)));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/email/labels/:id',
    versions: V1,
    summary: 'Delete a label from every message (spec 2, Labels)',
    async handler(ctx) {
      await ctx.app.mail.labels.delete(mailAccount(ctx), ctx.params.id!);
      return { status: 204 };
    },
  },
  // ---- folders (IMAP mailboxes) ----
  {
    method: 'GET',
    path: '/accounts/:account/email/folders',
    versions: V1,
    summary: 'List folders, every level (spec 2, Folders)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      onePage(ctx);
      const folders = await ctx.app.mail.folders.list(account);
      return ok(toV1List(folders, toV1Folder, '1', null));
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/email/folders',
    versions: V1,
    summary: 'Create a folder: {name} (spec 2, Folders)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      return created(toV1Folder(await ctx.app.mail.folders.create(account, body.name)));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/email/folders/:id',
    versions: V1,
    summary: 'Retrieve a folder (spec 2, Folders)',
    async handler(ctx) {
      return ok(toV1Folder(await ctx.app.mail.folders.get(mailAccount(ctx), ctx.params.id!)));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account/email/folders/:id',
    versions: V1,
    summary: 'Rename a folder: {name} (spec 2, Folders)',
    async handler(ctx) {
      const account = mailAccount(ctx);
      const body = await jsonBody(ctx.req);
      return ok(toV1Folder(await ctx.app.mail.folders.rename(account, ctx.params.id!, body.name)));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/email/folders/:id',
    versions: V1,
    summary: 'Delete a folder and its messages (spec 2, Folders)',
    async handler(ctx) {
      await ctx.app.mail.folders.delete(mailAccount(ctx), ctx.params.id!);
      return { status: 204 };
    },
  },
];

// ---- tracking (public) -------------------------------------------------------------------------

function hit(req: FastifyRequest) {
  const ua = req.headers['user-agent'];
  return { ip: req.ip ?? null, userAgent: typeof ua === 'string' ? ua : null };
}

/** `GET /t/o/{token}`: always the 1×1 GIF, whatever the token (a bad one learns nothing). */
export async function serveOpen(deps: Pick<RestDeps, 'app'>, req: FastifyRequest, reply: FastifyReply, token: string): Promise<void> {
  const r = deps.app.mail.trackOpen(token, hit(req));
  reply.code(200).header('content-type', r.contentType).header('content-length', String(r.body.length));
  for (const [k, v] of Object.entries(r.headers)) reply.header(k, v);
  await reply.send(r.body);
}

/** `GET /t/c/{token}`: 302 to the URL signed into the token, and nowhere else; 404 for a bad token. */
export async function serveClick(deps: Pick<RestDeps, 'app'>, req: FastifyRequest, reply: FastifyReply, token: string): Promise<void> {
  const r = deps.app.mail.trackClick(token, hit(req));
  await reply.code(302).header('location', r.location).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').send();
}
