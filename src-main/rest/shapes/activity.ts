/**
 * Spec 3 wire shapes, all rendered from one stored ActivityRecord: v1 activity, v2 activity,
 * list wrappers, subscriptions, the legacy events shapes, and the notification messages
 * (event-bus, publish/subscribe, message-bus). Storage metadata goes through
 * `StorageService.toResource` and then `storageObject` (spec 1 file/folder object), never by hand,
 * so it matches what the storage endpoints return.
 */
import { resource as wireResource } from './storage';
import type { Entry } from '../../connectors/types';
import type { Resource } from '../../contract';
import type { ActivityRecord, EntrySnapshot, V1Type } from '../../activity/types';

/** Builds the contract Resource of an entry: `app.storage.toResource` in the app. */
export type ToResource = (accountId: number, entry: Entry) => Resource;

/**
 * spec 1, File / Folder object as v1 serves it (activity `metadata` is the resource's v1 object),
 * from the one serializer the REST API uses.
 */
export function storageObject(r: Resource): Record<string, unknown> {
  return wireResource('v1', r);
}

export interface SerializeContext {
  toResource: ToResource;
  /** The account as an actor (v2): its display name and upstream user id. */
  actor?: (accountId: number) => { name: string | null; id: string | null; email: string | null };
}

function toEntry(s: EntrySnapshot): Entry {
  return {
    path: s.path,
    name: s.name,
    kind: s.kind === 'message' ? 'file' : s.kind,
    size: s.size,
    modified: s.modified ? new Date(s.modified) : null,
    created: s.created ? new Date(s.created) : null,
    mimeType: s.mimeType,
    etag: s.etag,
  };
}

function metadataObject(ctx: SerializeContext, r: ActivityRecord, s: EntrySnapshot | null): Record<string, unknown> | null {
  if (!s) return null;
  if (r.api === 'email') {
    return { id: s.path, type: 'message', api: 'email', name: s.name, size: s.size, modified: s.modified, created: s.created };
  }
  return storageObject(ctx.toResource(r.accountId, toEntry(s)));
}

/** spec 3, Activity v1. */
export function activityV1(ctx: SerializeContext, r: ActivityRecord): Record<string, unknown> {
  return {
    id: r.upstreamId ?? r.seq,
    account: r.accountId,
    subscription: r.subscriptionId,
    modified: r.occurredAt ?? r.recordedAt,
    type: r.type,
    ip: null,
    metadata: metadataObject(ctx, r, r.metadata),
    previous_metadata: metadataObject(ctx, r, r.previousMetadata) ?? {},
    user_id: null,
  };
}

/**
 * v1 type → v2 (event_type, event_subtype). Plain add/update/delete have no subtype in the
 * spec's table, so `event_subtype` is null there; restore is storage's `untrash`.
 */
export const V2_MAPPING: Record<V1Type, { eventType: 'add' | 'update' | 'delete'; subtype: string | null }> = {
  add: { eventType: 'add', subtype: null },
  update: { eventType: 'update', subtype: null },
  delete: { eventType: 'delete', subtype: null },
  rename: { eventType: 'update', subtype: 'rename' },
  move: { eventType: 'update', subtype: 'move' },
  copy: { eventType: 'add', subtype: 'copy' },
  restore: { eventType: 'update', subtype: 'untrash' },
};

function target(ctx: SerializeContext, r: ActivityRecord, s: EntrySnapshot | null): Record<string, unknown> | null {
  if (!s) return null;
  if (r.api === 'email') return { id: s.path, name: s.name, type: 'message', api: 'email' };
  const res = ctx.toResource(r.accountId, toEntry(s));
  return { id: res.id, name: res.name, path: res.path, parent: res.parent, type: res.kind, api: 'storage' };
}

/** spec 3, Activity v2. */
export function activityV2(ctx: SerializeContext, r: ActivityRecord): Record<string, unknown> {
  // Email tracking (spec 3): an access to a sent message; a click carries the Hyperlink.
  const m = r.subtype ? { eventType: 'access', subtype: r.subtype } : V2_MAPPING[r.type];
  const who = ctx.actor?.(r.accountId) ?? { name: null, id: null, email: null };
  const current = r.metadata ?? r.previousMetadata;
  return {
    id: String(r.seq),
    account: r.accountId,
    timestamp: r.occurredAt ?? r.recordedAt,
    type: 'activity',
    api: 'activity',
    event_category: r.api === 'email' ? 'email' : 'storage',
    event_type: m.eventType,
    event_subtype: m.subtype,
    impersonate_for_target: null,
    session: { type: 'login', ip: null, user_agent: null },
    actor: { type: 'user', id: who.id, ids: who.id ? { default: who.id } : {}, id_type: null, api: 'team', email: who.email, name: who.name },
    target: target(ctx, r, current),
    previous_target: r.previousMetadata && r.type !== 'delete' ? target(ctx, r, r.previousMetadata) : null,
    metadata: r.link ? [{ tag: r.link.tag, link: r.link.link, text: r.link.text, type: 'hyperlink', api: 'email' }] : null,
    raw: { object: { type: r.type, kind: r.kind, path: r.path, previous_path: r.previousPath, upstream_id: r.upstreamId } },
  };
}

/** spec 3, Activity list wrapper. */
export function activityList(objects: unknown[], cursor: string | null, total: number, api: 'activity' | 'events' = 'activity') {
  return { objects, cursor, count: objects.length, total, type: 'object_list', api };
}

export interface SubscriptionView {
  id: number;
  account: number;
  subscriptionType: 'changes' | 'crawl' | 'analytics';
  crawlType: string;
  monitoredResources: { resource: string; user?: string }[];
  active: boolean;
  disableReason: string | null;
  isDefault: boolean;
  expiry: string;
  lastCursor: string | null;
  lastCursorUpdatedAt: string | null;
  upstreamCheckpoint: string | null;
  created: string;
  modified: string;
  api: 'storage' | 'email';
}

/**
 * spec 3, Subscription. `withCursor` false when listing (the spec leaves last_cursor out there).
 * v2 also carries `last_activity` and `upstream_checkpoint`, which replace `/events/latest`.
 */
export function subscription(s: SubscriptionView, options: { withCursor: boolean; version: 1 | 2 }): Record<string, unknown> {
  const o: Record<string, unknown> = {
    id: s.id,
    account: s.account,
    expiry: s.expiry,
    active: s.active,
    disable_reason: s.active ? '' : (s.disableReason ?? ''),
    default: s.isDefault,
    monitored_resources: s.monitoredResources,
    monitored_resource_api: s.api,
    monitored_resource_object_type: 'folder',
    subscription_type: s.subscriptionType,
    crawl_type: s.crawlType,
    created: s.created,
    modified: s.modified,
    type: 'subscription',
    api: 'activity',
  };
  if (options.withCursor) {
    o.last_cursor = s.lastCursor;
    o.last_cursor_updated_at = s.lastCursorUpdatedAt;
    if (options.version === 2) {
      o.last_activity = s.lastCursor;
      o.upstream_checkpoint = s.upstreamCheckpoint;
    }
  }
  return o;
}

export function subscriptionList(items: Record<string, unknown>[]) {
  return { total: items.length, count: items.length, objects: items, type: 'object_list', api: 'activity' };
}

/** Legacy `GET /v1/accounts/{id}/events/latest`. */
export function eventsLatest(cursor: string | null, upstreamCursor: string | null) {
  return { cursor, upstream_cursor: upstreamCursor, type: 'cursor', api: 'events' };
}

// ---- notifications ------------------------------------------------------------------------

/** spec 3, JSON webhook body; also the form fields of legacy webhooks. */
export function webhookBody(accountId: number, subscriptionId: number) {
  return { account: accountId, subscription: subscriptionId };
}

export interface EventBusTarget {
  /** Partner event source namespace, e.g. `aws.partner/tributary.app`. */
  namespace: string;
  partnerId: string;
  apiId: string;
  /** The receiving cloud account. */
  cloudAccount: string;
  region: string;
}

/** spec 3, Event-bus event. */
export function eventBusEvent(t: EventBusTarget, accountId: number, subscriptionId: number, v1: unknown[], time: Date) {
  return {
    'detail-type': 'eventbus_webhook_notification',
    source: `${t.namespace}/${t.partnerId}/${t.apiId}`,
    account: t.cloudAccount,
    time: time.toISOString(),
    region: t.region,
    detail: { account: accountId, subscription: subscriptionId, activity: { v1 } },
  };
}

/** spec 3, Publish/subscribe message. */
export function pubSubMessage(accountId: number, subscriptionId: number, v1: unknown[]) {
  return { account: accountId, subscription: subscriptionId, activity: { v1 } };
}

/**
 * spec 3, Message-bus topic message: the same JSON body, `SessionId` = subscription id, and the
 * filterable properties `accountId` and `v1ActivityType`. One message per activity so that the
 * type filter is exact; the session keeps them in order.
 */
export function messageBusMessages(accountId: number, subscriptionId: number, v1: { type: string }[]) {
  return v1.map((a) => ({
    body: pubSubMessage(accountId, subscriptionId, [a]),
    contentType: 'application/json',
    sessionId: String(subscriptionId),
    applicationProperties: { accountId, v1ActivityType: a.type },
  }));
}
