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
 * Tributary's CPU seconds per pass (user + system) are printed too: on a shared machine they
 * move far less than wall time.
 * Prints seconds and RSS per tool and Tributary's speed ÷ each peer's (>1 = Tributary faster).
 *
 * Then the time from a change to the other side (latency()), local folder ↔ Apache WebDAV and
 * local folder ↔ local folder, against one run of rclone bisync and of unison (they run on demand):
 *   BENCH_SYNC_LATENCY_FILES (default 200) files in the pair, BENCH_SYNC_LATENCY_ROUNDS (default 5)
 *   changes each way; BENCH_SYNC_LATENCY_ONLY=1 runs only this part, BENCH_SYNC_LATENCY=none leaves it out.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { LocalConnector } from '../../src-main/connectors/local';
import { SyncEngine } from '../../src-main/sync/engine';
import { DEFAULT_REMOTE_POLL_SECONDS } from '../../src-main/sync/remote-watch';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startApache, webdavOptions } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { syncDb } from '../sync/scenario';
import { RATIO_LABEL, summary, timeRatio, type SummaryCell } from './ratio';
import { rcloneObscure } from './peers';

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
  /** Tributary: CPU seconds of the run (user + system, all threads), steadier than wall time on a loaded machine. */
  cpu?: number;
  ops?: number;
  /** Planning rounds of the run (each scans both sides again). */
  rounds?: number;
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
    // memoryUsage.rss() alone: memoryUsage() also walks the heap's spaces, a cost the timed run paid every 10 ms.
    let peak = process.memoryUsage.rss();
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const r = await engine.run(id);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const used = process.cpuUsage(c0);
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage.rss());
    const status = engine.status()[0];
    if (status.state !== 'idle') throw new Error(`the pair ended ${status.state}: ${status.error}`);
    runs.push({ seconds, rssMB: (peak - idle) / 2 ** 20, idleMB: idle / 2 ** 20, cpu: (used.user + used.system) / 1e6, ops: r.ops, rounds: r.rounds });
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

// ---- time from a change to the other side (local folder ↔ Apache WebDAV) -------------------

const LAT_FILES = Number(process.env.BENCH_SYNC_LATENCY_FILES ?? 200);
const LAT_ROUNDS = Number(process.env.BENCH_SYNC_LATENCY_ROUNDS ?? 5);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)} s`;

/** Seconds until `check` holds, looking every 20 ms. */
async function timeUntil(check: () => boolean | Promise<boolean>, timeoutMs = 120_000): Promise<number> {
  const t0 = process.hrtime.bigint();
  while (!(await check())) {
    if (Number(process.hrtime.bigint() - t0) / 1e6 > timeoutMs) throw new Error('the change did not reach the other side');
    await sleep(20);
  }
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** Times from a change to the other side, each way. */
interface Times {
  up: number[];
  down: number[];
}
/** The far side of a pair as the bench sees it: write a file, tell whether one is there (pair-relative names). */
interface Far {
  write(name: string, text: string): Promise<unknown>;
  has(name: string): Promise<boolean>;
}

/**
 * Tributary running on its own (the local watch; remote changes from the account's watch or a
 * walk every DEFAULT_REMOTE_POLL_SECONDS, as shipped): a file written on one side, the seconds
 * until the other side holds it. Changes are made at random moments of the walk interval, so
 * the median includes the wait for the next walk.
 */
async function tributaryLatency(work: string, local: string, remote: StorageConnector, remoteRoot: string, far: Far): Promise<Times> {
  const db = syncDb(join(work, 'sync.db'));
  const engine = new SyncEngine(db, async () => remote, { trashDir: join(work, 'trash') });
  const idle = () => engine.store.pair(pair.id).state === 'idle';
  await engine.start();
  const pair = await engine.create({ localPath: local, account: 1, remotePath: remoteRoot });
  try {
    await timeUntil(() => engine.store.pair(pair.id).lastSync !== null && idle());
    const t: Times = { up: [], down: [] };
    for (let i = 0; i < LAT_ROUNDS; i++) {
      await sleep(Math.random() * DEFAULT_REMOTE_POLL_SECONDS * 1000);
      writeFileSync(join(local, `up${i}.txt`), `up ${i}`);
      t.up.push(await timeUntil(() => far.has(`up${i}.txt`)));
      await timeUntil(idle);
      await sleep(Math.random() * DEFAULT_REMOTE_POLL_SECONDS * 1000);
      await far.write(`down${i}.txt`, `down ${i}`);
      t.down.push(await timeUntil(() => existsSync(join(local, `down${i}.txt`))));
      await timeUntil(idle);
    }
    return t;
  } finally {
    await engine.close();
    db.close();
  }
}

/** A peer that runs on demand: one run started right after each change, checked to have carried it. */
async function peerLatency(tool: string, local: string, far: Far, run: () => Run): Promise<Times> {
  const t: Times = { up: [], down: [] };
  for (let i = 0; i < LAT_ROUNDS; i++) {
    writeFileSync(join(local, `up${i}.txt`), `up ${i}`);
    t.up.push(run().seconds);
    if (!(await far.has(`up${i}.txt`))) throw new Error(`${tool} did not carry a local change over`);
    await far.write(`down${i}.txt`, `down ${i}`);
    t.down.push(run().seconds);
    if (!existsSync(join(local, `down${i}.txt`))) throw new Error(`${tool} did not carry a remote change over`);
  }
  return t;
}

function latencyReport(title: string, row: string, results: Record<string, Times>): void {
  console.log(`\nTime from a change to the other side, ${title}, ${LAT_FILES} files in the pair, ${LAT_ROUNDS} changes each way (median, min–max)`);
  for (const [tool, x] of Object.entries(results)) {
    console.log(`  ${tool.padEnd(16)} local → remote ${median(x.up).toFixed(2).padStart(6)} s (${spread(x.up)})   remote → local ${median(x.down).toFixed(2).padStart(6)} s (${spread(x.down)})`);
  }
  const tr = results.tributary!;
  const cells: SummaryCell[] = [
    { row, column: 'change → remote', value: median(tr.up), unit: 's' },
    { row, column: 'change → local', value: median(tr.down), unit: 's' },
  ];
  for (const [tool, x] of Object.entries(results)) {
    if (tool === 'tributary') continue;
    console.log(`  Tributary's speed ÷ ${tool}'s (one run started at once) ${RATIO_LABEL}: local → remote ${timeRatio(median(tr.up), median(x.up))}, remote → local ${timeRatio(median(tr.down), median(x.down))}`);
    cells.push({ row, column: 'change → remote', peer: `${tool} (one run)`, value: median(x.up) / median(tr.up) }, { row, column: 'change → local', peer: `${tool} (one run)`, value: median(x.down) / median(tr.down) });
  }
  summary(cells);
}

/**
 * The time from a change to the other side. Tributary runs continuously; the peers run on demand
 * (a user or a timer starts them), so their figure is one run started right after the change:
 * what they take on top of however often they are started. unison cannot reach a WebDAV server
 * (it needs itself on the far side), so it is measured on the local pair only.
 */
async function latency(): Promise<void> {
  const dir = scratchDir('bench-sync-latency');
  const server = await startApache();
  await loadConnectors();
  const def = connectorDefinition('webdav');
  const dav = (await def.create(parseOptions(def, webdavOptions(server)), { dataDir: dir, accountId: 1 })) as StorageConnector;
  // A listing, not a stat: the connector may answer a stat of a name it just saw missing from
  // memory. Once more on a failure: a peer run blocks this process (spawnSync), meanwhile Apache
  // closes the idle keep-alive socket and the first request after it finds the socket closed.
  const davFar = (root: string): Far => ({
    write: (name, text) => dav.write(`${root}/${name}`, Readable.from([Buffer.from(text)])),
    has: async (name) => (await dav.list(root).catch(() => dav.list(root))).some((e) => e.name === name),
  });
  const diskFar = (root: string): Far => ({
    write: async (name, text) => writeFileSync(join(root, name), text),
    has: async (name) => existsSync(join(root, name)),
  });
  const fresh = (name: string) => {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    makeTree(d, LAT_FILES, 64);
    return d;
  };
  try {
    // Local folder ↔ Apache WebDAV.
    const dav1: Record<string, Times> = {};
    await dav.mkdir('/tributary');
    dav1.tributary = await tributaryLatency(join(dir, 'w1'), fresh('t1'), dav, '/tributary', davFar('/tributary'));
    // rclone's bisync refuses a remote without modification times: the "owncloud" flavour reads
    // Apache's getlastmodified (and sends an X-OC-Mtime header Apache ignores), all it needs.
    const obscured = rcloneObscure(server.password);
    const env: NodeJS.ProcessEnv = { ...process.env, RCLONE_CONFIG: '/dev/null', RCLONE_CONFIG_DAV_TYPE: 'webdav', RCLONE_CONFIG_DAV_URL: server.url, RCLONE_CONFIG_DAV_VENDOR: 'owncloud', RCLONE_CONFIG_DAV_USER: server.user, RCLONE_CONFIG_DAV_PASS: obscured };
    delete env.AWS_CA_BUNDLE;
    await dav.mkdir('/rclone');
    const r1 = fresh('r1');
    const base = ['bisync', r1, 'dav:rclone', '--workdir', join(dir, 'bisync1'), '-q'];
    peer('rclone', [...base, '--resync'], env);
    dav1['rclone bisync'] = await peerLatency('rclone bisync', r1, davFar('/rclone'), () => peer('rclone', base, env));
    latencyReport('local folder ↔ Apache WebDAV', 'Sync ↔ WebDAV (Apache)', dav1);

    // Local folder ↔ local account (pushed by its watch on Tributary's side).
    const disk: Record<string, Times> = {};
    const there = join(dir, 'local-account');
    mkdirSync(join(there, 'pair'), { recursive: true });
    const account = new LocalConnector({ path: there, trashDir: join(dir, 'trash-account') });
    disk.tributary = await tributaryLatency(join(dir, 'w2'), fresh('t2'), account, '/pair', diskFar(join(there, 'pair')));
    await account.close();
    const [u, uThere] = [fresh('u'), join(dir, 'u-there')];
    mkdirSync(uThere);
    const uni = { ...process.env, UNISON: join(dir, 'unison') };
    mkdirSync(uni.UNISON, { recursive: true });
    const uArgs = [u, uThere, '-batch', '-auto', '-silent', '-times', '-ui', 'text', '-confirmbigdel=false'];
    peer('unison', uArgs, uni);
    disk.unison = await peerLatency('unison', u, diskFar(uThere), () => peer('unison', uArgs, uni));
    const [b, bThere] = [fresh('b'), join(dir, 'b-there')];
    mkdirSync(bThere);
    const bBase = ['bisync', b, bThere, '--workdir', join(dir, 'bisync2'), '-q'];
    const plain = { ...process.env, RCLONE_CONFIG: '/dev/null' };
    peer('rclone', [...bBase, '--resync'], plain);
    disk['rclone bisync'] = await peerLatency('rclone bisync', b, diskFar(bThere), () => peer('rclone', bBase, plain));
    latencyReport('local folder ↔ local folder (the local account)', 'Sync ↔ local', disk);
  } finally {
    await dav.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function main(argv: string[] = []): Promise<void> {
  if (argv[0] === 'child') return child(argv[1], argv[2], argv[3], Number(argv[4]), argv[5] === 'watch');
  if (process.env.BENCH_SYNC_LATENCY_ONLY === '1') return latency();
  await firstAndNoChange();
  if (process.env.BENCH_SYNC_LATENCY !== 'none') await latency();
}

async function firstAndNoChange(): Promise<void> {
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
      const firstText = f ? `first ${f.seconds.toFixed(2).padStart(7)} s (${(totalMB / f.seconds).toFixed(1)} MB/s, ${mb(f)} MB RSS${idle(f)}${f.rounds === undefined ? '' : `, ${f.ops} ops in ${f.rounds} rounds`})` : 'first —';
      const cpu = a.cpu === undefined ? '' : `, ${a.cpu.toFixed(2)} s CPU`;
      console.log(`${tool.padEnd(16)} ${firstText}   no-change ${a.seconds.toFixed(2).padStart(6)} s (${mb(a)} MB RSS${idle(a)}${cpu})`);
    }
    const r = again.tributary.restart;
    if (r) console.log(`tributary's no-change pass right after a start: ${r.seconds.toFixed(2)} s (${mb(r)} MB RSS above idle, ${r.cpu?.toFixed(2)} s CPU)`);
    if (watched) console.log(`tributary's no-change pass on its watch (local side not read): ${watched.seconds.toFixed(2)} s (${mb(watched)} MB RSS above idle [idle ${watched.idleMB?.toFixed(0)}], ${watched.cpu?.toFixed(2)} s CPU)`);
    const cells: SummaryCell[] = [
      { row: 'sync', column: `no-change pass, ${NOCHANGE} files`, value: again.tributary.seconds * 1000, unit: 'ms' },
      { row: 'sync', column: `no-change pass RSS above idle, ${NOCHANGE} files`, value: again.tributary.rssMB ?? NaN, unit: 'MiB' },
      { row: 'sync', column: `no-change pass CPU, ${NOCHANGE} files`, value: (again.tributary.cpu ?? NaN) * 1000, unit: 'ms' },
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
