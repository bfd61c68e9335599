/** The dashboard's `activity.*` procedures: outputs parse against contract/activity.ts. */
import { afterEach, describe, expect, it } from 'vitest';
import { activityHandlers } from '../../src-main/rpc/activity';
import { activityProcedures } from '../../src-main/contract/activity';
import { v2Event } from '../../src-main/contract/activity-v2';
import { V1_TYPES, type ActivityChange } from '../../src-main/activity/types';
import { activityV2 } from '../../src-main/rest/shapes/activity';
import { generated, makeHarness, type Harness } from './helpers';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('contract activity.* (dashboard, spec 3)', () => {
  it('each procedure returns its declared output', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'handlers' } });
    const call = async <K extends keyof typeof activityProcedures>(name: K, input: unknown) => {
      const p = activityProcedures[name];
      const out = await (activityHandlers(h!.activity)[name] as (i: unknown) => Promise<unknown>)(p.input.parse(input));
      return p.output.parse(out) as never;
    };
    const sub = (await call('activity.subscriptions.create', { account: acc.id })) as { id: number };
    h.activity.log.append(sub.id, acc.id, generated(3));
    const page = (await call('activity.list', { account: acc.id, pageSize: 2 })) as { items: { path: string; resourceId: string }[]; cursor: string; total: number };
    expect(page.items.map((i) => i.path)).toEqual(['/gen/file-0.txt', '/gen/file-1.txt']);
    expect(page.items[0]!.resourceId).toBe(h.app.storage.idOf(acc.id, '/gen/file-0.txt'));
    expect(page.total).toBe(3);
    expect(((await call('activity.list', { account: acc.id, cursor: page.cursor })) as { items: unknown[] }).items).toHaveLength(1);
    expect(await call('activity.subscriptions.setActive', { account: acc.id, id: sub.id, active: false })).toMatchObject({ active: false, disableReason: 'deactivated_by_user' });
    expect(await call('activity.subscriptions.list', { account: acc.id })).toHaveLength(1);
    expect(await call('activity.settings.set', { trackActivity: true })).toMatchObject({ trackActivity: true, applicationId: expect.stringMatching(/^tributary-/) });
    expect(await call('activity.followers', {})).toEqual([]);
    expect(await call('activity.webhooks.list', {})).toEqual([]);
    expect(await call('activity.subscriptions.delete', { account: acc.id, id: sub.id })).toEqual({});
  });
});

describe('the live stream and REST v2 render the same event (spec 3, Activity v2: event_category, event_type, event_subtype)', () => {
  it('every v1 type, and an email open and click (spec 3, Email tracking: access)', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'v2-table' } });
    const sub = h.activity.subscriptions.list(acc.id)[0] ?? (await h.activity.subscriptions.create(acc.id, {}));
    const meta = (path: string, kind: 'file' | 'message') => ({ path, name: path.slice(1), kind, size: 1, modified: null, created: null });
    const changes: ActivityChange[] = [
      ...V1_TYPES.map((type): ActivityChange => ({ type, kind: 'file', path: `/${type}.txt`, metadata: meta(`/${type}.txt`, 'file') })),
      { type: 'update', api: 'email', kind: 'message', path: '<m1@example.test>', metadata: meta('<m1@example.test>', 'message'), subtype: 'email_open' },
      { type: 'update', api: 'email', kind: 'message', path: '<m2@example.test>', metadata: meta('<m2@example.test>', 'message'), subtype: 'email_click', link: { tag: '<a href="https://example.test/">', link: 'https://example.test/', text: 'x' } },
    ];
    h.activity.log.append(sub.id, acc.id, changes);
    const p = activityProcedures['activity.list'];
    const page = p.output.parse(await activityHandlers(h.activity)['activity.list'](p.input.parse({ account: acc.id })));
    const records = h.activity.log.list(acc.id, sub.id, {}).records;
    expect(page.items).toHaveLength(changes.length);
    const stream = page.items.map((i) => v2Event(i));
    const rest = records.map((r) => {
      const o = activityV2(h!.activity.serializeContext, r);
      return { category: o.event_category, type: o.event_type, subtype: o.event_subtype };
    });
    expect(stream).toEqual(rest);
    expect(stream.slice(-2)).toEqual([
      { category: 'email', type: 'access', subtype: 'email_open' },
      { category: 'email', type: 'access', subtype: 'email_click' },
    ]);
    expect(stream.find((_, i) => page.items[i]!.type === 'restore')).toEqual({ category: 'storage', type: 'update', subtype: 'untrash' });
  });
});
