/**
 * Handlers of the `activity.*` procedures (contract/activity.ts) over ActivityService, spread
 * into rpc/handlers.ts beside the other procedures.
 */
import type { z } from 'zod';
import type { activityProcedures } from '../contract/activity';
import type { ActivityService } from '../activity';
import type { Subscription } from '../activity/subscriptions';

type P = typeof activityProcedures;
export type ActivityHandlers = { [K in keyof P]: (input: z.output<P[K]['input']>) => Promise<z.output<P[K]['output']>> };

const view = (s: Subscription) => ({ ...s });

export function activityHandlers(a: ActivityService): ActivityHandlers {
  const settings = () => ({ trackActivity: a.subscriptions.trackActivity(), applicationId: a.webhooks.applicationId() });
  return {
    'activity.subscriptions.list': async ({ account }) => a.subscriptions.list(account).map(view),
    'activity.subscriptions.create': async ({ account, active, subscriptionType, monitoredResources }) =>
      view(await a.subscriptions.create(account, { active, subscriptionType, monitoredResources })),
    'activity.subscriptions.setActive': async ({ account, id, active }) => view(a.subscriptions.update(account, id, { active })),
    'activity.subscriptions.delete': async ({ account, id }) => (a.subscriptions.delete(account, id), {}),
    'activity.list': async ({ account, cursor, pageSize }) => {
      const page = a.log.list(account, null, { cursor: cursor ?? undefined, pageSize });
      return {
        items: page.records.map((r) => ({
          seq: r.seq,
          account: r.accountId,
          subscription: r.subscriptionId,
          type: r.type,
          api: r.api,
          kind: r.kind,
          subtype: r.subtype,
          path: r.path,
          previousPath: r.previousPath,
          resourceId: r.type === 'delete' || r.kind === 'message' ? null : a.serializeContext.toResource(r.accountId, { path: r.path, name: '', kind: r.kind, size: null, modified: null, created: null }).id,
          recordedAt: r.recordedAt,
        })),
        cursor: page.cursor,
        total: page.total,
      };
    },
    'activity.followers': async () => a.followers.status(),
    'activity.settings.get': async () => settings(),
    'activity.settings.set': async ({ trackActivity }) => (a.subscriptions.setTrackActivity(trackActivity), settings()),
    'activity.webhooks.list': async () => {
      const pending = a.webhooks.pending();
      return a.webhooks.list().map((w) => {
        const next = pending.filter((p) => p.webhook === w.id && p.nextAttemptAt !== null).map((p) => p.nextAttemptAt!);
        return { ...w, lastAttempts: a.webhooks.attempts(w.id, 20), nextAttemptAt: next.length ? new Date(Math.min(...next)).toISOString() : null };
      });
    },
    'activity.webhooks.create': async ({ url, format, account }) => a.webhooks.create({ url, format, account }),
    'activity.webhooks.delete': async ({ id }) => (a.webhooks.delete(id), {}),
  };
}
