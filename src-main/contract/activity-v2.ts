/**
 * spec 3, Activity v2: the event_category / event_type / event_subtype of an activity, from
 * its v1 type. One table for the REST v2 serializer (src-main/rest/shapes/activity.ts) and the
 * dashboard's live stream, so both say the same thing. Pure TS: the renderer imports it.
 */
import type { ActivityItem } from './activity';

export type V2EventType = 'add' | 'update' | 'delete' | 'access';

/**
 * v1 type → v2 (event_type, event_subtype). Plain add/update/delete have no subtype in the
 * spec's table, so `event_subtype` is null there; restore is storage's `untrash`.
 */
export const V2_MAPPING: Record<ActivityItem['type'], { eventType: V2EventType; subtype: string | null }> = {
  add: { eventType: 'add', subtype: null },
  update: { eventType: 'update', subtype: null },
  delete: { eventType: 'delete', subtype: null },
  rename: { eventType: 'update', subtype: 'rename' },
  move: { eventType: 'update', subtype: 'move' },
  copy: { eventType: 'add', subtype: 'copy' },
  restore: { eventType: 'update', subtype: 'untrash' },
};

export interface V2Event {
  category: 'storage' | 'email';
  type: V2EventType;
  subtype: string | null;
}

/**
 * The v2 event of an activity. Email tracking (spec 3) records an access to a sent message:
 * `access` with the tracking subtype (`email_open`, `email_click`), whatever its v1 type.
 */
export function v2Event(a: { type: ActivityItem['type']; api: 'storage' | 'email'; subtype: ActivityItem['subtype'] }): V2Event {
  const m = a.subtype ? { eventType: 'access' as const, subtype: a.subtype } : V2_MAPPING[a.type];
  return { category: a.api === 'email' ? 'email' : 'storage', type: m.eventType, subtype: m.subtype };
}
