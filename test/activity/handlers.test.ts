/** The dashboard's `activity.*` procedures: outputs parse against contract/activity.ts. */
import { afterEach, describe, expect, it } from 'vitest';
import { activityHandlers } from '../../src-main/activity/handlers';
import { activityProcedures } from '../../src-main/contract/activity';
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
