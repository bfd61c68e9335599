/**
 * spec 3, Activity from an object store: the polling walker's listing diff against a real S3
 * server (s3rver). Objects are put and deleted with the AWS SDK from outside the app.
 */
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3rver, type S3Server } from '../servers/s3';
import { makeHarness, until, type Harness } from './helpers';

let s3: S3Server;
let h: Harness;
beforeAll(async () => {
  s3 = await startS3rver('activity');
  h = await makeHarness({ followers: { pollIntervalMs: 3600_000 } }); // polled explicitly below
});
afterAll(async () => {
  await h?.close();
  await s3?.stop();
});

describe('spec 3, Activity: S3 listing diff', () => {
  it('an object put into the bucket → add within one poll; updated → update; deleted → delete', async () => {
    const acc = await h.app.accounts.connect({ service: 's3', options: s3.options });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id); // baseline
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'reports/q3.csv', Body: 'a,b\n1,2\n' }));
    await h.activity.followers.pollNow(sub.id);
    let page = h.activity.log.list(acc.id, sub.id, {});
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /reports', 'add /reports/q3.csv']);
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'reports/q3.csv', Body: 'a,b\n1,2\n3,4\n' }));
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['update /reports/q3.csv']);
    expect(page.records[0]!.metadata).toMatchObject({ size: 12 });
    await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: 'reports/q3.csv' }));
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    expect(page.records.map((r) => r.type)).toContain('delete');
    expect(page.records.find((r) => r.type === 'delete')?.previousMetadata?.path).toMatch(/^\/reports/);
    client.destroy();
  }, 60_000);
});

describe('followers: back-off on errors (spec 3, Activity sources)', () => {
  it('server down → backing-off with doubling interval and the subscription marked inaccessible; back up → polling again', async () => {
    const h2 = await makeHarness({ followers: { pollIntervalMs: 100, maxBackoffMs: 800 } });
    try {
      const acc = await h2.app.accounts.connect({ service: 's3', options: s3.options });
      const sub = await h2.activity.subscriptions.create(acc.id, {});
      const status = () => h2.activity.followers.status().find((s) => s.subscription === sub.id);
      await until(() => status()?.lastRunAt ?? undefined, 10_000, 'first poll');
      await s3.pause();
      const intervals = new Set<number>();
      await until(() => {
        const s = status();
        if (s?.mode === 'backing-off' && s.intervalMs) intervals.add(s.intervalMs);
        return intervals.has(800) || undefined;
      }, 30_000, 'back-off up to the cap');
      expect([...intervals].sort((a, b) => a - b)).toEqual(expect.arrayContaining([200, 400, 800]));
      expect(status()!.error).toBeTruthy();
      expect(h2.activity.subscriptions.get(acc.id, sub.id).inaccessibleSince).not.toBeNull();
      await s3.resume();
      await until(() => (status()?.mode === 'polling' && status()?.error === null) || undefined, 30_000, 'recovery');
      expect(status()!.intervalMs).toBe(100);
      expect(h2.activity.subscriptions.get(acc.id, sub.id).inaccessibleSince).toBeNull();
    } finally {
      await h2.close();
    }
  }, 90_000);
});
