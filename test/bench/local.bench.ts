/**
 * Local folder benchmark: one big file (BENCH_SIZE_MB, default 1024) on this disk, median of 3
 * runs each, ratio printed as Tributary's speed ÷ the tool's (>1 = Tributary faster):
 *   - upload: Tributary's uploader puts a desktop file into a local account, vs `cp`
 *   - copy: a copy from one local account into another (the copy service), vs `cp`
 * Tributary fsyncs each written file before it gets its name and `cp` does not, so every
 * Tributary figure is measured twice: as it runs ("with fsync", also against `cp` followed by
 * `sync` of the file) and with the account's `syncWrites: false` ("without fsync").
 * Every run, Tributary's and the tools', starts after a `sync` of the whole disk.
 * Each Tributary run is a fresh child process (as after a restart), so its peak RSS is its own:
 * the summary prints the peak above the RSS just before the transfer (uploader, and the
 * downloader taking the file back out of the account).
 *   node scripts/run-ts.mjs test/bench/local.bench.ts
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from '../../src-main/app';
import { scratchDir } from '../servers/util';
import { benchChild } from './child';
import { RATIO_LABEL, summary, timeRatio, type SummaryCell } from './ratio';

const MiB = 1024 * 1024;
const RUNS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

type Mode = 'upload' | 'copy' | 'download';

interface ChildResult {
  ms: number;
  maxRssMb: number;
  baseRssMb: number;
}

/**
 * One transfer in a fresh process, printing {ms, maxRssMb, baseRssMb}: `upload` puts `file` into
 * a local account on `target`; `copy` copies it from a local account on its folder into one on
 * `target`; `download` takes it out of a local account on its folder to `target`/`name`.
 */
async function child(args: string[]): Promise<number> {
  const [mode, dataDir, file, target, name, sync] = args as [Mode, string, string, string, string, string];
  const syncWrites = sync === 'fsync';
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  try {
    const dest = (await app.accounts.connect({ service: 'local', options: { path: target, syncWrites } })).id;
    const src = (await app.accounts.connect({ service: 'local', options: { path: join(file, '..'), syncWrites } })).id;
    await app.accounts.storage(dest);
    await app.accounts.storage(src);
    const baseRssMb = process.memoryUsage().rss / MiB;
    const t0 = performance.now();
    if (mode === 'upload') await app.uploads.uploader.upload({ accountId: dest, parentId: 'root', localPath: file, name });
    else if (mode === 'copy') await app.storage.copy(src, app.storage.idOf(src, `/${file.split('/').at(-1)}`), { parentId: 'root', account: dest, name });
    else await app.downloads.download({ accountId: src, fileId: app.storage.idOf(src, `/${file.split('/').at(-1)}`), targetPath: join(target, name) });
    const ms = performance.now() - t0;
    console.log(JSON.stringify({ ms, maxRssMb: process.resourceUsage().maxRSS / 1024, baseRssMb }));
    return 0;
  } finally {
    await app.close();
  }
}

async function tributary(mode: Mode, dataDir: string, file: string, target: string, name: string, sync: boolean): Promise<ChildResult> {
  rmSync(dataDir, { recursive: true, force: true });
  flushed();
  return benchChild<ChildResult>('local.bench.ts', [mode, dataDir, file, target, name, sync ? 'fsync' : 'none'], `Tributary ${mode}`);
}

/**
 * Every run starts after a `sync`: the writeback of the run before (a file written without
 * fsync, a data folder) would otherwise fall on whichever run comes next.
 */
function flushed(): void {
  spawnSync('sync');
}

function timed(cmd: string, args: string[]): number {
  flushed();
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return performance.now() - t0;
}

async function makeFile(path: string, size: number): Promise<void> {
  const out = createWriteStream(path);
  for (let left = size; left > 0; left -= 8 * MiB) {
    if (!out.write(randomBytes(Math.min(8 * MiB, left)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

export async function main(args: string[] = []): Promise<number> {
  if (args[0] === 'child') return child(args.slice(1));
  const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 1024);
  const work = scratchDir('bench-local');
  try {
    const source = join(work, 'source');
    const folder = join(work, 'target');
    mkdirSync(source);
    mkdirSync(folder);
    const file = join(source, 'big.bin');
    await makeFile(file, sizeMb * MiB);
    spawnSync('sync', [file]);
    console.log(`local bench: ${sizeMb} MiB file, one disk, median of ${RUNS}, runs interleaved`);

    const runs: Record<string, number[]> = {};
    const add = (k: string, ms: number) => (runs[k] ??= []).push(ms);
    const above: Record<string, number[]> = { uploader: [], downloader: [] };
    for (let i = 0; i < RUNS; i++) {
      for (const sync of [true, false]) {
        const how = sync ? 'with fsync' : 'without fsync';
        const up = await tributary('upload', join(work, 'data'), file, folder, `up-${i}.bin`, sync);
        add(`upload ${how}`, up.ms);
        above.uploader!.push(up.maxRssMb - up.baseRssMb);
        rmSync(join(folder, `up-${i}.bin`));
        add(`copy ${how}`, (await tributary('copy', join(work, 'data'), file, folder, `copy-${i}.bin`, sync)).ms);
        rmSync(join(folder, `copy-${i}.bin`));
      }
      const down = await tributary('download', join(work, 'data'), file, folder, `down-${i}.bin`, true);
      above.downloader!.push(down.maxRssMb - down.baseRssMb);
      rmSync(join(folder, `down-${i}.bin`));
      add('cp', timed('cp', [file, join(folder, `cp-${i}.bin`)]));
      rmSync(join(folder, `cp-${i}.bin`));
      add('cp + sync', timed('sh', ['-c', 'cp "$1" "$2" && sync "$2"', 'sh', file, join(folder, `cps-${i}.bin`)]));
      rmSync(join(folder, `cps-${i}.bin`));
    }

    console.log(`\n| what | median | runs | MiB/s |`);
    console.log('|---|---|---|---|');
    for (const [k, xs] of Object.entries(runs)) console.log(`| ${k} | ${fmt(median(xs))} | ${xs.map(fmt).join(', ')} | ${(sizeMb / (median(xs) / 1000)).toFixed(0)} |`);
    const cells: SummaryCell[] = [];
    // Disk-bound runs on a shared machine swing several-fold with other writers' flushes: the
    // ratio of the best runs is printed beside the medians' (the summary keeps the medians).
    console.log(`\n| Tributary | peer | ${RATIO_LABEL}, medians | best runs |`);
    console.log('|---|---|---|---|');
    for (const op of ['upload', 'copy']) {
      for (const [how, peer] of [
        ['with fsync', 'cp'],
        ['with fsync', 'cp + sync'],
        ['without fsync', 'cp'],
      ] as const) {
        const ours = median(runs[`${op} ${how}`]!);
        const theirs = median(runs[peer]!);
        console.log(`| ${op} ${how} | ${peer} | ${timeRatio(ours, theirs)} | ${timeRatio(Math.min(...runs[`${op} ${how}`]!), Math.min(...runs[peer]!))} |`);
        cells.push({ row: `local (${how})`, column: op, peer, value: theirs / ours });
      }
    }
    for (const [who, xs] of Object.entries(above)) {
      cells.push({ row: 'memory', column: `${who} peak above idle, local, ${sizeMb} MiB (max of ${xs.length})`, value: Math.max(...xs), unit: 'MiB' });
      console.log(`${who} peak RSS above idle: ${xs.map((x) => x.toFixed(0)).join(', ')} MiB`);
    }
    summary(cells);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
