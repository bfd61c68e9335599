/**
 * Upload benchmark: one big file (BENCH_SIZE_MB, default 1024) uploaded by
 * Tributary's uploader and by the reference tools, same part size (8 MiB) and concurrency (8;
 * Tributary's parts in flight are further capped by its memory budget, 32 MiB by default, or
 * BENCH_MEMORY_BUDGET_MB to compare another),
 * median of 3 runs each, ratio printed as Tributary's speed ÷ the tool's (>1 = Tributary faster):
 *   - s3rver and moto: `aws s3 cp`, `rclone copyto` (multipart forced, --s3-no-head)
 *   - Azurite: the SDK's own BlockBlobClient.uploadFile
 * and, on s3rver, one object downloaded into a file by Tributary's downloader (which also gives
 * its peak memory), `aws s3 cp` and `rclone copyto`, in turns.
 * (The local folder against `cp` is test/bench/local.bench.ts.)
 * Tributary runs in a child process (as it would after a restart) so its peak RSS is its own.
 * On S3 each upload also prints the client's and the server's CPU time (both emulators are one
 * process, single-threaded where it counts) and, for Tributary, how much of the time the
 * CompleteMultipartUpload step (and the check after it) took: the server's share of the work.
 * On moto that step depends on the checksum the client names at CreateMultipartUpload: aws cli
 * names CRC32 (one CRC per part), Tributary and rclone name none, and moto builds the default
 * full-object checksum from whole copies of the object (docs/measurements.md, Uploads).
 * BENCH_UPLOAD_TARGETS=s3rver,moto,azurite picks the targets (all by default).
 * BENCH_BASELINE=<another checkout> also runs that checkout's uploader in each round, in turn with
 * the others (rows "tributary (baseline)"), to compare two versions under the same load.
 *   node scripts/run-ts.mjs test/bench/uploads.bench.ts
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient } from '@azure/storage-blob';
import { createApp } from '../../src-main/app';
import { MultipartService } from '../../src-main/uploads/multipart';
import { Uploader } from '../../src-main/uploads/uploader';
import { startAzurite } from '../servers/azurite';
import { motoBinary, startMoto, startS3rver, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';
import { benchChild } from './child';
import { RATIO_LABEL, summary, timeRatio, type SummaryCell } from './ratio';

const MiB = 1024 * 1024;
const PART = 8 * MiB;
const CONCURRENCY = 8;
const RUNS = 3;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

interface ChildResult {
  ms: number;
  /** CPU (user + system) of the child during the transfer. */
  cpuMs: number;
  /** From the last confirmed part to the end (complete and check); absent without parts. */
  tailMs?: number;
  maxRssMb: number;
  baseRssMb: number;
}

/**
 * One Tributary upload of `file` in a fresh process, or with a `name` of `download:<key>` one
 * download of that object to `file` (the downloader): prints {ms, maxRssMb, baseRssMb}.
 */
async function child(args: string[]): Promise<number> {
  const [dataDir, service, optionsJson, file, name] = args;
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  try {
    const existing = app.accounts.list().find((a) => a.service === service);
    const account = existing?.id ?? (await app.accounts.connect({ service, options: JSON.parse(optionsJson) })).id;
    const budget = process.env.BENCH_MEMORY_BUDGET_MB ? Number(process.env.BENCH_MEMORY_BUDGET_MB) * MiB : undefined;
    let lastPart = 0;
    const uploader = new Uploader(app, new MultipartService(app), { concurrency: { [service]: CONCURRENCY }, memoryBudget: budget, onPart: () => (lastPart = performance.now()) });
    // The connector (the SDK it loads on first use, its first request) is part of idle, not of
    // the transfer: an account is listed before anything is uploaded to it or downloaded.
    await app.storage.list(account, 'root', 1, 10);
    const baseRssMb = process.memoryUsage().rss / MiB;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    if (name.startsWith('download:')) await app.downloads.download({ accountId: account, fileId: app.storage.idOf(account, `/${name.slice('download:'.length)}`), targetPath: file });
    else await uploader.upload({ accountId: account, parentId: 'root', localPath: file, name });
    const end = performance.now();
    const cpu = process.cpuUsage(cpu0);
    const ms = end - t0;
    console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, tailMs: lastPart ? end - lastPart : undefined, maxRssMb: process.resourceUsage().maxRSS / 1024, baseRssMb }));
    return 0;
  } finally {
    await app.close();
  }
}

const BASELINE = process.env.BENCH_BASELINE;

async function tributary(dataDir: string, service: string, options: unknown, file: string, name: string, tree?: string): Promise<ChildResult> {
  return benchChild<ChildResult>('uploads.bench.ts', [dataDir, service, JSON.stringify(options), file, name], 'Tributary upload', tree);
}

/** The baseline checkout's upload of `file` (BENCH_BASELINE), in its own data folder; recorded in `row`. */
async function baseline(rows: Row[], target: string, dataDir: string, service: string, options: unknown, file: string, name: string): Promise<void> {
  if (!BASELINE) return;
  const r = await tributary(`${dataDir}-baseline`, service, options, file, name, BASELINE);
  let row = rows.find((x) => x.target === target && x.tool === 'tributary (baseline)');
  if (!row) rows.push((row = { target, tool: 'tributary (baseline)', runs: [], aboveIdle: [] }));
  row.runs.push(r.ms);
  row.aboveIdle!.push(r.maxRssMb - r.baseRssMb);
}

/** A tool's run: wall time, and its CPU time where /usr/bin/time is there to report it. */
function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { ms: number; cpuMs?: number } {
  const time = existsSync('/usr/bin/time');
  const t0 = performance.now();
  const r = time ? spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', cmd, ...args], { env, encoding: 'utf8' }) : spawnSync(cmd, args, { env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  const cpu = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr ?? '');
  return { ms, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : undefined };
}

/** CPU time (user + system) a process has used so far, in ms; undefined where /proc cannot tell. */
function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields 14 and 15 of /proc/<pid>/stat, counted after the command name's closing parenthesis.
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks: USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

async function makeFile(path: string, size: number): Promise<void> {
  const out = createWriteStream(path);
  for (let left = size; left > 0; left -= PART) {
    if (!out.write(randomBytes(Math.min(PART, left)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function emptyBucket(s: S3Server): Promise<void> {
  const c = new S3Client({ endpoint: s.endpoint, region: s.region, forcePathStyle: true, credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } });
  try {
    const list = await c.send(new ListObjectsV2Command({ Bucket: s.bucket }));
    for (const o of list.Contents ?? []) await c.send(new DeleteObjectCommand({ Bucket: s.bucket, Key: o.Key! }));
  } finally {
    c.destroy();
  }
}

interface Row {
  target: string;
  /** What was timed: uploads unless said. */
  column?: 'download to file';
  tool: string;
  runs: number[];
  /** Tributary's peak RSS above idle per run (MiB). */
  aboveIdle?: number[];
  /** Per run on S3: the tool's CPU, the server's CPU during the run, Tributary's complete-and-check time (ms). */
  cpu?: { client?: number; server?: number; tail?: number }[];
}

/** The peers' environments for server `s`: aws cli with 8 MiB parts, 8 in flight; an environment-only rclone remote `B:`. */
function peerEnvs(s: S3Server, work: string): { awsEnv: NodeJS.ProcessEnv; rcloneEnv: NodeJS.ProcessEnv } {
  const awsConfig = join(work, 'aws-config');
  writeFileSync(awsConfig, `[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = ${CONCURRENCY}\n  multipart_threshold = 8MB\n  multipart_chunksize = 8MB\n`);
  const awsEnv = { ...process.env, AWS_CONFIG_FILE: awsConfig, AWS_ACCESS_KEY_ID: s.accessKeyId, AWS_SECRET_ACCESS_KEY: s.secretAccessKey, AWS_DEFAULT_REGION: 'us-east-1' };
  const rcloneEnv: NodeJS.ProcessEnv = {
    ...process.env,
    RCLONE_CONFIG: '/dev/null',
    RCLONE_CONFIG_B_TYPE: 's3',
    RCLONE_CONFIG_B_PROVIDER: 'Other',
    RCLONE_CONFIG_B_ENDPOINT: s.endpoint,
    RCLONE_CONFIG_B_ACCESS_KEY_ID: s.accessKeyId,
    RCLONE_CONFIG_B_SECRET_ACCESS_KEY: s.secretAccessKey,
    RCLONE_CONFIG_B_REGION: 'us-east-1',
    RCLONE_CONFIG_B_FORCE_PATH_STYLE: 'true',
  };
  delete rcloneEnv.AWS_CA_BUNDLE; // rclone 1.60 fails with LoadCustomCABundleError otherwise
  return { awsEnv, rcloneEnv };
}

async function benchS3(label: string, s: S3Server, file: string, work: string, rows: Row[], rss: number[], baseRss: number[]): Promise<void> {
  const dataDir = join(work, `data-${label}`);
  const trib: number[] = [];
  const aws: number[] = [];
  const rclone: number[] = [];
  const { awsEnv, rcloneEnv } = peerEnvs(s, work);
  const cpu: Record<string, { client?: number; server?: number; tail?: number }[]> = { tributary: [], 'aws s3 cp': [], 'rclone copyto': [] };
  /** Runs `fn`, recording the server's CPU over it beside what `fn` reports. */
  const withServerCpu = async <T extends { cpuMs?: number; tailMs?: number }>(tool: string, fn: () => Promise<T> | T): Promise<T> => {
    const before = processCpuMs(s.pid());
    const r = await fn();
    const after = processCpuMs(s.pid());
    cpu[tool]!.push({ client: r.cpuMs, server: before !== undefined && after !== undefined ? after - before : undefined, tail: r.tailMs });
    return r;
  };
  for (let i = 0; i < RUNS; i++) {
    const r = await withServerCpu('tributary', () => tributary(dataDir, 's3', s.options, file, `trib-${i}.bin`));
    trib.push(r.ms);
    rss.push(r.maxRssMb);
    baseRss.push(r.baseRssMb);
    await emptyBucket(s);
    await baseline(rows, label, dataDir, 's3', s.options, file, `base-${i}.bin`);
    await emptyBucket(s);
    aws.push((await withServerCpu('aws s3 cp', () => timed('aws', ['--endpoint-url', s.endpoint, 's3', 'cp', '--only-show-errors', file, `s3://${s.bucket}/aws-${i}.bin`], awsEnv))).ms);
    await emptyBucket(s);
    const rcloneArgs = ['copyto', '--s3-no-head', '--s3-upload-cutoff', '8M', '--s3-chunk-size', '8M', '--s3-upload-concurrency', String(CONCURRENCY), file, `B:${s.bucket}/rclone-${i}.bin`];
    rclone.push((await withServerCpu('rclone copyto', () => timed('rclone', rcloneArgs, rcloneEnv))).ms);
    await emptyBucket(s);
  }
  rows.push(
    { target: label, tool: 'tributary', runs: trib, aboveIdle: trib.map((_, i) => rss[rss.length - trib.length + i]! - baseRss[baseRss.length - trib.length + i]!), cpu: cpu.tributary },
    { target: label, tool: 'aws s3 cp', runs: aws, cpu: cpu['aws s3 cp'] },
    { target: label, tool: 'rclone copyto', runs: rclone, cpu: cpu['rclone copyto'] },
  );
}

export async function main(args: string[] = []): Promise<number> {
  if (args[0] === 'child') return child(args.slice(1));
  const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 1024);
  const size = sizeMb * MiB;
  const work = scratchDir('bench-uploads');
  const rows: Row[] = [];
  const rss: number[] = [];
  const baseRss: number[] = [];
  const downAbove: number[] = [];
  const downMs: number[] = [];
  try {
    const file = join(work, 'big.bin');
    await makeFile(file, size);
    console.log(`uploads bench: ${sizeMb} MiB file, part ${PART / MiB} MiB, concurrency ${CONCURRENCY}, median of ${RUNS}`);

    const targets = new Set((process.env.BENCH_UPLOAD_TARGETS ?? 's3rver,moto,azurite').split(','));
    if (targets.has('s3rver')) {
      const s3rver = await startS3rver();
      try {
        await benchS3('s3rver', s3rver, file, work, rows, rss, baseRss);
        // The downloader's memory, on the same server: the file back out of the bucket.
        const c = new S3Client({ endpoint: s3rver.endpoint, region: s3rver.region, forcePathStyle: true, credentials: { accessKeyId: s3rver.accessKeyId, secretAccessKey: s3rver.secretAccessKey } });
        try {
          await c.send(new PutObjectCommand({ Bucket: s3rver.bucket, Key: 'down.bin', Body: createReadStream(file), ContentLength: size }));
          await c.send(new PutObjectCommand({ Bucket: s3rver.bucket, Key: 'empty.bin', Body: '', ContentLength: 0 }));
        } finally {
          c.destroy();
        }
        // And its speed into a file against the peers' (each after a `sync`, the tools in turn,
        // each round starting with another): aws cli in 8 MiB ranges, 8 at once; rclone in its
        // multi-thread download (4 ranges above 250 MiB); Tributary in 4 ranges from 256 MiB.
        // A peer's time includes starting its process (aws cli's Python: about half a second),
        // which Tributary's, timed inside its process, does not: each peer's least time for an
        // empty object, its start and one request, is taken off its times.
        const { awsEnv, rcloneEnv } = peerEnvs(s3rver, work);
        const target = join(work, 'down.bin');
        const awsGet = (key: string) => timed('aws', ['--endpoint-url', s3rver.endpoint, 's3', 'cp', '--only-show-errors', `s3://${s3rver.bucket}/${key}`, target], awsEnv).ms;
        const rcloneGet = (key: string) => timed('rclone', ['copyto', `B:${s3rver.bucket}/${key}`, target], rcloneEnv).ms;
        const least = (get: (key: string) => number) => Math.min(...Array.from({ length: RUNS }, () => get('empty.bin')));
        const fixed = { aws: least(awsGet), rclone: least(rcloneGet) };
        console.log(`download into a file: each peer's start and one request, taken off its times: aws cli ${fmt(fixed.aws)}, rclone ${fmt(fixed.rclone)}`);
        const steps: [string, () => Promise<number>][] = [
          [
            'tributary',
            async () => {
              const r = await tributary(join(work, 'data-s3rver'), 's3', s3rver.options, target, 'download:down.bin');
              downAbove.push(r.maxRssMb - r.baseRssMb);
              downMs.push(r.ms);
              return r.ms;
            },
          ],
          ['aws s3 cp', async () => awsGet('down.bin') - fixed.aws],
          ['rclone copyto', async () => rcloneGet('down.bin') - fixed.rclone],
        ];
        const down: Record<string, number[]> = {};
        for (let i = 0; i < RUNS; i++) {
          for (let k = 0; k < steps.length; k++) {
            const [tool, step] = steps[(k + i) % steps.length]!;
            spawnSync('sync');
            (down[tool] ??= []).push(await step());
            rmSync(target);
          }
        }
        rows.push(...Object.entries(down).map(([tool, runs]) => ({ target: 's3rver', column: 'download to file' as const, tool, runs })));
      } finally {
        await s3rver.stop();
      }
    }
    if (targets.has('moto') && motoBinary()) {
      const moto = await startMoto();
      try {
        await benchS3('moto', moto, file, work, rows, rss, baseRss);
      } finally {
        await moto.stop();
      }
    } else if (targets.has('moto')) {
      console.log('moto_server not on PATH: moto rows skipped');
    }

    if (targets.has('azurite')) {
      const az = await startAzurite();
      try {
        const trib: number[] = [];
        const sdk: number[] = [];
        const container = BlobServiceClient.fromConnectionString(az.connectionString).getContainerClient(az.container);
        for (let i = 0; i < RUNS; i++) {
          const r = await tributary(join(work, 'data-azure'), 'azure', az.options, file, `trib-${i}.bin`);
          trib.push(r.ms);
          rss.push(r.maxRssMb);
          baseRss.push(r.baseRssMb);
          await container.deleteBlob(`trib-${i}.bin`);
          if (BASELINE) {
            await baseline(rows, 'azurite', join(work, 'data-azure'), 'azure', az.options, file, `base-${i}.bin`);
            await container.deleteBlob(`base-${i}.bin`);
          }
          const t0 = performance.now();
          await container.getBlockBlobClient(`sdk-${i}.bin`).uploadFile(file, { blockSize: PART, concurrency: CONCURRENCY });
          sdk.push(performance.now() - t0);
          await container.deleteBlob(`sdk-${i}.bin`);
        }
        rows.push({ target: 'azurite', tool: 'tributary', runs: trib, aboveIdle: trib.map((_, i) => rss[rss.length - trib.length + i]! - baseRss[baseRss.length - trib.length + i]!) }, { target: 'azurite', tool: 'SDK uploadFile', runs: sdk });
      } finally {
        await az.stop();
      }
    }

    console.log(`\n| target | tool | median | runs | MiB/s | ${RATIO_LABEL} | peak RSS above idle (MiB) |`);
    console.log('|---|---|---|---|---|---|---|');
    for (const row of rows) {
      const m = median(row.runs);
      const ours = median(rows.find((r) => r.target === row.target && r.column === row.column && r.tool === 'tributary')!.runs);
      const ratio = row.tool === 'tributary' ? '' : timeRatio(ours, m);
      const above = row.aboveIdle?.map((x) => x.toFixed(0)).join(', ') ?? '';
      console.log(`| ${row.target}${row.column ? `, ${row.column}` : ''} | ${row.tool} | ${fmt(m)} | ${row.runs.map(fmt).join(', ')} | ${(sizeMb / (m / 1000)).toFixed(0)} | ${ratio} | ${above} |`);
    }
    console.log(`\n| target | tool | client CPU (s) | server CPU (s) | complete and check (s) |`);
    console.log('|---|---|---|---|---|');
    const secs = (xs: (number | undefined)[]) => (xs.every((x) => x !== undefined) ? xs.map((x) => (x! / 1000).toFixed(1)).join(', ') : '—');
    for (const row of rows.filter((r) => r.cpu)) {
      console.log(`| ${row.target}${row.column ? `, ${row.column}` : ''} | ${row.tool} | ${secs(row.cpu!.map((c) => c.client))} | ${secs(row.cpu!.map((c) => c.server))} | ${row.tool === 'tributary' ? secs(row.cpu!.map((c) => c.tail)) : ''} |`);
    }
    const ROW: Record<string, string> = { s3rver: 'S3 multipart (s3rver)', moto: 'S3 multipart (moto)', azurite: 'Azure (Azurite)' };
    const PEER: Record<string, string> = { 'aws s3 cp': 'aws cli', 'rclone copyto': 'rclone', 'SDK uploadFile': 'SDK uploadFile' };
    const oursMs = (r: Row) => median(rows.find((x) => x.target === r.target && x.column === r.column && x.tool === 'tributary')!.runs)!;
    // Times, so the speed ratio is the peer's time ÷ Tributary's.
    const cells: SummaryCell[] = rows
      .filter((r) => !r.tool.startsWith('tributary'))
      .map((r) =>
        r.column
          ? { row: 'S3 (s3rver)', column: r.column, peer: PEER[r.tool] ?? r.tool, value: median(r.runs)! / oursMs(r) }
          : { row: ROW[r.target] ?? r.target, column: 'upload', peer: PEER[r.tool] ?? r.tool, value: median(r.runs)! / oursMs(r) },
      );
    const above = rss.map((peak, i) => peak - baseRss[i]!);
    cells.push({ row: 'memory', column: `uploader peak above idle, ${sizeMb} MiB (max of ${above.length})`, value: Math.max(...above), unit: 'MiB' });
    if (downAbove.length) cells.push({ row: 'memory', column: `downloader peak above idle, S3 (s3rver), ${sizeMb} MiB (max of ${downAbove.length})`, value: Math.max(...downAbove), unit: 'MiB' });
    console.log(`\nuploader peak RSS above idle per run: ${above.map((x) => x.toFixed(0)).join(', ')} MiB`);
    console.log(`downloader (s3rver) peak RSS above idle per run: ${downAbove.map((x) => x.toFixed(0)).join(', ')} MiB; times ${downMs.map(fmt).join(', ')}`);
    summary(cells);
    console.log(
      `\nTributary uploader peak RSS: ${Math.max(...rss).toFixed(0)} MiB (max over ${rss.length} runs); RSS of the same process just before the upload: ${Math.max(...baseRss).toFixed(0)} MiB (app, SDKs and the bench's Vite SSR loader)`,
    );
    console.log(`tools: ${execFileSync('aws', ['--version'], { encoding: 'utf8' }).trim()}; ${execFileSync('rclone', ['--version'], { encoding: 'utf8' }).split('\n')[0]}`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
