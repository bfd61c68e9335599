/**
 * The activity API (spec 3): subscriptions and their activity in v1 and v2, the legacy v1
 * `/events` routes, and webhook management under `/v2/webhooks` (a Tributary extension, API key
 * only). Each route resolves the account and calls one endpoint function below (or one
 * WebhooksService method): one service call plus one serializer of shapes/activity.ts, returning
 * the HTTP status and JSON body; validation of cursors, page sizes and dates is the service's.
 */
import type { ActivityService } from '../activity';
import type { ListQuery } from '../activity/log';
import type { MonitoredResource, SubscriptionType } from '../activity/subscriptions';
import type { DeliveryAttempt, Webhook } from '../activity/webhooks';
import type { EventBus } from '../activity/eventbus';
import { ServiceError } from '../errors';
import { accountOf, requireAccount, requireApiKey } from './auth';
import { bool, DECIMAL_ID, jsonBody, str, timestamp, type Ctx, type Result, type Route, type Version } from './http';
import { activityList, activityV1, activityV2, eventsLatest, subscription, subscriptionList } from './shapes/activity';

const V12: Version[] = ['v1', 'v2'];
const V1: Version[] = ['v1'];
const V2: Version[] = ['v2'];

/** The activity API's version as its serializers take it. */
type ApiVersion = 1 | 2;
const num = (ctx: Ctx): ApiVersion => (ctx.version === 'v2' ? 2 : 1);

// ---- endpoints: the account resolved and authorized, the query string as parsed ---------------

/** Reads an activity query; `page_size` may arrive as a string from the query string. */
export function activityQuery(q: Record<string, unknown>): ListQuery {
  const str = (k: string) => {
    const v = q[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new ServiceError('invalid_parameters', `\`${k}\` must be a string.`);
    return v;
  };
  const ps = q.page_size;
  const pageSize = ps === undefined ? undefined : typeof ps === 'number' ? ps : /^\d+$/.test(String(ps)) ? Number(ps) : NaN;
  // spec 3 `from`/`until` are ISO 8601 times: read with the same parser as every other REST time
  // (an empty value is still the log's to refuse).
  const time = (k: string) => {
    const v = str(k);
    return v === undefined || v === '' ? v : timestamp(v, k);
  };
  return { cursor: str('cursor'), from: time('from'), until: time('until'), pageSize };
}

function subscriptionBody(body: unknown) {
  const b = (body ?? {}) as Record<string, unknown>;
  if (typeof b !== 'object' || Array.isArray(b)) throw new ServiceError('invalid_parameters', 'The body must be a JSON object.');
  if (b.internal_state !== undefined && typeof b.internal_state !== 'string') throw new ServiceError('invalid_parameters', '`internal_state` must be a string.');
  return {
    active: b.active as boolean | undefined,
    subscriptionType: b.subscription_type as SubscriptionType | undefined,
    monitoredResources: b.monitored_resources as MonitoredResource[] | undefined,
    internalState: b.internal_state as string | undefined,
    isDefault: b.default as boolean | undefined,
  };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions */
export function listSubscriptions(a: ActivityService, account: number, v: ApiVersion): Result {
  return { status: 200, body: subscriptionList(a.subscriptions.list(account).map((s) => subscription(s, { withCursor: false, version: v }))) };
}

/** POST /v{1,2}/accounts/{account_id}/subscriptions */
export async function createSubscription(a: ActivityService, account: number, body: unknown, v: ApiVersion): Promise<Result> {
  return { status: 201, body: subscription(await a.subscriptions.create(account, subscriptionBody(body)), { withCursor: true, version: v }) };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id} */
export function getSubscription(a: ActivityService, account: number, sub: string, v: ApiVersion): Result {
  return { status: 200, body: subscription(a.subscriptions.get(account, sub), { withCursor: true, version: v }) };
}

/** PATCH /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id} */
export function updateSubscription(a: ActivityService, account: number, sub: string, body: unknown, v: ApiVersion): Result {
  return { status: 200, body: subscription(a.subscriptions.update(account, sub, subscriptionBody(body)), { withCursor: true, version: v }) };
}

/** DELETE /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id}: 204, activity removed. */
export function deleteSubscription(a: ActivityService, account: number, sub: string): Result {
  a.subscriptions.delete(account, sub);
  return { status: 204, body: null };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id}/activity */
export function listActivity(a: ActivityService, account: number, sub: string, query: Record<string, unknown>, v: ApiVersion): Result {
  const s = a.subscriptions.get(account, sub);
  const page = a.log.list(account, s.id, activityQuery(query));
  const render = v === 1 ? activityV1 : activityV2;
  return { status: 200, body: activityList(page.records.map((r) => render(a.serializeContext, r)), page.cursor, page.total) };
}

/**
 * GET /v1/accounts/{account_id}/events (legacy: one implicit subscription per account). Reading
 * the events of an account without a subscription starts monitoring it: the first answer is
 * empty, later ones carry what changed since.
 */
export async function listEvents(a: ActivityService, account: number, query: Record<string, unknown>): Promise<Result> {
  await a.subscriptions.implicit(account);
  const page = a.log.list(account, null, activityQuery(query));
  return { status: 200, body: activityList(page.records.map((r) => activityV1(a.serializeContext, r)), page.cursor, page.total, 'events') };
}

/** GET /v1/accounts/{account_id}/events/latest */
export async function latestEvents(a: ActivityService, account: number): Promise<Result> {
  const sub = await a.subscriptions.implicit(account);
  return { status: 200, body: eventsLatest(a.log.latestCursor(account), a.subscriptions.upstreamCheckpoint(sub.id)) };
}

/** A subscription body with `active` and `default` read as every REST boolean is (true/True/1, false/False/0). */
async function requestSubscriptionBody(ctx: Ctx): Promise<Record<string, unknown>> {
  const body = await jsonBody(ctx.req);
  return { ...body, active: bool(body.active, 'active'), default: bool(body.default, 'default') };
}

/** `{subscription_id}`: an id or `default`; anything else cannot name a subscription. */
function subscriptionParam(value: string | undefined): string {
  if (value === 'default' || (value !== undefined && DECIMAL_ID.test(value))) return value;
  throw new ServiceError('not_found', 'A subscription id is a whole number or `default`.');
}

export const activityRoutes: Route[] = [
  {
    method: 'GET',
    path: '/accounts/:account/subscriptions',
    versions: V12,
    summary: 'List subscriptions (spec 3, Subscriptions)',
    async handler(ctx) {
      return listSubscriptions(ctx.app.activity, accountOf(ctx, ctx.params.account!), num(ctx));
    },
  },
  {
    method: 'POST',
    path: '/accounts/:account/subscriptions',
    versions: V12,
    summary: 'Create the subscription: active, subscription_type, monitored_resources, internal_state; one per account (spec 3, Subscriptions)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return createSubscription(ctx.app.activity, account, await requestSubscriptionBody(ctx), num(ctx));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/subscriptions/:subscription',
    versions: V12,
    summary: 'Retrieve a subscription (id or `default`) with last_cursor (spec 3, Subscriptions)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return getSubscription(ctx.app.activity, account, subscriptionParam(ctx.params.subscription), num(ctx));
    },
  },
  {
    method: 'PATCH',
    path: '/accounts/:account/subscriptions/:subscription',
    versions: V12,
    summary: 'Update a subscription: active, internal_state (spec 3, Subscriptions)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      const sub = subscriptionParam(ctx.params.subscription);
      return updateSubscription(ctx.app.activity, account, sub, await requestSubscriptionBody(ctx), num(ctx));
    },
  },
  {
    method: 'DELETE',
    path: '/accounts/:account/subscriptions/:subscription',
    versions: V12,
    summary: 'Delete a subscription and its activity (spec 3, Subscriptions)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return deleteSubscription(ctx.app.activity, account, subscriptionParam(ctx.params.subscription));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/subscriptions/:subscription/activity',
    versions: V12,
    summary: 'List activity: cursor (or after-auth), page_size 1-1000, from, until (spec 3, Activity list)',
    async handler(ctx) {
      const account = accountOf(ctx, ctx.params.account!);
      return listActivity(ctx.app.activity, account, subscriptionParam(ctx.params.subscription), ctx.query, num(ctx));
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/events',
    versions: V1,
    summary: 'Legacy events: cursor, page_size, from, until (spec 3, Legacy events endpoints)',
    async handler(ctx) {
      return listEvents(ctx.app.activity, accountOf(ctx, ctx.params.account!), ctx.query);
    },
  },
  {
    method: 'GET',
    path: '/accounts/:account/events/latest',
    versions: V1,
    summary: 'Latest event cursor and upstream cursor (spec 3, Legacy events endpoints)',
    async handler(ctx) {
      return latestEvents(ctx.app.activity, accountOf(ctx, ctx.params.account!));
    },
  },
];

// ---- webhooks (Tributary extension: spec 3 describes delivery, not management) ----------------

function webhookId(value: string | undefined): number {
  if (!value || !DECIMAL_ID.test(value)) throw new ServiceError('not_found', 'No webhook has this id.');
  return Number(value);
}

const webhook = (w: Webhook) => ({
  id: w.id,
  url: w.url,
  format: w.format,
  account: w.account,
  failing_since: w.failingSince,
  paused: w.paused,
  created: w.created,
  type: 'webhook',
  api: 'activity',
});

const attempt = (a: DeliveryAttempt) => ({
  id: a.id,
  webhook: a.webhook,
  account: a.account,
  subscription: a.subscription,
  kind: a.kind,
  at: a.at,
  status: a.status,
  error: a.error,
  ok: a.ok,
  duration_ms: a.durationMs,
  next_attempt_at: a.nextAttemptAt,
  type: 'webhook_attempt',
  api: 'activity',
});

const list = (objects: unknown[]) => ({ total: objects.length, count: objects.length, objects, type: 'object_list', api: 'activity' });

export const webhookRoutes: Route[] = [
  {
    method: 'GET',
    path: '/webhooks',
    versions: V2,
    summary: 'List webhooks (API key only; Tributary extension)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing webhooks');
      return { status: 200, body: list(ctx.app.activity.webhooks.list().map(webhook)) };
    },
  },
  {
    method: 'POST',
    path: '/webhooks',
    versions: V2,
    summary: 'Create a webhook: {url, format json, account}; tested with a POST of {} first (spec 3, JSON webhook)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing webhooks');
      const body = await jsonBody(ctx.req);
      if (typeof body.url !== 'string') throw new ServiceError('invalid_parameters', '`url` is required.');
      // spec 3, Legacy webhooks: "from v2 on only JSON payload webhooks are used".
      if (body.format !== undefined && body.format !== 'json') throw new ServiceError('invalid_parameters', '`format` must be `json`: v2 webhooks carry JSON only; URL-encoded bodies were the legacy webhooks before v2.');
      let account: number | null = null;
      if (body.account !== undefined && body.account !== null) {
        if (typeof body.account !== 'number' || !Number.isSafeInteger(body.account) || body.account < 1) throw new ServiceError('invalid_parameters', '`account` must be an account id.');
        requireAccount(ctx, body.account);
        account = body.account;
      }
      const w = await ctx.app.activity.webhooks.create({ url: body.url, format: 'json', account });
      return { status: 201, body: webhook(w) };
    },
  },
  {
    method: 'GET',
    path: '/webhooks/:id',
    versions: V2,
    summary: 'Retrieve a webhook (API key only)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing webhooks');
      return { status: 200, body: webhook(ctx.app.activity.webhooks.get(webhookId(ctx.params.id))) };
    },
  },
  {
    method: 'DELETE',
    path: '/webhooks/:id',
    versions: V2,
    summary: 'Delete a webhook (API key only)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing webhooks');
      ctx.app.activity.webhooks.delete(webhookId(ctx.params.id));
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    path: '/webhooks/:id/attempts',
    versions: V2,
    summary: 'Recent delivery attempts of a webhook, newest first (API key only)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing webhooks');
      const id = webhookId(ctx.params.id);
      ctx.app.activity.webhooks.get(id);
      return { status: 200, body: list(ctx.app.activity.webhooks.attempts(id).map(attempt)) };
    },
  },
];

// ---- event buses (Tributary extension: spec 3 describes the event, not its configuration) -----

function eventBusId(value: string | undefined): number {
  if (!value || !DECIMAL_ID.test(value)) throw new ServiceError('not_found', 'No event bus has this id.');
  return Number(value);
}

const eventBus = (b: EventBus, pending?: ReturnType<ActivityService['eventBuses']['pending']>) => ({
  id: b.id,
  account: b.account,
  region: b.region,
  event_bus_name: b.eventBusName,
  source: b.source,
  endpoint: b.endpoint,
  has_credentials: b.hasCredentials,
  failing_since: b.failingSince,
  last_error: b.lastError,
  created: b.created,
  ...(pending ? { pending: pending.map((p) => ({ account: p.account, subscription: p.subscription, attempts: p.attempts, next_attempt_at: p.nextAttemptAt === null ? null : new Date(p.nextAttemptAt).toISOString() })) } : {}),
  type: 'event_bus',
  api: 'activity',
});

export const eventBusRoutes: Route[] = [
  {
    method: 'GET',
    path: '/event_buses',
    versions: V2,
    summary: 'List AWS EventBridge targets (API key only; Tributary extension)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing event buses');
      return { status: 200, body: list(ctx.app.activity.eventBuses.list().map((b) => eventBus(b))) };
    },
  },
  {
    method: 'POST',
    path: '/event_buses',
    versions: V2,
    summary: 'Add an AWS EventBridge target: {region, event_bus_name, source, endpoint, access_key_id, secret_access_key, account}; checked with DescribeEventBus first (spec 3, Event-bus event)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing event buses');
      const body = await jsonBody(ctx.req);
      let account: number | null = null;
      if (body.account !== undefined && body.account !== null) {
        if (typeof body.account !== 'number' || !Number.isSafeInteger(body.account) || body.account < 1) throw new ServiceError('invalid_parameters', '`account` must be an account id.');
        requireAccount(ctx, body.account);
        account = body.account;
      }
      const b = await ctx.app.activity.eventBuses.create({
        account,
        region: str(body, 'region', true, 50),
        eventBusName: str(body, 'event_bus_name', false, 1600),
        source: str(body, 'source', false, 256),
        endpoint: str(body, 'endpoint', false, 2048),
        accessKeyId: str(body, 'access_key_id', false, 256),
        secretAccessKey: str(body, 'secret_access_key', false, 1024),
      });
      return { status: 201, body: eventBus(b) };
    },
  },
  {
    method: 'GET',
    path: '/event_buses/:id',
    versions: V2,
    summary: 'Retrieve an event bus target with its pending deliveries (API key only)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing event buses');
      const id = eventBusId(ctx.params.id);
      return { status: 200, body: eventBus(ctx.app.activity.eventBuses.get(id), ctx.app.activity.eventBuses.pending(id)) };
    },
  },
  {
    method: 'DELETE',
    path: '/event_buses/:id',
    versions: V2,
    summary: 'Remove an event bus target (API key only)',
    async handler(ctx) {
      requireApiKey(ctx, 'Managing event buses');
      ctx.app.activity.eventBuses.delete(eventBusId(ctx.params.id));
      return { status: 204 };
    },
  },
];
