/**
 * WebDAV benchmark: upload and download of one big file and the listing of one huge folder,
 * against the same Apache mod_dav_fs (test/servers/apache.ts), by Tributary (StorageService
 * over the webdav connector), rclone 1.60 (environment-only config) and curl (the floor:
 * one HTTP request, no parsing). Prints MB/s, entries/s and Tributary's speed ÷ each tool's
 * (>1 = Tributary faster).
 *   npm run bench webdav    (or node scripts/run-ts.mjs test/bench/webdav.bench.ts)
 *   BENCH_SIZE_MB (default 1024), BENCH_LIST_ENTRIES (default 100000), BENCH_READ_RUNS (default 3)
 *   BENCH_WEBDAV_PART=list: only the listing, by Tributary reading the answer with its Multi-Status
 *   scanner, Tributary reading it with saxes alone (the parser before the scanner; entries are made
 *   as responses arrive either way), the bare answer
 *   read by the scanner (no entries made; when its last byte came) and curl, in turns; with each
 *   one's wall time and client CPU per round.
 * "down" streams into /dev/null for every tool: Tributary's StorageService download stream (what
 * the REST route pipes into its answer) through a file stream on /dev/null, `curl -o /dev/null`,
 * `rclone cat` with its output on /dev/null. "to file" downloads into a file on disk (Tributary's
 * desktop downloader, curl -o, rclone copyto). "up" is Tributary's StorageService upload of a
 * stream (what the REST route does with a request's body); "from file" is the desktop uploader's
 * upload of the file on disk, which the connector reads itself (rclone copyto and curl -T read a
 * file too: their "from file" is their "up"). "list" is one Depth 1 PROPFIND: curl sends
 * Tributary's own body (the same properties, so Apache does the same work, with no parsing on
 * curl's side); rclone sends none (every property, its own choice).
 * Uploads and downloads alternate between the tools in each round, best of BENCH_READ_RUNS; each
 * round starts with another tool, so none is always the one run right after a big transfer. The
 * upload from a file takes its turn among the uploads as a fourth tool (Apache's writes to its disk
 * make some positions in a round slower than others, whoever holds them).
 * Before the timed rounds of uploads and of downloads into a file each tool makes one untimed
 * step: the run's first 1 GiB written into the page cache cost 2.6-3.0 s of system CPU instead
 * of 0.6-1.0 s whichever tool wrote it (rclone too, when put first; perf: the copy into new
 * pages, the VM's first touch of that memory), and the rotation always put Tributary there.
 * Every timed transfer step is printed in order with its wall time and client CPU, since the
 * best of each column hides how far the rounds spread.
 * Listings come after every transfer: one untimed listing per tool first, then BENCH_LIST_RUNS
 * (default 5) rounds in turns, best of them, each listing after a `sync`. The warm-up takes out of
 * the timed rounds what only a first listing does (Tributary's sort of a folder it has not listed and
 * its 100,000 cache rows; Apache's first walk of the folder), and gives each tool the same start.
 * Tributary's listing needs a core for its parse while Apache uses the other; curl's needs only
 * Apache's, so on a shared machine Tributary's rounds vary far more than curl's. A best of 2, one of
 * them a first listing, left one usable round and followed the load; five rounds give the listing
 * part's count. Each listing is printed in order with its client CPU and Apache's CPU over it, and
 * the ratio to curl per round with its median. BENCH_WEBDAV_LIST_TOOLS=t,c leaves a tool out of the
 * listings (t Tributary, r rclone, c curl). Before each upload the earlier copy is deleted and dirty pages are flushed
 * (`sync`), so no upload pays for the write-back of the payload or of another tool's upload.
 * Each download starts after a `sync` too: right after the uploads the kernel is
 * still writing gigabytes back, and a tool writing 1 GiB into that swung 3-7x between rounds
 * (the column followed the write-back, not the tools). The page cache is not dropped: the
 * served copies would then come off the disk (the disk measured, not the tools), and the machine
 * is shared; each served copy is read once, untimed, right before its download instead, since
 * this machine's kernel reclaims the page cache by itself. A listing's cache write, which the app does once the answer is sent (the next turn
 * of the event loop), is done before the next step starts, untimed, so it does not fall on
 * another tool's step.
 */
import { spawn, spawnSync } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { createApp } from '../../src-main/app';
import { startApache } from '../servers/apache';
import { hasBinary, scratchDir } from '../servers/util';
import { RATIO_LABEL, ratioCells, speedRatio, summary } from './ratio';
import { PROPFIND_BODY } from '../../src-main/connectors/webdav';
import { multistatusTokenizer, parseMultistatus } from '../../src-main/connectors/webdav/xml';
import { request } from 'undici';
import { rcloneObscure } from './peers';

const SIZE_MB = Number(process.env.BENCH_SIZE_MB ?? 1024);
const ENTRIES = Number(process.env.BENCH_LIST_ENTRIES ?? 100_000);
/** Uploads, downloads and listings are timed best-of-N (BENCH_READ_RUNS, default 3), tools in turn. */
const READ_RUNS = Number(process.env.BENCH_READ_RUNS ?? 3);
const LIST_ONLY = process.env.BENCH_WEBDAV_PART === 'list';
/** Timed listing rounds of the whole bench, after an untimed warm-up listing per tool (BENCH_LIST_RUNS, default 5). */
const LIST_RUNS = Number(process.env.BENCH_LIST_RUNS ?? 5);

interface Row {
  tool: string;
  uploadMBs: number;
  downloadMBs: number;
  /** Download into a file on disk (the desktop downloader; curl -o, rclone copyto). */
  fileMBs: number;
  /** Upload of a file on disk: the desktop uploader; the peers' `up` (rclone copyto and curl -T read a file too). */
  fromFileMBs: number;
  listEntriesPerS: number;
}

/** One timed step: wall seconds and the client's CPU (user + system) in ms. */
interface Step {
  s: number;
  cpuMs: number;
  /** Tributary's steps: V8's full collections during the step (docs/measurements.md, "Streamed uploads and V8's full collections"). */
  fullGcs?: number;
}

/** V8's full collections in this process so far. */
let fullGcs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (((e as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullGcs++;
}).observe({ entryTypes: ['gc'] });

/** A step of Tributary's, in this process: its CPU is this process's over the step. */
async function timed(fn: () => unknown | Promise<unknown>): Promise<Step> {
  const cpu0 = process.cpuUsage();
  const gcs0 = fullGcs;
  const t0 = process.hrtime.bigint();
  await fn();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await new Promise((r) => setImmediate(r)); // the collector's entries of the step are delivered
  return { s, cpuMs: (cpu.user + cpu.system) / 1000, fullGcs: fullGcs - gcs0 };
}

/**
 * Runs a peer tool to its end without blocking the event loop (spawnSync would): Tributary's
 * pooled connections must see the server's keep-alive closes while the other tools run, as
 * they would in the app.
 */
async function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Step> {
  const devnull = openSync('/dev/null', 'w');
  try {
    // /usr/bin/time reports the tool's CPU on the last line of stderr.
    const t0 = process.hrtime.bigint();
    const child = spawn('/usr/bin/time', ['-f', 'CPU %U %S', cmd, ...args], { env, stdio: ['ignore', devnull, 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const [code] = (await once(child, 'close')) as [number | null];
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr}`);
    const cpu = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(stderr);
    return { s, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : NaN };
  } finally {
    closeSync(devnull);
  }
}

/** CPU (user + system, ms) of every Apache process so far: the parent (from its pid file beside the served root) and its children. */
function apacheCpuMs(root: string): number {
  const parent = Number(readFileSync(join(dirname(root), 'run', 'httpd.pid'), 'utf8'));
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // Fields after the command's closing parenthesis: state ppid ... utime(14) stime(15), 1-based over the whole line.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pid) === parent || Number(f[1]) === parent) ticks += Number(f[11]) + Number(f[12]);
  }
  return (ticks * 1000) / CLK_TCK;
}
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** Waits for every dirty page to be written (`sync`), so the next step does not pay for another's write-back. */
const flushed = () => exec('sync', []);
/** A step that starts once the dirty pages are written back (no tool pays for another's write-back). */
const afterSync = async (step: () => Promise<Step>) => (await flushed(), step());

/**
 * BENCH_WEBDAV_PART=list: Tributary with the scanner, Tributary with saxes alone, and curl list the
 * big folder in turns, each round starting with another; each step's wall time and client CPU.
 */
async function listingAlone(app: Awaited<ReturnType<typeof createApp>>, accountId: number, auth: string, url: string): Promise<void> {
  const folder = (await app.storage.list(accountId, 'root')).items.find((i) => i.name === 'listing')!;
  const cacheWrites: number[] = [];
  const tributary = (scanner: boolean) => async () => {
    multistatusTokenizer.scanner = scanner;
    let listed = 0;
    const step = await timed(async () => {
      listed = (await app.storage.list(accountId, folder.id, 1, 1000)).total;
    });
    multistatusTokenizer.scanner = true;
    // The cache write that follows the answer: timed on its own, not during the next step.
    cacheWrites.push((await timed(() => app.storage.entries.flush())).s);
    if (listed !== ENTRIES) throw new Error(`Tributary listed ${listed} entries, expected ${ENTRIES}`);
    return step;
  };
  // The answer alone: the same PROPFIND read by the scanner, no entries made; when its last byte came.
  const lastByte: number[] = [];
  const answerOnly = () =>
    timed(async () => {
      const t0 = process.hrtime.bigint();
      const res = await request(`${url}listing/`, {
        method: 'PROPFIND',
        headers: { depth: '1', 'content-type': 'application/xml; charset=utf-8', authorization: `Basic ${Buffer.from(auth).toString('base64')}` },
        body: PROPFIND_BODY,
      });
      let last = t0;
      const timedBody = async function* () {
        for await (const chunk of res.body) {
          last = process.hrtime.bigint();
          yield chunk as Buffer;
        }
      };
      const n = (await parseMultistatus(timedBody())).length;
      lastByte.push(Number(last - t0) / 1e9);
      if (n !== ENTRIES + 1) throw new Error(`the answer held ${n} responses, expected ${ENTRIES + 1}`);
    });
  const steps: Record<string, () => Promise<Step>> = {
    'tributary (scanner)': tributary(true),
    'answer + scanner': answerOnly,
    'tributary (saxes)': tributary(false),
    curl: () => exec('curl', ['-sSf', '-u', auth, '-X', 'PROPFIND', '-H', 'Depth: 1', '-H', 'Content-Type: application/xml; charset=utf-8', '--data-binary', PROPFIND_BODY, '-o', '/dev/null', `${url}listing/`]),
  };
  const names = Object.keys(steps);
  const seen: Record<string, Step[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < READ_RUNS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!;
      seen[name]!.push(await steps[name]!());
    }
    console.log(`round ${round + 1}: load ${loadavg()[0]!.toFixed(2)}`);
  }
  const best = (n: string) => Math.min(...seen[n]!.map((s) => s.s));
  console.log(`\nlisting of ${ENTRIES} entries, ${READ_RUNS} rounds in turns: wall s / client CPU ms per round`);
  for (const n of names) console.log(`${n.padEnd(20)} ${seen[n]!.map((s) => `${s.s.toFixed(2)} / ${s.cpuMs.toFixed(0)}`).join('   ')}   best ${best(n).toFixed(2)} s`);
  console.log(`answer + scanner: its last byte came after ${lastByte.map((t) => t.toFixed(2)).join(' ')} s`);
  console.log(`cache writes after Tributary's listings (the first one writes every row): ${cacheWrites.map((t) => t.toFixed(2)).join(' ')} s`);
  const curl = best('curl');
  console.log(`\nvs curl (best of each): scanner ${(curl / best('tributary (scanner)')).toFixed(2)}, saxes ${(curl / best('tributary (saxes)')).toFixed(2)}`);
  const pairs = seen.curl!.map((c, i) => `${(c.s / seen['tributary (scanner)']![i]!.s).toFixed(2)}/${(c.s / seen['tributary (saxes)']![i]!.s).toFixed(2)}`);
  console.log(`vs curl per round (scanner/saxes): ${pairs.join(' ')}`);
}

export async function main(): Promise<Row[]> {
  for (const bin of ['/usr/bin/rclone', '/usr/bin/curl', '/usr/bin/time']) if (!hasBinary(bin)) throw new Error(`${bin} is required for this benchmark`);
  const bytes = SIZE_MB * 1024 * 1024;
  const MB = bytes / 1e6;
  console.log(`WebDAV bench: ${SIZE_MB} MiB file, ${ENTRIES} entries, Apache mod_dav_fs on loopback`);
  const server = await startApache();
  const work = scratchDir('bench-webdav');
  const app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
  try {
    // The payload: random, written once, read by every tool from the page cache.
    const file = join(work, 'payload.bin');
    if (!LIST_ONLY) {
      const fd = openSync(file, 'w');
      const block = randomBytes(16 << 20);
      for (let left = bytes; left > 0; left -= block.length) writeSync(fd, block, 0, Math.min(left, block.length));
      closeSync(fd);
    }
    // The big folder, made directly on the server's disk (creating it is not what we measure).
    const listing = join(server.root, 'listing');
    mkdirSync(listing);
    for (let i = 0; i < ENTRIES; i++) writeFileSync(join(listing, `entry-${String(i).padStart(6, '0')}.txt`), '');
    spawnSync('chown', ['-R', 'www-data:www-data', listing]);

    const rows: Row[] = [];

    // Tributary, through the StorageService like the app and the REST API.
    const acc = await app.accounts.connect({
      service: 'webdav',
      options: { protocol: 'http', host: server.host, port: server.port, username: server.user, password: server.password },
    });
    // rclone with an environment-only remote (notes/test-servers.md §3/§4: no config file,
    // AWS_CA_BUNDLE unset because rclone 1.60 chokes on it).
    const obscured = rcloneObscure(server.password);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      RCLONE_CONFIG: '/dev/null',
      RCLONE_CONFIG_DAV_TYPE: 'webdav',
      RCLONE_CONFIG_DAV_URL: server.url,
      RCLONE_CONFIG_DAV_VENDOR: 'other',
      RCLONE_CONFIG_DAV_USER: server.user,
      RCLONE_CONFIG_DAV_PASS: obscured,
    };
    delete env.AWS_CA_BUNDLE;
    // curl: the floor (a single request each, no parsing of the listing).
    const auth = `${server.user}:${server.password}`;

    if (LIST_ONLY) {
      await listingAlone(app, acc.id, auth, server.url);
      return [];
    }

    type Timings = { t: number; r: number; c: number };
    const best = () => ({ t: Infinity, r: Infinity, c: Infinity });
    /** Each tool's least CPU per column (ms), beside its best time. */
    const cpu: Record<'up' | 'fromFile' | 'down' | 'file' | 'list', Timings> = { up: best(), fromFile: best(), down: best(), file: best(), list: best() };
    /** Runs one step per tool, starting with a different tool each round, keeping each one's best time and least CPU. */
    const tools = { t: 'tributary', r: 'rclone', c: 'curl' } as const;
    /** Logs one timed step: round, column, tool, wall, client CPU and, for Tributary's, V8's full collections. */
    const logStep = (round: number, column: string, tool: string, r: Step) =>
      transferLog.push(`  ${String(round + 1).padEnd(3)} ${column.padEnd(5)} ${tool.padEnd(10)} ${r.s.toFixed(2)} s / ${r.cpuMs.toFixed(0)} ms${r.fullGcs !== undefined ? `, ${r.fullGcs} full collections` : ''}`);
    /**
     * Runs one step per tool, starting with a different tool each round, keeping each one's best
     * time and least CPU; `fromFileTurn`, when given, takes its turn among them as a fourth tool
     * (it keeps its own figures).
     */
    const inTurn = async (round: number, fastest: Timings, column: keyof typeof cpu, steps: Record<keyof Timings, () => Promise<Step>>, fromFileTurn?: () => Promise<Step>) => {
      const order: (keyof Timings | 'f')[] = fromFileTurn ? ['f', 't', 'r', 'c'] : ['t', 'r', 'c'];
      for (let i = 0; i < order.length; i++) {
        const k = order[(i + round) % order.length]!;
        if (k === 'f') {
          logStep(round, column, 'from file', await fromFileTurn!());
          continue;
        }
        const r = await steps[k]();
        fastest[k] = Math.min(fastest[k], r.s);
        cpu[column][k] = Math.min(cpu[column][k], r.cpuMs);
        logStep(round, column, tools[k], r);
      }
    };
    /** Every timed transfer step in order: round, column, tool, wall, client CPU. */
    const transferLog: string[] = [];

    /** One untimed step per tool before the timed rounds of a column that writes into the page cache (see the top). */
    const warmUp = async (steps: Record<keyof Timings, () => Promise<Step>>) => {
      for (const k of ['t', 'r', 'c'] as const) await steps[k]();
    };

    // Uploads: each a new file (the earlier copy deleted on the server's disk), after a `sync`.
    let fileId = '';
    const up = { t: Infinity, r: Infinity, c: Infinity };
    let fromFile = Infinity;
    const upload = async (name: string, send: () => Promise<Step>) => {
      rmSync(join(server.root, name), { force: true });
      await flushed();
      return send();
    };
    /** The desktop uploader, whose file the connector reads itself (writeFile): a fourth tool in the uploads' turns. */
    const fromFileStep = () =>
      upload('from-file.bin', () => timed(() => app.uploads.uploader.upload({ accountId: acc.id, parentId: 'root', localPath: file, name: 'from-file.bin', overwrite: true })));
    const uploadFromFile = async () => {
      const step = await fromFileStep();
      fromFile = Math.min(fromFile, step.s);
      cpu.fromFile.t = Math.min(cpu.fromFile.t, step.cpuMs);
      return step;
    };
    const upSteps: Record<keyof Timings, () => Promise<Step>> = {
      t: () =>
        upload('tributary.bin', () =>
          timed(async () => {
            fileId = (await app.storage.upload(acc.id, 'root', 'tributary.bin', createReadStream(file, { highWaterMark: 1 << 20 }), { size: bytes })).id;
          }),
        ),
      r: () => upload('rclone.bin', () => exec('rclone', ['copyto', file, 'dav:rclone.bin'], env)),
      c: () => upload('curl.bin', () => exec('curl', ['-sSf', '-u', auth, '-T', file, `${server.url}curl.bin`])),
    };
    await warmUp(upSteps);
    await fromFileStep();
    for (let round = 0; round < READ_RUNS; round++) await inTurn(round, up, 'up', upSteps, uploadFromFile);

    // Downloads and listings: the tools take turns within each round (best of READ_RUNS), so a
    // change in the machine's load falls on all of them rather than on one.
    const folder = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'listing')!;
    let listed = 0;
    const down = { t: Infinity, r: Infinity, c: Infinity };
    const toFile = { t: Infinity, r: Infinity, c: Infinity };
    /** Times one download into a file, checks its size and removes it (the disk is not the subject). */
    /**
     * This machine's kernel reclaims the page cache within minutes even with most memory free:
     * each download first reads the served copy once, untimed, so every tool's copy comes from
     * the cache, not from a disk read that depended on how long ago that tool's upload was.
     */
    const cached = (name: string, step: () => Promise<Step>) => () => (spawnSync('dd', [`if=${join(server.root, name)}`, 'of=/dev/null', 'bs=1M'], { stdio: 'ignore' }), afterSync(step));
    const intoFile = async (name: string, fn: (target: string) => Promise<Step>) => {
      const target = join(work, 'downloaded.bin');
      const s = await cached(name, () => fn(target))();
      if (statSync(target).size !== bytes) throw new Error(`a download into a file has ${statSync(target).size} bytes, not ${bytes}`);
      rmSync(target);
      return s;
    };
    const list = { t: Infinity, r: Infinity, c: Infinity };
    /** Every listing step in order, untimed warm-ups included: tool, wall, client CPU, Apache's CPU over the step. */
    const listLog: { tool: string; round: string; step: Step; apacheMs: number; more: string }[] = [];
    const listSteps: Record<keyof Timings, () => Promise<Step>> = {
      t: async () => {
        const step = await timed(async () => {
          listed = (await app.storage.list(acc.id, folder.id, 1, 1000)).total;
        });
        app.storage.entries.flush(); // the cache write that follows the answer, not during the next step
        return step;
      },
      r: () => exec('rclone', ['lsf', 'dav:listing'], env),
      c: () => exec('curl', ['-sSf', '-u', auth, '-X', 'PROPFIND', '-H', 'Depth: 1', '-H', 'Content-Type: application/xml; charset=utf-8', '--data-binary', PROPFIND_BODY, '-o', '/dev/null', `${server.url}listing/`]),
    };
    /** When the answer to Tributary's PROPFIND ended (undici's diagnostics channel): the parse sets the pace when that is the step's end. */
    let answerEnd = 0n;
    /** The collector's pauses on the main thread (ms), summed over each of Tributary's listings. */
    let gcMs = 0;
    const gc = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcMs += e.duration;
    });
    gc.observe({ entryTypes: ['gc'] });
    subscribe('undici:request:trailers', (m) => {
      if ((m as { request: { method: string } }).request.method === 'PROPFIND') answerEnd = process.hrtime.bigint();
    });
    /** BENCH_WEBDAV_LIST_TOOLS (e.g. "t,c"): only these tools list (t Tributary, r rclone, c curl), to see what a peer's steps do to the others. */
    const listTools = (process.env.BENCH_WEBDAV_LIST_TOOLS ?? 't,r,c').split(',');
    /** One listing by `k` after a `sync`, logged with Apache's CPU over it. */
    const listStep = (k: keyof Timings, round: string) => async (): Promise<Step> => {
      if (!listTools.includes(k)) return { s: Infinity, cpuMs: Infinity };
      await flushed();
      const a0 = apacheCpuMs(server.root);
      answerEnd = 0n;
      gcMs = 0;
      const t0 = process.hrtime.bigint();
      const step = await listSteps[k]();
      await new Promise((r) => setImmediate(r)); // the collector's entries of the step are delivered
      const more = k === 't' && answerEnd ? `, its answer ended at ${(Number(answerEnd - t0) / 1e9).toFixed(2)} s, collector ${gcMs.toFixed(0)} ms` : '';
      listLog.push({ tool: k, round, step, apacheMs: apacheCpuMs(server.root) - a0, more });
      return step;
    };
    const toFileSteps: Record<keyof Timings, () => Promise<Step>> = {
      t: () => intoFile('tributary.bin', (target) => timed(() => app.downloads.download({ accountId: acc.id, fileId, targetPath: target }))),
      r: () => intoFile('rclone.bin', (target) => exec('rclone', ['copyto', 'dav:rclone.bin', target], env)),
      c: () => intoFile('curl.bin', (target) => exec('curl', ['-sSf', '-u', auth, '-o', target, `${server.url}curl.bin`])),
    };
    await warmUp(toFileSteps);
    for (let round = 0; round < READ_RUNS; round++) {
      await inTurn(round, down, 'down', {
        t: cached('tributary.bin', () => timed(async () => pipeline((await app.storage.download(acc.id, fileId)).stream, createWriteStream('/dev/null')))),
        r: cached('rclone.bin', () => exec('rclone', ['cat', 'dav:rclone.bin'], env)),
        c: cached('curl.bin', () => exec('curl', ['-sSf', '-u', auth, '-o', '/dev/null', `${server.url}curl.bin`])),
      });
      await inTurn(round, toFile, 'file', toFileSteps);
    }
    // Listings, after every transfer: one untimed listing per tool first (Tributary's first listing
    // of the folder also sorts it and writes 100,000 cache rows; Apache's first walk of it reads
    // the disk), then BENCH_LIST_RUNS rounds in turns, each step after a `sync`.
    for (const k of ['t', 'r', 'c'] as const) await listStep(k, 'warm-up')();
    for (let round = 0; round < LIST_RUNS; round++) {
      await inTurn(round, list, 'list', { t: listStep('t', `${round + 1}`), r: listStep('r', `${round + 1}`), c: listStep('c', `${round + 1}`) });
    }
    if (listed !== ENTRIES) throw new Error(`Tributary listed ${listed} entries, expected ${ENTRIES}`);
    rows.push({ tool: 'tributary', uploadMBs: MB / up.t, fromFileMBs: MB / fromFile, downloadMBs: MB / down.t, fileMBs: MB / toFile.t, listEntriesPerS: ENTRIES / list.t });
    rows.push({ tool: 'rclone', uploadMBs: MB / up.r, fromFileMBs: MB / up.r, downloadMBs: MB / down.r, fileMBs: MB / toFile.r, listEntriesPerS: ENTRIES / list.r });
    rows.push({ tool: 'curl', uploadMBs: MB / up.c, fromFileMBs: MB / up.c, downloadMBs: MB / down.c, fileMBs: MB / toFile.c, listEntriesPerS: ENTRIES / list.c });

    const f = (n: number) => n.toFixed(n >= 100 ? 0 : 1).padStart(9);
    console.log(`\n${'tool'.padEnd(10)} ${'up MB/s'.padStart(9)} ${'from file'.padStart(9)} ${'down MB/s'.padStart(9)} ${'file MB/s'.padStart(9)} ${'list e/s'.padStart(9)}`);
    for (const r of rows) console.log(`${r.tool.padEnd(10)} ${f(r.uploadMBs)} ${f(r.fromFileMBs)} ${f(r.downloadMBs)} ${f(r.fileMBs)} ${f(r.listEntriesPerS)}`);
    const ms = (n: number) => n.toFixed(0).padStart(9);
    console.log(`\nclient CPU, ms (least of ${READ_RUNS}, of the listing ${LIST_RUNS}; user + system)`);
    console.log(`${'tool'.padEnd(10)} ${'up'.padStart(9)} ${'from file'.padStart(9)} ${'down'.padStart(9)} ${'to file'.padStart(9)} ${'list'.padStart(9)}`);
    for (const [name, k] of [['tributary', 't'], ['rclone', 'r'], ['curl', 'c']] as const) {
      console.log(`${name.padEnd(10)} ${ms(cpu.up[k])} ${ms(k === 't' ? cpu.fromFile.t : cpu.up[k])} ${ms(cpu.down[k])} ${ms(cpu.file[k])} ${ms(cpu.list[k])}`);
    }
    console.log(`\ntransfers in order (round column tool: wall s / client CPU ms, and for Tributary V8's full collections):`);
    for (const l of transferLog) console.log(l);
    console.log(`\nlistings in order (round: tool wall s / client CPU ms / Apache CPU ms):`);
    for (const l of listLog) console.log(`  ${l.round.padEnd(8)} ${tools[l.tool as keyof Timings].padEnd(10)} ${l.step.s.toFixed(2)} / ${l.step.cpuMs.toFixed(0)} / ${l.apacheMs.toFixed(0)}${l.more}`);
    const timedRounds = (k: keyof Timings) => listLog.filter((l) => l.tool === k && l.round !== 'warm-up').map((l) => l.step.s);
    const perRound = timedRounds('c').map((c, i) => c / timedRounds('t')[i]!);
    const median = [...perRound].sort((a, b) => a - b)[Math.floor(perRound.length / 2)];
    gc.disconnect();
    if (perRound.length) console.log(`listing vs curl per round: ${perRound.map((r) => r.toFixed(2)).join(' ')} (median ${median!.toFixed(2)})`);
    const [t, rc, cu] = rows as [Row, Row, Row];
    console.log(`\n${RATIO_LABEL}`);
    for (const [name, peer] of [['rclone', rc], ['curl', cu]] as const) {
      console.log(
        `vs ${`${name}:`.padEnd(7)} up ${speedRatio(t.uploadMBs, peer.uploadMBs)}, from file ${speedRatio(t.fromFileMBs, peer.fromFileMBs)}, down ${speedRatio(t.downloadMBs, peer.downloadMBs)}, to file ${speedRatio(t.fileMBs, peer.fileMBs)}, list ${speedRatio(t.listEntriesPerS, peer.listEntriesPerS)}`,
      );
    }
    const speeds = (r: Row) => ({ upload: r.uploadMBs, download: r.downloadMBs, listing: r.listEntriesPerS });
    const fileCells = (peer: string, r: Row) => [
      { row: 'WebDAV (Apache)', column: 'download to file', peer, value: t.fileMBs / r.fileMBs },
      { row: 'WebDAV (Apache)', column: 'upload from file', peer, value: t.fromFileMBs / r.fromFileMBs },
    ];
    summary([
      ...ratioCells('WebDAV (Apache)', 'rclone', speeds(t), speeds(rc)),
      ...fileCells('rclone', rc),
      ...ratioCells('WebDAV (Apache)', 'curl', speeds(t), speeds(cu)),
      ...fileCells('curl', cu),
    ]);
    return rows;
  } finally {
    await app.close();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
