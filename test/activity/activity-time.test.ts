/**
 * spec 3, Activity v1 (`modified`: when the activity occurred) and v2 (`timestamp`: when it
 * occurred), and the activity list's rules (returned in the order the service learned of it;
 * `from`/`until` select a time range): the time of an activity is when Tributary learned of the
 * change, not the file's modification time, which stays in the metadata.
 */
import { renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as ep from '../../src-main/rest/activity';
import { scratchDir } from '../servers/util';
import { makeHarness, until, type Harness } from './helpers';

let h: Harness | undefined;
let root: string | undefined;
afterEach(async () => {
  await h?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  h = undefined;
  root = undefined;
});

type V1 = { type: string; modified: string; metadata: { path: string; modified: string } | null };
type V2 = { event_subtype: string | null; timestamp: string };

describe.each(['watch', 'poll'] as const)('spec 3, Activity time (%s)', (mode) => {
  it('a file last modified in 2020, renamed now, reports now; the stream is in time order; from/until agree', async () => {
    root = scratchDir('activity-time');
    h = await makeHarness({ followers: { pollIntervalMs: 200, forcePolling: mode === 'poll' } });
    const old = new Date('2020-03-01T10:00:00Z');
    for (const name of ['old.txt', 'other.txt']) {
      writeFileSync(join(root, name), name);
      utimesSync(join(root, name), old, old);
    }
    const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await until(() => h!.activity.followers.status().find((s) => s.subscription === sub.id && s.lastRunAt !== null && (mode === 'poll' || s.mode === 'watching')), 10_000, 'follower ready');

    const before = new Date();
    renameSync(join(root, 'old.txt'), join(root, 'renamed.txt'));
    await until(() => (ep.listActivity(h!.activity, acc.id, 'default', { cursor: 'after-auth' }, 1).body as { objects: V1[] }).objects.some((o) => o.type === 'rename') || undefined, 10_000, 'rename');
    await new Promise((r) => setTimeout(r, 20));
    const between = new Date();
    renameSync(join(root, 'other.txt'), join(root, 'other-renamed.txt'));
    await until(() => (ep.listActivity(h!.activity, acc.id, 'default', { cursor: 'after-auth' }, 1).body as { objects: V1[] }).objects.filter((o) => o.type === 'rename').length === 2 || undefined, 10_000, 'second rename');
    const after = new Date();

    const v1 = (ep.listActivity(h.activity, acc.id, 'default', { cursor: 'after-auth' }, 1).body as { objects: V1[] }).objects;
    const v2 = (ep.listActivity(h.activity, acc.id, 'default', { cursor: 'after-auth' }, 2).body as { objects: V2[] }).objects;
    const first = v1.find((o) => o.metadata?.path === '/renamed.txt')!;
    expect(first.metadata!.modified).toBe(old.toISOString()); // the file's own time stays in its metadata
    expect(Date.parse(first.modified)).toBeGreaterThanOrEqual(before.getTime() - 1);
    expect(Date.parse(first.modified)).toBeLessThanOrEqual(between.getTime());
    // Cursor order is time order, in both versions, and v2 says the same time as v1.
    const times = v1.map((o) => Date.parse(o.modified));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(v2.map((o) => o.timestamp)).toEqual(v1.map((o) => o.modified));

    // from/until select by that same time: only the second rename lies in [between, after].
    const ranged = (ep.listActivity(h.activity, acc.id, 'default', { from: between.toISOString(), until: new Date(after.getTime() + 1).toISOString() }, 1).body as { objects: V1[] }).objects;
    expect(ranged.map((o) => o.metadata?.path)).toEqual(['/other-renamed.txt']);
  });
});
