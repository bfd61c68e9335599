/**
 * spec 3, Activity: a watched local folder deleted and created again (`rm -rf root && mkdir
 * root`) keeps reporting changes: the account's root folder, and a subscription's monitored
 * folder below it.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActivityRecord } from '../../src-main/activity/types';
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

async function setup(monitored?: string) {
  root = scratchDir('activity-recreated');
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'docs', 'before.txt'), 'before');
  h = await makeHarness({ followers: { pollIntervalMs: 200 } });
  const acc = await h.app.accounts.connect({ service: 'local', options: { path: root } });
  const resource = monitored ? (await h.app.storage.convertId(acc.id, monitored, 'folder', false)).id : undefined;
  const sub = await h.activity.subscriptions.create(acc.id, resource ? { monitoredResources: [{ resource }] } : {});
  await until(() => h!.activity.followers.status().find((s) => s.subscription === sub.id && s.mode === 'watching'), 10_000, 'watching');
  const records: ActivityRecord[] = [];
  const waitFor = (type: string, path: string) =>
    until(() => {
      records.splice(0, records.length, ...h!.activity.log.list(acc.id, sub.id).records);
      return records.some((r) => r.type === type && r.path === path) || undefined;
    }, 20_000, `${type} ${path}`).catch((e: Error) => {
      // Say what was recorded instead, and how the follower stands.
      throw new Error(`${e.message}; follower ${JSON.stringify(h!.activity.followers.status())}; records ${JSON.stringify(records.map((r) => [r.type, r.path]))}`);
    });
  return { root, waitFor, records };
}

describe('spec 3, Activity: local watch of a folder deleted and recreated', () => {
  it('the account root: later writes inside it are reported again', async () => {
    const { root, waitFor, records } = await setup();
    writeFileSync(join(root, 'one.txt'), '1');
    await waitFor('add', '/one.txt');
    rmSync(root, { recursive: true });
    await waitFor('delete', '/one.txt');
    mkdirSync(root);
    writeFileSync(join(root, 'two.txt'), '2');
    await waitFor('add', '/two.txt');
    mkdirSync(join(root, 'later'));
    writeFileSync(join(root, 'later', 'three.txt'), '3');
    await waitFor('add', '/later/three.txt');
    expect(records.filter((r) => r.type === 'add').map((r) => r.path)).toEqual(['/one.txt', '/two.txt', '/later', '/later/three.txt']);
  });

  it('a monitored folder: later writes inside it are reported again', async () => {
    const { root, waitFor } = await setup('/docs');
    rmSync(join(root, 'docs'), { recursive: true });
    await waitFor('delete', '/docs/before.txt');
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs', 'after.txt'), 'after');
    await waitFor('add', '/docs/after.txt');
  });
});
