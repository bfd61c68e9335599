/** spec 3, Subscription + States and transitions, through the endpoint functions REST will call. */
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import * as ep from '../../src-main/rest/activity';
import { SUBSCRIPTION_LIFETIME_MS, TRACK_ACTIVITY } from '../../src-main/activity/subscriptions';
import { generated, makeHarness, until, type Harness } from './helpers';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('spec 3, Subscription', () => {
  it('`default` is false unless the body asks for it (spec 3, Subscription: "Default false"); the alias names the default one', async () => {
    h = await makeHarness();
    const plain = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-default-1' } });
    const chosen = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-default-2' } });
    expect((await ep.createSubscription(h.activity, plain.id, {}, 2)).body).toMatchObject({ default: false });
    const marked = (await ep.createSubscription(h.activity, chosen.id, { default: true }, 2)).body as { id: number; default: boolean };
    expect(marked.default).toBe(true);
    expect((ep.getSubscription(h.activity, chosen.id, 'default', 2).body as { id: number }).id).toBe(marked.id);
    await expect(ep.createSubscription(h.activity, plain.id, { default: 'yes' }, 2)).rejects.toMatchObject({ code: 'invalid_parameters' });
  });

  it('POST creates one per account (201), a second is a conflict; default alias; last_cursor only on GET one', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-1' } });
    const created = await ep.createSubscription(h.activity, acc.id, { active: true, subscription_type: 'changes' }, 2);
    expect(created.status).toBe(201);
    const body = created.body as Record<string, unknown>;
    expect(body).toMatchObject({ account: acc.id, active: true, disable_reason: '', default: false, subscription_type: 'changes', crawl_type: 'external', type: 'subscription', api: 'activity', monitored_resources: [{ resource: 'root' }], monitored_resource_api: 'storage' });
    await expect(ep.createSubscription(h.activity, acc.id, {}, 2)).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/only one subscription per account/) });
    // `default` names the default subscription; with none marked, the account's only one.
    const viaAlias = ep.getSubscription(h.activity, acc.id, 'default', 1).body as Record<string, unknown>;
    expect(viaAlias.id).toBe(body.id);
    expect(viaAlias).toHaveProperty('last_cursor', null);
    expect(viaAlias).toHaveProperty('last_cursor_updated_at', null);
    const list = ep.listSubscriptions(h.activity, acc.id, 1).body as { objects: Record<string, unknown>[]; total: number; count: number; type: string; api: string };
    expect(list).toMatchObject({ total: 1, count: 1, type: 'object_list', api: 'activity' });
    expect(list.objects[0]).not.toHaveProperty('last_cursor');
    expect(() => ep.getSubscription(h!.activity, acc.id, '999', 1)).toThrow(/not found/);
  });

  it('subscription_type rules: crawl for storage, analytics only for mail', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-2' } });
    await expect(h.activity.subscriptions.create(acc.id, { subscriptionType: 'analytics' })).rejects.toThrow(/only for mail/);
    await expect(h.activity.subscriptions.create(acc.id, { subscriptionType: 'sync' as never })).rejects.toMatchObject({ code: 'not_implemented' });
    await expect(h.activity.subscriptions.create(acc.id, { subscriptionType: 'everything' as never })).rejects.toThrow(/subscription_type/);
    expect((await h.activity.subscriptions.create(acc.id, { subscriptionType: 'crawl' })).subscriptionType).toBe('crawl');
  });

  it('monitored_resources: validated against the caps (4 folders), immutable after creation', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-3' } });
    const folders = [];
    for (const n of ['a', 'b', 'c', 'd', 'e']) folders.push(await h.app.storage.mkdir(acc.id, 'root', n));
    const file = await h.app.storage.upload(acc.id, 'root', 'f.txt', Readable.from([Buffer.from('x')]));
    await expect(h.activity.subscriptions.create(acc.id, { monitoredResources: folders.map((f) => ({ resource: f.id })) })).rejects.toThrow(/At most 4/);
    await expect(h.activity.subscriptions.create(acc.id, { monitoredResources: [{ resource: file.id }] })).rejects.toThrow(/not a folder/);
    // docs/rest.md, Activity and Ids in request bodies: what cannot be an id is a bad parameter;
    // a well-formed id that names nothing is not_found.
    await expect(h.activity.subscriptions.create(acc.id, { monitoredResources: [{ resource: 'tampered-id' }] })).rejects.toMatchObject({ code: 'invalid_parameters' });
    const id = folders[0]!.id;
    const tampered = `${id.slice(0, 20)}${id[20] === 'A' ? 'B' : 'A'}${id.slice(21)}`;
    await expect(h.activity.subscriptions.create(acc.id, { monitoredResources: [{ resource: tampered }] })).rejects.toMatchObject({ code: 'not_found' });
    const sub = await h.activity.subscriptions.create(acc.id, { monitoredResources: [{ resource: folders[0]!.id }, { resource: folders[1]!.id }] });
    expect(await h.activity.subscriptions.monitoredPaths(sub)).toEqual(['/a', '/b']);
    expect(() => ep.updateSubscription(h!.activity, acc.id, 'default', { monitored_resources: [{ resource: 'root' }] }, 2)).toThrow(/cannot be changed after creation/);
  });

  it('PATCH active false → disable_reason deactivated_by_user; true → empty', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-4' } });
    await h.activity.subscriptions.create(acc.id, {});
    expect(ep.updateSubscription(h.activity, acc.id, 'default', { active: false }, 2).body).toMatchObject({ active: false, disable_reason: 'deactivated_by_user' });
    expect(ep.updateSubscription(h.activity, acc.id, 'default', { active: true }, 2).body).toMatchObject({ active: true, disable_reason: '' });
  });

  it('DELETE (204) removes the subscription and all its activity', async () => {
    h = await makeHarness();
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-5' } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    h.activity.log.append(sub.id, acc.id, generated(20));
    expect(ep.deleteSubscription(h.activity, acc.id, 'default').status).toBe(204);
    expect(h.app.db.prepare('SELECT COUNT(*) AS n FROM activity WHERE account_id = ?').get(acc.id)).toEqual({ n: 0 });
    expect(ep.listSubscriptions(h.activity, acc.id, 2).body).toMatchObject({ total: 0, objects: [] });
    const again = await h.activity.subscriptions.create(acc.id, {});
    expect(h.activity.log.list(acc.id, again.id, {}).records).toEqual([]);
  });

  it('expiry is refreshed near its end; 90 days inaccessible removes subscription and activity', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    h = await makeHarness({ clock: () => now });
    const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-6' } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    expect(Date.parse(sub.expiry)).toBe(now + SUBSCRIPTION_LIFETIME_MS);
    now += SUBSCRIPTION_LIFETIME_MS - 3600_000;
    expect(h.activity.subscriptions.maintain().refreshed).toEqual([sub.id]);
    expect(Date.parse(h.activity.subscriptions.get(acc.id, sub.id).expiry)).toBe(now + SUBSCRIPTION_LIFETIME_MS);
    h.activity.log.append(sub.id, acc.id, generated(2));
    await h.activity.followers.pollNow(sub.id); // its first walk (which marks it accessible) is over
    h.activity.subscriptions.markAccessible(sub.id, false);
    now += 89 * 24 * 3600_000;
    expect(h.activity.subscriptions.maintain().removed).toEqual([]);
    now += 24 * 3600_000;
    expect(h.activity.subscriptions.maintain().removed).toEqual([sub.id]);
    expect(h.activity.subscriptions.list(acc.id)).toEqual([]);
    expect(h.app.db.prepare('SELECT COUNT(*) AS n FROM activity').get()).toEqual({ n: 0 });
  });

  it('the track-activity setting gives accounts connected afterwards a default subscription', async () => {
    h = await makeHarness();
    const before = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-7a' } });
    h.activity.subscriptions.setTrackActivity(true);
    expect(h.app.settings.get(TRACK_ACTIVITY, false)).toBe(true);
    const after = await h.app.accounts.connect({ service: 'memory', options: { store: 'subs-7b' } });
    const sub = await until(() => h!.activity.subscriptions.list(after.id)[0], 5000, 'auto subscription');
    expect(sub).toMatchObject({ isDefault: true, active: true, subscriptionType: 'changes' });
    expect(h.activity.subscriptions.list(before.id)).toEqual([]);
    // The hook for reconnects creates one when missing and never a second.
    h.activity.subscriptions.delete(after.id, 'default');
    expect(await h.activity.subscriptions.accountConnected(after.id)).not.toBeNull();
    expect(await h.activity.subscriptions.accountConnected(after.id)).toBeNull();
  });
});
