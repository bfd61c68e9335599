/**
 * Two-way sync benchmark (docs/sync.md): the same pair of folders synced by Tributary's engine,
 * `unison` 2.52 and `rclone bisync` 1.60. Both folders are on this disk (unison needs itself on
 * the far side of ssh, which the test sshd does not run), so the figures are the engines' own
 * cost: scanning, hashing, deciding, copying.
 *   npm run bench sync    (or node scripts/run-ts.mjs test/bench/sync.bench.ts)
 *   BENCH_SYNC_FILES (default 10000) and BENCH_SYNC_MB (default 1024): the first sync;
 *   BENCH_SYNC_NOCHANGE (default `--entries`, else 50000): files of the no-change pass (target
 *   < 1 s, < 100 MB RSS above idle); BENCH_SYNC_PEERS=none leaves the peers out.
 * Each Tributary run is a child process of its own, on the stored state: RSS is the child's
 * resident set, "idle" is it with the database open and the engine made, before any run (the
 * module runner and SQLite included), and the figure is the peak above that. The no-change pair
 * starts as two identical copies that each tool syncs once, untimed; Tributary's no-change figure
 * is the second pass of a process (as the watch or poll runs it), the first one after a start is
 * printed apart. The engine runs without its watch, so every pass reads every local folder.
 * Prints seconds and RSS per tool and Tributary's speed ÷ each peer's (>1 = Tributary faster).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalConnector } from '../../src-main/connectors/local';
import { SyncEngine } from '../../src-main/sync/engine';
import { scratchDir } from '../servers/util';
import { syncDb } from '../sync/scenario';
import { RATIO_LABEL, summary, timeRatio, type SummaryCell } from './ratio';

const FILES = Number(process.env.BENCH_SYNC_FILES ?? 10_000);
const MB = Number(process.env.BENCH_SYNC_MB ?? 1024);
const NOCHANGE = Number(process.env.BENCH_SYNC_NOCHANGE ?? process.env.BENCH_ENTRIES ?? 50_000);
const PEERS = process.env.BENCH_SYNC_PEERS !== 'none';
const root = join(import.meta.dirname, '..', '..');

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
  /** Peak resident set (MB): the peer's whole process, Tributary's above its idle. */
  rssMB: number | null;
  idleMB?: number;
  ops?: number;
  /** Tributary's no-change pass right after a start (nothing known to be settled yet). */
  restart?: Run;
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

/**
 * In the child: `passes` runs of the engine over the pair stored in `work` (made when absent).
 * The last run is the result; with two, the first (the pass after a start) is `restart`. With
 * `watch`, the engine runs on its watch (no poll): it starts, settles with the watch ready, and
 * the timed pass is the next one, as a trigger with nothing changed locally runs it.
 */
async function child(src: string, dst: string, work: string, passes: number, watch: boolean): Promise<void> {
  const db = syncDb(join(work, 'sync.db'));
  const remote = new LocalConnector({ path: dst, trashDir: join(work, 'trash') });
  const engine = new SyncEngine(db, async () => remote, watch ? { pollMs: 0, debounceMs: 600_000, concurrency: 8 } : { manual: true, concurrency: 8 });
  const id = engine.store.pairs()[0]?.id ?? (await engine.create({ localPath: src, account: 1, remotePath: '/' })).id;
  if (watch) {
    await engine.start();
    const ready = (engine as unknown as { ready: Set<number> }).ready;
    // The run of the start (and any it asked for) is over, and the watch is ready.
    while (engine.status()[0].state === 'syncing' || !ready.has(id)) await new Promise((r) => setTimeout(r, 100));
    // The first run with the watch ready starts recording what it sees; the pass after it trusts it.
    await engine.run(id);
  }
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  gc();
  const idle = process.memoryUsage().rss;
  const runs: Run[] = [];
  for (let i = 0; i < passes; i++) {
    gc();
    let peak = process.memoryUsage().rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    const t0 = process.hrtime.bigint();
    const r = await engine.run(id);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const status = engine.status()[0];
    if (status.state !== 'idle') throw new Error(`the pair ended ${status.state}: ${status.error}`);
    runs.push({ seconds, rssMB: (peak - idle) / 2 ** 20, idleMB: idle / 2 ** 20, ops: r.ops });
  }
  await engine.close();
  db.close();
  console.log(`RESULT ${JSON.stringify({ ...runs.at(-1), restart: passes > 1 ? runs[0] : undefined })}`);
}

/** First sync: one run in a fresh process. Else a run after a start, then the no-change pass. */
function tributaryRun(src: string, dst: string, work: string, first: boolean, watch = false): Run {
  const args = ['--expose-gc', join(root, 'scripts/run-ts.mjs'), 'test/bench/sync.bench.ts', 'child', src, dst, work, first || watch ? '1' : '2', ...(watch ? ['watch'] : [])];
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`bench child failed (${r.status}): ${r.stderr || r.stdout}`);
  return JSON.parse(line.slice(7)) as Run;
}

function unisonRun(src: string, dst: string, work: string): Run {
  const env = { ...process.env, UNISON: join(work, 'unison') };
  mkdirSync(env.UNISON, { recursive: true });
  return peer('unison', [src, dst, '-batch', '-auto', '-silent', '-times', '-ui', 'text', '-confirmbigdel=false'], env);
}

function bisyncRun(src: string, dst: string, work: string, first: boolean): Run {
  return peer('rclone', ['bisync', src, dst, '--workdir', join(work, 'bisync'), '-q', ...(first ? ['--resync'] : [])], { ...process.env, RCLONE_CONFIG: '/dev/null' });
}

const TOOLS: [string, (src: string, dst: string, work: string, first: boolean) => Run][] = [
  ['tributary', tributaryRun],
  ['unison', unisonRun],
  ['rclone bisync', bisyncRun],
];

const mb = (x: Run) => (x.rssMB === null ? '—' : x.rssMB.toFixed(0));

export async function main(argv: string[] = []): Promise<void> {
  if (argv[0] === 'child') return child(argv[1], argv[2], argv[3], Number(argv[4]), argv[5] === 'watch');
  const dir = scratchDir('bench-sync');
  try {
    const bytes = Math.max(1, Math.floor((MB * 2 ** 20) / FILES));
    const totalMB = (bytes * FILES) / 2 ** 20;
    const first: Record<string, Run> = {};
    const again: Record<string, Run> = {};
    let watched: Run | undefined;
    for (const [tool, fn] of PEERS ? TOOLS : TOOLS.slice(0, 1)) {
      const pair = (label: string) => {
        const base = join(dir, `${tool.replace(' ', '-')}-${label}`);
        const p = { base, src: join(base, 'src'), dst: join(base, 'dst'), work: join(base, 'work') };
        for (const d of [p.src, p.dst, p.work]) mkdirSync(d, { recursive: true });
        return p;
      };
      if (FILES > 0) {
        const p = pair('first');
        makeTree(p.src, FILES, bytes);
        first[tool] = fn(p.src, p.dst, p.work, true);
        rmSync(p.base, { recursive: true, force: true });
      }
      const p = pair('nochange');
      makeTree(p.src, NOCHANGE, 16);
      cpSync(p.src, p.dst, { recursive: true, preserveTimestamps: true });
      fn(p.src, p.dst, p.work, true);
      again[tool] = fn(p.src, p.dst, p.work, false);
      if (tool === 'tributary') watched = tributaryRun(p.src, p.dst, p.work, false, true);
      rmSync(p.base, { recursive: true, force: true });
    }
    console.log(`\nTwo-way sync, local folder ↔ local folder: first sync of ${FILES} files (${totalMB.toFixed(0)} MB), no-change pass over ${NOCHANGE} files`);
    console.log('(RSS: peers their whole process at peak; Tributary its peak above idle, idle in brackets)');
    for (const tool of Object.keys(again)) {
      const f = first[tool];
      const a = again[tool];
      const idle = (x: Run) => (x.idleMB === undefined ? '' : ` [idle ${x.idleMB.toFixed(0)}]`);
      const firstText = f ? `first ${f.seconds.toFixed(2).padStart(7)} s (${(totalMB / f.seconds).toFixed(1)} MB/s, ${mb(f)} MB RSS${idle(f)})` : 'first —';
      console.log(`${tool.padEnd(16)} ${firstText}   no-change ${a.seconds.toFixed(2).padStart(6)} s (${mb(a)} MB RSS${idle(a)})`);
    }
    const r = again.tributary.restart;
    if (r) console.log(`tributary's no-change pass right after a start: ${r.seconds.toFixed(2)} s (${mb(r)} MB RSS above idle)`);
    if (watched) console.log(`tributary's no-change pass on its watch (local side not read): ${watched.seconds.toFixed(2)} s (${mb(watched)} MB RSS above idle [idle ${watched.idleMB?.toFixed(0)}])`);
    const cells: SummaryCell[] = [
      { row: 'sync', column: `no-change pass, ${NOCHANGE} files`, value: again.tributary.seconds * 1000, unit: 'ms' },
      { row: 'sync', column: `no-change pass RSS above idle, ${NOCHANGE} files`, value: again.tributary.rssMB ?? NaN, unit: 'MiB' },
    ];
    if (r) cells.push({ row: 'sync', column: `no-change pass after a start, ${NOCHANGE} files`, value: r.seconds * 1000, unit: 'ms' }, { row: 'sync', column: `no-change pass after a start, RSS above idle`, value: r.rssMB ?? NaN, unit: 'MiB' });
    if (watched) cells.push({ row: 'sync', column: `no-change pass on the watch, ${NOCHANGE} files`, value: watched.seconds * 1000, unit: 'ms' }, { row: 'sync', column: 'no-change pass on the watch, RSS above idle', value: watched.rssMB ?? NaN, unit: 'MiB' });
    if (first.tributary) cells.push({ row: 'sync', column: `first sync, ${FILES} files / ${totalMB.toFixed(0)} MB`, value: first.tributary.seconds * 1000, unit: 'ms' });
    if (PEERS) {
      console.log(`\nTributary's speed ÷ peer's ${RATIO_LABEL}`);
      for (const tool of ['unison', 'rclone bisync']) {
        const f = first.tributary && first[tool] ? timeRatio(first.tributary.seconds, first[tool].seconds) : '—';
        console.log(`  vs ${tool.padEnd(14)} first sync ${f}   no-change pass ${timeRatio(again.tributary.seconds, again[tool].seconds)}`);
        if (first.tributary) cells.push({ row: 'sync (local ↔ local)', peer: tool, column: 'first sync', value: first[tool].seconds / first.tributary.seconds });
        cells.push({ row: 'sync (local ↔ local)', peer: tool, column: 'no-change pass', value: again[tool].seconds / again.tributary.seconds });
      }
    }
    summary(cells);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
