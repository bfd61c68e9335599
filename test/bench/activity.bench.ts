/**
 * Activity bench (spec 3): change-to-log latency, ingest rate, and one poll over a big tree.
 *   node scripts/run-ts.mjs test/bench/activity.bench.ts
 * Sizes: ACT_LAT_N (latency samples, 100), ACT_INGEST_N (100000), ACT_TREE_FILES (50000),
 * ACT_TREE_FOLDERS (500). Backends: local (its watch), local, S3 and WebDAV (polling
 * walker).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { request } from 'undici';
import { createApp, type App } from '../../src-main/app';
import type { ActivityChange } from '../../src-main/activity/types';
import { scratchDir } from '../servers/util';
import { startS3rver } from '../servers/s3';
import { startApache, type ApacheServer } from '../servers/apache';

const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (x: number) => `${x.toFixed(1)} ms`;

async function harness(followers: Record<string, unknown> = {}) {
  const dir = scratchDir('bench-activity');
  const app = await createApp({ dataDir: dir, defaultLocalFolder: false, activity: { followers } });
  const activity = app.activity;
  return {
    app,
    activity,
    async close() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Time from a write to the moment its activity is committed, per sample. */
async function latency(label: string, followers: Record<string, unknown>, n: number, gapMs: number) {
  const h = await harness(followers);
  const folder = scratchDir('bench-activity-local');
  const acc = await h.app.accounts.connect({ service: 'local', options: { path: folder } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  for (;;) {
    const s = h.activity.followers.status()[0];
    if (s?.lastRunAt && (followers.forcePolling || s.mode === 'watching')) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = new Map<string, number>();
  const samples: number[] = [];
  const off = h.activity.log.onAppended((info) => {
    const now = performance.now();
    for (const r of h.activity.log.list(acc.id, sub.id, { cursor: undefined, pageSize: 1000 }).records) {
      const t = started.get(r.path);
      if (t !== undefined && r.seq >= info.firstSeq && r.seq <= info.lastSeq) {
        samples.push(now - t);
        started.delete(r.path);
      }
    }
  });
  for (let i = 0; i < n; i++) {
    const name = `/lat-${i}.txt`;
    started.set(name, performance.now());
    writeFileSync(join(folder, name), `sample ${i}`);
    await new Promise((r) => setTimeout(r, gapMs));
  }
  const deadline = Date.now() + 30_000;
  while (started.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  off();
  console.log(`${label}: n=${samples.length}/${n}  median ${ms(pct(samples, 50))}  p99 ${ms(pct(samples, 99))}  max ${ms(Math.max(...samples))}`);
  await h.close();
  rmSync(folder, { recursive: true, force: true });
}

async function s3Latency(n: number, intervalMs: number) {
  const s3 = await startS3rver('bench');
  const h = await harness({ pollIntervalMs: intervalMs });
  try {
    const acc = await h.app.accounts.connect({ service: 's3', options: s3.options });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id);
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const key = `lat-${i}.txt`;
      const t = performance.now();
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: 'x' }));
      const seen = new Promise<void>((resolve) => {
        const off = h.activity.log.onAppended(() => {
          if (h.activity.log.list(acc.id, sub.id, { pageSize: 1000 }).records.some((r) => r.path === `/${key}`)) {
            off();
            resolve();
          }
        });
      });
      await seen;
      samples.push(performance.now() - t);
    }
    console.log(`S3 (s3rver) poll every ${intervalMs} ms, object put → log: n=${n}  median ${ms(pct(samples, 50))}  p99 ${ms(pct(samples, 99))}`);
    client.destroy();
  } finally {
    await h.close();
    await s3.stop();
  }
}

async function ingest(n: number) {
  const h = await harness();
  const acc = await h.app.accounts.connect({ service: 'memory', options: { store: 'bench-ingest' } });
  const sub = await h.activity.subscriptions.create(acc.id, {});
  await h.activity.followers.close();
  const batch = 1000;
  const t = performance.now();
  for (let i = 0; i < n; i += batch) {
    const changes: ActivityChange[] = [];
    for (let k = i; k < Math.min(n, i + batch); k++) {
      const path = `/bench/f-${k}.bin`;
      changes.push({ type: 'add', kind: 'file', path, metadata: { path, name: `f-${k}.bin`, kind: 'file', size: k, modified: new Date().toISOString(), created: null, etag: `e${k}` } });
    }
    h.activity.log.append(sub.id, acc.id, changes);
  }
  const s = (performance.now() - t) / 1000;
  console.log(`ingest: ${n} changes in batches of ${batch} (retention on): ${s.toFixed(2)} s = ${Math.round(n / s)} events/s`);
  const t2 = performance.now();
  for (let i = 0; i < 2000; i++) h.activity.log.append(sub.id, acc.id, [{ type: 'update', kind: 'file', path: `/one/${i}`, metadata: null }]);
  const s2 = (performance.now() - t2) / 1000;
  console.log(`ingest: 2000 single-change commits: ${Math.round(2000 / s2)} commits/s`);
  await h.close();
}

/**
 * One poll over a tree of `files` files with 10 changes, on a backend whose storage is the
 * folder `root` on this disk (the tree is made there directly, not through the protocol).
 */
async function bigTreePoll(label: string, root: string, connect: (app: App) => Promise<number>, files: number, folders: number) {
  const t0 = performance.now();
  for (let d = 0; d < folders; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < files / folders; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), 'x');
  }
  console.log(`tree: ${files} files in ${folders} folders created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const h = await harness({ pollIntervalMs: 3600_000, forcePolling: true });
  try {
    const acc = await connect(h.app);
    const sub = await h.activity.subscriptions.create(acc, {});
    let t = performance.now();
    await h.activity.followers.pollNow(sub.id);
    console.log(`${label} poll, baseline walk of ${files} files: ${((performance.now() - t) / 1000).toFixed(2)} s`);
    for (let i = 0; i < 10; i++) {
      if (i < 5) writeFileSync(join(root, `d${(i * 37) % folders}`, 'f1.txt'), 'changed content');
      else writeFileSync(join(root, `d${(i * 37) % folders}`, `new-${i}.txt`), 'new');
    }
    t = performance.now();
    await h.activity.followers.pollNow(sub.id);
    const took = performance.now() - t;
    const got = h.activity.log.list(acc, sub.id, {}).records.length;
    console.log(`${label} poll over ${files} files with 10 changes: ${(took / 1000).toFixed(2)} s, ${got} activities recorded`);
  } finally {
    await h.close();
  }
}

/** WebDAV (Apache): a PUT by another client → committed activity, polling every `intervalMs`. */
async function webdavLatency(dav: ApacheServer, n: number, intervalMs: number) {
  const h = await harness({ pollIntervalMs: intervalMs });
  try {
    const acc = await h.app.accounts.connect({ service: 'webdav', options: davOptions(dav) });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id);
    const auth = `Basic ${Buffer.from(`${dav.user}:${dav.password}`).toString('base64')}`;
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const name = `lat-${i}.txt`;
      const seen = new Promise<void>((resolve) => {
        const off = h.activity.log.onAppended(() => {
          if (h.activity.log.list(acc.id, sub.id, { pageSize: 1000 }).records.some((r) => r.path === `/${name}`)) {
            off();
            resolve();
          }
        });
      });
      const t = performance.now();
      const res = await request(`${dav.url}/${name}`, { method: 'PUT', body: 'x', headers: { authorization: auth } });
      await res.body.dump();
      await seen;
      samples.push(performance.now() - t);
    }
    console.log(`WebDAV (Apache) poll every ${intervalMs} ms, PUT → log: n=${n}  median ${ms(pct(samples, 50))}  p99 ${ms(pct(samples, 99))}`);
  } finally {
    await h.close();
  }
}

const davOptions = (dav: ApacheServer) => ({ protocol: 'http', host: dav.host, port: dav.port, path: '/', username: dav.user, password: dav.password });

export async function main(): Promise<void> {
  const n = env('ACT_LAT_N', 100);
  await latency('local (its watch), file write → committed activity', {}, n, 30);
  await latency('local (polling walker, 1 s interval), file write → committed activity', { forcePolling: true, pollIntervalMs: 1000 }, Math.min(n, 30), 137);
  await s3Latency(Math.min(n, 20), 1000);
  await ingest(env('ACT_INGEST_N', 100_000));
  const files = env('ACT_TREE_FILES', 50_000);
  const folders = env('ACT_TREE_FOLDERS', 500);
  const local = scratchDir('bench-activity-tree');
  await bigTreePoll('local', local, async (app) => (await app.accounts.connect({ service: 'local', options: { path: local } })).id, files, folders);
  rmSync(local, { recursive: true, force: true });
  const dav = await startApache();
  try {
    await webdavLatency(dav, Math.min(n, 20), 1000);
    await bigTreePoll('WebDAV (Apache)', dav.root, async (app) => (await app.accounts.connect({ service: 'webdav', options: davOptions(dav) })).id, files, folders);
  } finally {
    await dav.stop();
  }
}
