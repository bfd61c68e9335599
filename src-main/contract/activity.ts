/**
 * Activity procedures and events for the dashboard (spec 3), spread into the procedures and
 * events of contract/index.ts. zod only. Handlers: one call each into ActivityService
 * (src-main/activity/index.ts); see docs/activity.md for the mapping.
 */
import { z } from 'zod';

const iso = z.string();
const accountId = z.number().int().positive();

export const MonitoredResource = z.object({ resource: z.string().min(1), user: z.string().optional() });

export const ActivitySubscription = z.object({
  id: z.number().int(),
  account: accountId,
  subscriptionType: z.enum(['changes', 'crawl', 'analytics']),
  crawlType: z.string(),
  monitoredResources: z.array(MonitoredResource),
  active: z.boolean(),
  disableReason: z.string().nullable(),
  isDefault: z.boolean(),
  expiry: iso,
  lastCursor: z.string().nullable(),
  lastCursorUpdatedAt: iso.nullable(),
  upstreamCheckpoint: z.string().nullable(),
  inaccessibleSince: iso.nullable(),
  crawlDone: z.boolean(),
  created: iso,
  modified: iso,
  api: z.enum(['storage', 'email']),
});
export type ActivitySubscription = z.infer<typeof ActivitySubscription>;

/** One activity for the live stream: what its v2 rendering needs (contract/activity-v2.ts), the v1 type and log position. */
export const ActivityItem = z.object({
  seq: z.number().int(),
  account: accountId,
  subscription: z.number().int(),
  type: z.enum(['add', 'delete', 'update', 'rename', 'move', 'copy', 'restore']),
  api: z.enum(['storage', 'email']),
  kind: z.enum(['file', 'folder', 'message']),
  /** Email tracking (spec 3): an open or a click of a sent message, v2 `access`. */
  subtype: z.enum(['email_open', 'email_click']).nullable(),
  path: z.string(),
  previousPath: z.string().nullable(),
  /** Resource id to open the file/folder (null for deletes and messages). */
  resourceId: z.string().nullable(),
  recordedAt: iso,
});
export type ActivityItem = z.infer<typeof ActivityItem>;

export const FollowerStatus = z.object({
  subscription: z.number().int(),
  account: accountId,
  mode: z.enum(['watching', 'polling', 'crawling', 'backing-off', 'done', 'stopped']),
  intervalMs: z.number().nullable(),
  lastRunAt: iso.nullable(),
  nextRunAt: iso.nullable(),
  error: z.string().nullable(),
});

export const Webhook = z.object({
  id: z.number().int(),
  url: z.string(),
  format: z.enum(['json', 'form']),
  account: accountId.nullable(),
  failingSince: iso.nullable(),
  paused: z.boolean(),
  created: iso,
});

export const DeliveryAttempt = z.object({
  id: z.number().int(),
  webhook: z.number().int(),
  account: z.number().int().nullable(),
  subscription: z.number().int().nullable(),
  kind: z.enum(['test', 'notify']),
  at: iso,
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  ok: z.boolean(),
  durationMs: z.number(),
  nextAttemptAt: iso.nullable(),
});

export const activityProcedures = {
  'activity.subscriptions.list': { input: z.object({ account: accountId }), output: z.array(ActivitySubscription) },
  'activity.subscriptions.create': {
    input: z.object({ account: accountId, active: z.boolean().default(true), subscriptionType: z.enum(['changes', 'crawl', 'analytics']).default('changes'), monitoredResources: z.array(MonitoredResource).optional() }),
    output: ActivitySubscription,
  },
  'activity.subscriptions.setActive': { input: z.object({ account: accountId, id: z.number().int(), active: z.boolean() }), output: ActivitySubscription },
  'activity.subscriptions.delete': { input: z.object({ account: accountId, id: z.number().int() }), output: z.object({}) },
  /** Reads the log after `cursor` (null = the oldest retained); the stream's live updates come from `activity.appended`. */
  'activity.list': {
    input: z.object({ account: accountId, cursor: z.string().nullable().default(null), pageSize: z.number().int().min(1).max(1000).default(200) }),
    output: z.object({ items: z.array(ActivityItem), cursor: z.string().nullable(), total: z.number().int() }),
  },
  'activity.followers': { input: z.object({}), output: z.array(FollowerStatus) },
  'activity.settings.get': { input: z.object({}), output: z.object({ trackActivity: z.boolean(), applicationId: z.string() }) },
  'activity.settings.set': { input: z.object({ trackActivity: z.boolean() }), output: z.object({ trackActivity: z.boolean(), applicationId: z.string() }) },
  'activity.webhooks.list': { input: z.object({}), output: z.array(Webhook.extend({ lastAttempts: z.array(DeliveryAttempt), nextAttemptAt: iso.nullable() })) },
  'activity.webhooks.create': { input: z.object({ url: z.string().url(), format: z.enum(['json', 'form']).default('json'), account: accountId.nullable().default(null) }), output: Webhook },
  'activity.webhooks.delete': { input: z.object({ id: z.number().int() }), output: z.object({}) },
} as const;

export const activityEvents = {
  /** After each committed batch of activity. */
  'activity.appended': z.object({ account: accountId, subscription: z.number().int(), count: z.number().int(), cursor: z.string() }),
  'activity.subscriptionsChanged': z.object({ account: accountId }),
  'activity.followersChanged': z.object({ followers: z.array(FollowerStatus) }),
} as const;
