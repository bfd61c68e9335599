#!/usr/bin/env node
// `npm run bench [-- flags] [name…]`: runs test/bench/*.bench.ts (all, or those whose names
// contain one of the names) one after another, each printing its own figures, then ends with
// one summary table of every figure the benches reported (ratios are Tributary's speed ÷ the
// peer's, above 1: Tributary faster). README's "Measured" section is copied from that table.
//   --size-mb N     file size of the transfer benches (default 1024)
//   --entries N     entries of the listing benches (default 100000)
//   --quick         64 MiB and 5,000 entries (a first look; the defaults are what counts)
//   --repeat N      runs each bench N times; the table shows the median and the spread
//   --seconds N     seconds per REST load run (default 5)
// Flags become the environment variables each bench documents (BENCH_SIZE_MB, ...); those
// variables, when already set, are kept unless a flag overrides them.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const MARKER = 'BENCH-SUMMARY '; // test/bench/ratio.ts, SUMMARY_MARKER
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const env = { ...process.env };
const filters = [];
let repeat = 1;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const value = () => {
    const v = argv[++i];
    if (v === undefined || !/^\d+$/.test(v)) throw new Error(`${a} needs a whole number`);
    return v;
  };
  if (a === '--size-mb') env.BENCH_SIZE_MB = value();
  else if (a === '--entries') env.BENCH_LIST_ENTRIES = env.BENCH_ENTRIES = value();
  else if (a === '--seconds') env.BENCH_SECONDS = value();
  else if (a === '--repeat') repeat = Math.max(1, Number(value()));
  else if (a === '--quick') {
    env.BENCH_SIZE_MB ??= '64';
    env.BENCH_LIST_ENTRIES ??= '5000';
    env.BENCH_ENTRIES ??= '5000';
    env.BENCH_SECONDS ??= '3';
  } else if (a.startsWith('--')) throw new Error(`unknown flag ${a}`);
  else filters.push(a);
}

const benches = readdirSync(join(root, 'test/bench'))
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

/** Runs one bench, echoing its output, and returns the summary cells it reported. */
function run(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'scripts/run-ts.mjs'), join('test/bench', file)], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    const cells = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith(MARKER)) cells.push(JSON.parse(line.slice(MARKER.length)));
      else console.log(line);
    });
    child.on('close', (code) => resolve({ ok: code === 0, cells }));
  });
}

let failed = 0;
const all = [];
for (let round = 1; round <= repeat; round++) {
  for (const file of benches) {
    console.log(`\n=== ${file}${repeat > 1 ? ` (run ${round} of ${repeat})` : ''}`);
    const r = await run(file);
    if (!r.ok) failed++;
    all.push(...r.cells);
  }
}

const key = (c) => `${c.row}\u0000${c.peer ?? ''}\u0000${c.column}`;
const groups = new Map();
for (const c of all) {
  const k = key(c);
  if (!groups.has(k)) groups.set(k, []);
  groups.get(k).push(c);
}
const digits = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));
const cell = (cs) => {
  const vs = cs.map((c) => c.value).sort((a, b) => a - b);
  const median = vs[Math.floor(vs.length / 2)];
  const unit = cs[0].unit ? ` ${cs[0].unit}` : '';
  return vs.length > 1 ? `${digits(median)}${unit} (${digits(vs[0])}–${digits(vs.at(-1))}, n=${vs.length})` : `${digits(median)}${unit}`;
};

const ratios = all.filter((c) => c.peer);
const figures = all.filter((c) => !c.peer);
const sizes = `${env.BENCH_SIZE_MB ?? 1024} MiB, ${env.BENCH_LIST_ENTRIES ?? 100000} entries`;
if (ratios.length) {
  const columns = [...new Set(ratios.map((c) => c.column))];
  console.log(`\n## Summary: Tributary's speed ÷ the peer's (above 1: Tributary faster), ${sizes}${repeat > 1 ? `, median (min–max) of ${repeat} runs` : ''}\n`);
  console.log(`| backend | peer | ${columns.join(' | ')} |`);
  console.log(`|---|---|${columns.map(() => '---').join('|')}|`);
  const rows = [...new Set(ratios.map((c) => `${c.row}\u0000${c.peer}`))];
  for (const r of rows) {
    const [row, peer] = r.split('\u0000');
    const line = columns.map((col) => {
      const cs = groups.get(`${row}\u0000${peer}\u0000${col}`);
      return cs ? cell(cs) : '—';
    });
    console.log(`| ${row} | ${peer} | ${line.join(' | ')} |`);
  }
}
if (figures.length) {
  console.log(`\n## Summary: figures${repeat > 1 ? `, median (min–max) of ${repeat} runs` : ''}\n`);
  console.log('| what | figure |');
  console.log('|---|---|');
  const seen = new Set();
  for (const c of figures) {
    const k = key(c);
    if (seen.has(k)) continue;
    seen.add(k);
    console.log(`| ${c.row}: ${c.column} | ${cell(groups.get(k))} |`);
  }
}
process.exit(failed ? 1 : 0);
