/**
 * Two-way sync benchmark (docs/sync.md): the same pair of folders synced by Tributary's engine,
 * `unison` 2.52 and `rclone bisync` 1.60. Both folders are on this disk (unison needs itself on
 * the far side of ssh, which the test sshd does not run), so the figures are the engines' own
 * cost: scanning, hashing, deciding, copying.
 *   npm run bench sync    (or node scripts/run-ts.mjs test/bench/sync.bench.ts)
 *   BENCH_SYNC_FILES (default 10000) and BENCH_SYNC_MB (default 1024): the first sync;
 *   BENCH_SYNC_NOCHANGE (default 50000): files of the no-change pass (target < 1 s, < 100 MB RSS).
 * Prints seconds and peak RSS per tool and Tributary's speed ÷ each peer's (>1 = Tributary faster).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalConnector } from '../../src-main/connectors/local';
import { SyncEngine } from '../../src-main/sync/engine';
import { scratchDir } from '../servers/util';
import { syncDb } from '../sync/scenario';
import { RATIO_LABEL, timeRatio } from './ratio';

const FILES = Number(process.env.BENCH_SYNC_FILES ?? 10_000);
const MB = Number(process.env.BENCH_SYNC_MB ?? 1024);
const NOCHANGE = Number(process.env.BENCH_SYNC_NOCHANGE ?? 50_000);

/** `n` files of `bytes` each, 100 to a folder. */
function makeTree(dir: string, n: number, bytes: number): void {
  const block = Buffer.alloc(bytes);
  for (let i = 0; i < n; i++) {
    const folder = join(dir, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(folder, { recursive: true });
    block.writeUInt32LE(i, 0);
    writeFileSync(join(folder, `f${i}.bin`), block);
  }
}

interface Run {
  seconds: number;
  rssMB: number | null;
}

/** A peer run under /usr/bin/time: wall seconds and peak RSS. */
function peer(cmd: string, args: string[], env: NodeJS.ProcessEnv): Run {
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { env, encoding: 'utf8', maxBuffer: 1 << 28 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const kb = Number(/(\d+)\s*$/.exec(r.stderr.trim())?.[1]);
  return { seconds, rssMB: Number.isFinite(kb) ? kb / 1024 : null };
}

async function tributary(src: string, dst: string, work: string): Promise<{ first: Run; again: Run }> {
  const db = syncDb(join(work, 'sync.db'));
  const remote = new LocalConnector({ path: dst, trashDir: join(work, 'trash') });
  const engine = new SyncEngine(db, async () => remote, { manual: true, concurrency: 8 });
  const pair = await engine.create({ localPath: src, account: 1, remotePath: '/' });
  const timed = async (): Promise<Run> => {
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const t0 = process.hrtime.bigint();
    await engine.run(pair.id);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    return { seconds, rssMB: peak / 2 ** 20 };
  };
  const first = await timed();
  const again = await timed();
  await engine.close();
  db.close();
  return { first, again };
}

function unison(src: string, dst: string, work: string): { first: Run; again: Run } {
  const env = { ...process.env, UNISON: join(work, 'unison') };
  mkdirSync(env.UNISON, { recursive: true });
  const args = [src, dst, '-batch', '-auto', '-silent', '-times', '-ui', 'text', '-confirmbigdel=false'];
  return { first: peer('unison', args, env), again: peer('unison', args, env) };
}

function bisync(src: string, dst: string, work: string): { first: Run; again: Run } {
  const env = { ...process.env, RCLONE_CONFIG: '/dev/null' };
  const base = ['bisync', src, dst, '--workdir', join(work, 'bisync'), '-q'];
  return { first: peer('rclone', [...base, '--resync'], env), again: peer('rclone', base, env) };
}

function row(tool: string, r: { first: Run; again: Run }, firstMB: number): string {
  const rss = (x: Run) => (x.rssMB === null ? '—' : x.rssMB.toFixed(0));
  return `${tool.padEnd(16)} first ${r.first.seconds.toFixed(2).padStart(7)} s (${(firstMB / r.first.seconds).toFixed(1)} MB/s, ${rss(r.first)} MB RSS)   no-change ${r.again.seconds.toFixed(2).padStart(6)} s (${rss(r.again)} MB RSS)`;
}

export async function main(): Promise<void> {
  const dir = scratchDir('bench-sync');
  try {
    const bytes = Math.max(1, Math.floor((MB * 2 ** 20) / FILES));
    const results: Record<string, { first: Run; again: Run }> = {};
    const noChange: Record<string, Run> = {};
    for (const [tool, fn] of [
      ['tributary', tributary],
      ['unison', unison],
      ['rclone bisync', bisync],
    ] as const) {
      for (const [label, n, size] of [
        ['first', FILES, bytes],
        ['nochange', NOCHANGE, 16],
      ] as const) {
        const base = join(dir, `${tool.replace(' ', '-')}-${label}`);
        const [src, dst, work] = [join(base, 'src'), join(base, 'dst'), join(base, 'work')];
        for (const d of [src, dst, work]) mkdirSync(d, { recursive: true });
        makeTree(src, n, size);
        const r = await fn(src, dst, work);
        if (label === 'first') results[tool] = r;
        else noChange[tool] = r.again;
        rmSync(base, { recursive: true, force: true });
      }
    }
    const totalMB = (bytes * FILES) / 2 ** 20;
    console.log(`\nTwo-way sync, local folder ↔ local folder: first sync of ${FILES} files (${totalMB.toFixed(0)} MB), no-change pass over ${NOCHANGE} files`);
    for (const tool of Object.keys(results)) console.log(row(tool, { first: results[tool].first, again: noChange[tool] }, totalMB));
    console.log(`\nTributary's speed ÷ peer's ${RATIO_LABEL}`);
    for (const tool of ['unison', 'rclone bisync']) {
      console.log(`  vs ${tool.padEnd(14)} first sync ${timeRatio(results.tributary.first.seconds, results[tool].first.seconds)}   no-change pass ${timeRatio(noChange.tributary.seconds, noChange[tool].seconds)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
