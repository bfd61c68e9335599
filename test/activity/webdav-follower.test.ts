/**
 * spec 3, Activity from a WebDAV server, which has no push: the polling walker against a real
 * Apache mod_dav. Files are PUT, MOVEd and DELETEd by curl, from outside the app (spec 3:
 * "a file PUT on Apache WebDAV by curl → activity within one poll").
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApache, type ApacheServer } from '../servers/apache';
import { makeHarness, type Harness } from './helpers';

let dav: ApacheServer;
let h: Harness;
beforeAll(async () => {
  dav = await startApache();
  h = await makeHarness({ followers: { pollIntervalMs: 3600_000 } }); // polled explicitly below
});
afterAll(async () => {
  await h?.close();
  await dav?.stop();
});

/** curl as another WebDAV client would use it; fails the test on any HTTP error. */
const curl = (...args: string[]) => execFileSync('curl', ['-sf', '-u', `${dav.user}:${dav.password}`, ...args], { encoding: 'utf8' });

describe('spec 3, Activity: WebDAV polling walker', () => {
  it('curl PUT → add within one poll; a nested change is found; MOVE → rename; DELETE → delete; v1 and v2 shapes', async () => {
    const acc = await h.app.accounts.connect({
      service: 'webdav',
      options: { protocol: 'http', host: dav.host, port: dav.port, path: '/', username: dav.user, password: dav.password },
    });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id); // baseline

    curl('-X', 'MKCOL', `${dav.url}/team/`);
    curl('-X', 'PUT', '--data-binary', 'the plan', `${dav.url}/team/plan.txt`);
    await h.activity.followers.pollNow(sub.id);
    let page = h.activity.log.list(acc.id, sub.id, {});
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /team', 'add /team/plan.txt']);

    // A change two levels down: Apache's folder ETags do not change with it, the walk still finds it.
    curl('-X', 'MKCOL', `${dav.url}/team/deep/`);
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /team/deep']);
    curl('-X', 'PUT', '--data-binary', '# notes', `${dav.url}/team/deep/notes.md`);
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /team/deep/notes.md']);

    curl('-X', 'MOVE', '-H', `Destination: ${dav.url}/team/plan-final.txt`, `${dav.url}/team/plan.txt`);
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    const types = page.records.map((r) => r.type);
    // A polled backend sees only before and after; a same-size file at a new name in the same
    // folder is reported as one rename, not delete + add (docs/activity.md).
    expect(types).toEqual(['rename']);
    expect(page.records[0]).toMatchObject({ path: '/team/plan-final.txt', previousPath: '/team/plan.txt' });

    // A file fresh from a write has a weak ETag on Apache (W/"…") that turns strong a second
    // later with the same value: no activity may come of that.
    curl('-X', 'PUT', '--data-binary', 'fresh', `${dav.url}/team/fresh.txt`);
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /team/fresh.txt']);
    await new Promise((r) => setTimeout(r, 1100));
    await h.activity.followers.pollNow(sub.id);
    expect(h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! }).records).toEqual([]);

    curl('-X', 'DELETE', `${dav.url}/team/deep/notes.md`);
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['delete /team/deep/notes.md']);
  }, 60_000);
});
