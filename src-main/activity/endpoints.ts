/**
 * spec 3 endpoints, one function each: one service call plus one serializer, returning the
 * HTTP status and JSON body. The REST layer resolves `me`, authenticates, parses the query
 * string (page_size as a number) and maps ServiceError to the error body; nothing else.
 */
import type { ActivityService } from './index';
import type { ListQuery } from './log';
import { activityList, activityV1, activityV2, eventsLatest, subscription, subscriptionList } from '../rest/shapes/activity';
import type { MonitoredResource, SubscriptionType } from './subscriptions';
import { ServiceError } from '../errors';

export type Version = 1 | 2;
export interface Reply {
  status: number;
  body: unknown;
}

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
  return { cursor: str('cursor'), from: str('from'), until: str('until'), pageSize };
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
  };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions */
export function listSubscriptions(a: ActivityService, account: number, v: Version): Reply {
  return { status: 200, body: subscriptionList(a.subscriptions.list(account).map((s) => subscription(s, { withCursor: false, version: v }))) };
}

/** POST /v{1,2}/accounts/{account_id}/subscriptions */
export async function createSubscription(a: ActivityService, account: number, body: unknown, v: Version): Promise<Reply> {
  return { status: 201, body: subscription(await a.subscriptions.create(account, subscriptionBody(body)), { withCursor: true, version: v }) };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id} */
export function getSubscription(a: ActivityService, account: number, sub: string, v: Version): Reply {
  return { status: 200, body: subscription(a.subscriptions.get(account, sub), { withCursor: true, version: v }) };
}

/** PATCH /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id} */
export function updateSubscription(a: ActivityService, account: number, sub: string, body: unknown, v: Version): Reply {
  return { status: 200, body: subscription(a.subscriptions.update(account, sub, subscriptionBody(body)), { withCursor: true, version: v }) };
}

/** DELETE /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id}: 204, activity removed. */
export function deleteSubscription(a: ActivityService, account: number, sub: string): Reply {
  a.subscriptions.delete(account, sub);
  return { status: 204, body: null };
}

/** GET /v{1,2}/accounts/{account_id}/subscriptions/{subscription_id}/activity */
export function listActivity(a: ActivityService, account: number, sub: string, query: Record<string, unknown>, v: Version): Reply {
  const s = a.subscriptions.get(account, sub);
  const page = a.log.list(account, s.id, activityQuery(query));
  const render = v === 1 ? activityV1 : activityV2;
  return { status: 200, body: activityList(page.records.map((r) => render(a.serializeContext, r)), page.cursor, page.total) };
}

/** GET /v1/accounts/{account_id}/events (legacy: one implicit subscription per account). */
export function listEvents(a: ActivityService, account: number, query: Record<string, unknown>): Reply {
  a.subscriptions.list(account);
  const page = a.log.list(account, null, activityQuery(query));
  return { status: 200, body: activityList(page.records.map((r) => activityV1(a.serializeContext, r)), page.cursor, page.total, 'events') };
}

/** GET /v1/accounts/{account_id}/events/latest */
export function latestEvents(a: ActivityService, account: number): Reply {
  const subs = a.subscriptions.list(account);
  return { status: 200, body: eventsLatest(a.log.latestCursor(account), subs[0] ? a.subscriptions.upstreamCheckpoint(subs[0].id) : null) };
}
