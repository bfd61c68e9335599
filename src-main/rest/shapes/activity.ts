/**
 * Spec 3 wire shapes, all rendered from one stored ActivityRecord: v1 activity, v2 activity,
 * list wrappers, subscriptions and the legacy events shapes. Storage metadata goes through
 * `StorageService.toResource` and then the spec 1 file/folder serializer of storage.ts, never by
 * hand, so it matches what the storage endpoints return. v2 event types come from the table
 * the dashboard uses too (contract/activity-v2.ts).
 */
import type { ActivityRecord, EntrySnapshot, SerializeContext, SubscriptionView } from '../../activity/types';
import type { Entry } from '../../connectors/types';
import { v2Event } from '../../contract/activity-v2';
import { resource } from './storage';

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
  // spec 1, File / Folder object as v1 serves it: activity `metadata` is the resource's v1 object.
  return resource('v1', ctx.toResource(r.accountId, toEntry(s)));
}

/** spec 3, Activity v1. */
export function activityV1(ctx: SerializeContext, r: ActivityRecord): Record<string, unknown> {
  return {
    id: r.upstreamId ?? r.seq,
    account: r.accountId,
    subscription: r.subscriptionId,
    // When the activity occurred, as Tributary learned of it: the stream's order, and what
    // `from`/`until` select. A file's own modification time stays in `metadata.modified`.
    modified: r.recordedAt,
    type: r.type,
    ip: null,
    metadata: metadataObject(ctx, r, r.metadata),
    previous_metadata: metadataObject(ctx, r, r.previousMetadata) ?? {},
    user_id: null,
  };
}

function target(ctx: SerializeContext, r: ActivityRecord, s: EntrySnapshot | null): Record<string, unknown> | null {
  if (!s) return null;
  if (r.api === 'email') return { id: s.path, name: s.name, type: 'message', api: 'email' };
  const res = ctx.toResource(r.accountId, toEntry(s));
  return { id: res.id, name: res.name, path: res.path, parent: res.parent, type: res.kind, api: 'storage' };
}

/** spec 3, Activity v2. */
export function activityV2(ctx: SerializeContext, r: ActivityRecord): Record<string, unknown> {
  // Email tracking (spec 3) is an access to a sent message; a click also carries its Hyperlink
  // (`metadata` below).
  const event = v2Event(r);
  const who = ctx.actor?.(r.accountId) ?? { name: null, id: null, email: null };
  const current = r.metadata ?? r.previousMetadata;
  return {
    id: String(r.seq),
    account: r.accountId,
    timestamp: r.recordedAt,
    type: 'activity',
    api: 'activity',
    event_category: event.category,
    event_type: event.type,
    event_subtype: event.subtype,
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
