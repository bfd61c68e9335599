/**
 * REST API benchmark: throughput and p99 latency of a file metadata GET and a
 * folder listing on loopback, with autocannon (p50 and p99 per load), a metadata GET's latency while
 * 100 connections keep listing, and the overhead of the REST path over calling StorageService
 * directly. The server runs in a child process (as a client would see it) over a
 * `memory` account, so the figures are Tributary's own cost, not a disk's or a network's.
 *   npm run bench rest            (BENCH_SECONDS per run, default 5; BENCH_FILES, default 200)
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createApp } from '../../src-main/app';
import { registerRest, restServices } from '../../src-main/rest';
import { createHttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';
import { RATIO_LABEL, summary, timeRatio, type SummaryCell } from './ratio';

interface CannonResult {
  requests: { average: number };
  latency: { average: number; p50: number; p99: number };
  non2xx: number;
  errors: number;
}
// autocannon ships no type declarations: the one call used here, typed.
const autocannon = createRequire(import.meta.url)('autocannon') as (o: {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  workers?: number;
}) => Promise<CannonResult>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const FILES = Number(process.env.BENCH_FILES ?? 200);
const DIRECT_CALLS = 5000;
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const root = join(import.meta.dirname, '..', '..');

interface Ready {
  url: string;
  apiKey: string;
  account: number;
  fileId: string;
  folderId: string;
}

interface Direct {
  directGetUs: number;
  directListUs: number;
}

async function timeCalls(n: number, f: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 200; i++) await f(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await f();
  return ((performance.now() - t0) * 1000) / n;
}

/**
 * The child: a server with one memory account holding FILES files; prints Ready as JSON, then
 * on each "direct" line from stdin times the same service calls made directly (same process
 * state as the REST runs that preceded it) and prints Direct as JSON.
 */
async function serve(): Promise<void> {
  const app = await createApp({ dataDir: join(scratchDir('rest-bench'), 'data'), defaultLocalFolder: false });
  const apiKey = 'bench-api-key-0123456789';
  restServices(app).apiKeys.ensure(apiKey);
  const acc = await app.accounts.connect({ service: 'memory', options: { store: 'bench' } });
  const folder = await app.storage.mkdir(acc.id, 'root', 'folder');
  let fileId = '';
  for (let i = 0; i < FILES; i++) {
    const f = await app.storage.upload(acc.id, folder.id, `file-${String(i).padStart(4, '0')}.txt`, Readable.from([Buffer.from(`file ${i}\n`)]));
    fileId ||= f.id;
  }
  const http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: 'bench-ui-token-0123456789', plugins: [registerRest] });
  const ready: Ready = { url: http.url, apiKey, account: acc.id, fileId, folderId: folder.id };
  console.log(JSON.stringify(ready));
  createInterface({ input: process.stdin }).on('line', async () => {
    const directGetUs = await timeCalls(DIRECT_CALLS, () => app.storage.get(acc.id, fileId));
    const directListUs = await timeCalls(DIRECT_CALLS / 10, () => app.storage.list(acc.id, folder.id, 1, 100));
    console.log(JSON.stringify({ directGetUs, directListUs } satisfies Direct));
  });
  await once(process, 'SIGTERM');
  await http.close();
  await app.close();
  process.exit(0); // stdin stays open in the parent's pipe
}

/** One autocannon run; `ownThread` runs its client in a worker thread (see the mixed load below). */
async function load(url: string, apiKey: string, connections: number, seconds = SECONDS, ownThread = false) {
  const r = await autocannon({ url, connections, duration: seconds, headers: { authorization: `APIKey ${apiKey}` }, ...(ownThread ? { workers: 1 } : {}) });
  if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.average };
}

export async function main(args: string[]): Promise<number> {
  if (args[0] === 'serve') {
    await serve();
    return 0;
  }
  const child = spawn(process.execPath, [join(root, 'scripts/run-ts.mjs'), 'test/bench/rest.bench.ts', 'serve'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const nextLine = async () => {
    const r = await lines.next();
    if (r.done) throw new Error('the server process ended');
    return r.value;
  };
  try {
    const ready = JSON.parse(await nextLine()) as Ready;
    const meta = `${ready.url}/v2/accounts/${ready.account}/storage/files/${ready.fileId}`;
    const list = `${ready.url}/v2/accounts/${ready.account}/storage/folders/${ready.folderId}/contents?page_size=100`;
    console.log(`REST bench: memory account, folder of ${FILES} files, ${SECONDS} s per run, autocannon on loopback, server in a child process`);
    console.log('| request | connections | req/s | mean ms | p50 ms | p99 ms |');
    console.log('|---|---|---|---|---|---|');
    const row = (name: string, connections: number, r: Awaited<ReturnType<typeof load>>) =>
      console.log(`| ${name} | ${connections} | ${r.rps.toFixed(0)} | ${r.mean.toFixed(2)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} |`);
    const rows: [string, string, number][] = [
      ['metadata GET', meta, 10],
      ['folder listing (100 of 200)', list, 10],
      ['metadata GET', meta, 1],
      ['folder listing (100 of 200)', list, 1],
    ];
    const cells: SummaryCell[] = [];
    for (const [name, url, connections] of rows) {
      const r = await load(url, ready.apiKey, connections);
      row(name, connections, r);
      if (connections === 10) {
        cells.push({ row: 'REST', column: `${name} at 10 connections`, value: r.rps, unit: 'req/s' });
        cells.push({ row: 'REST', column: `${name} at 10 connections, p99`, value: r.p99, unit: 'ms' });
      }
    }
    // A metadata request's latency while 100 connections keep listing the folder: listings
    // must not stall the other routes (both loads run at once against the one server). The
    // metadata connections open first: a saturated Node accepts about one new connection per
    // event-loop turn, so a request on a connection opened during the listing load measures
    // the accept queue rather than the route. The listing client runs in a thread of its own:
    // reading 100 connections' answers would otherwise delay this thread's metadata timings.
    const metaRun = load(meta, ready.apiKey, 10, SECONDS + 1);
    await new Promise((r) => setTimeout(r, 500));
    const [busy, metaUnderLoad] = await Promise.all([load(list, ready.apiKey, 100, SECONDS, true), metaRun]);
    row('folder listing, while metadata GETs run', 100, busy);
    row('metadata GET, while 100 connections list', 10, metaUnderLoad);
    // None answered within the run: the p99 is at least the run's length.
    const starved = metaUnderLoad.rps === 0;
    cells.push({ row: 'REST', column: `metadata GET p99 while 100 connections list${starved ? ' (none answered: at least)' : ''}`, value: starved ? SECONDS * 1000 : metaUnderLoad.p99, unit: 'ms' });
    cells.push({ row: 'REST', column: 'folder listing p99 at 100 connections', value: busy.p99, unit: 'ms' });
    cells.push({ row: 'REST', column: 'folder listing at 100 connections', value: busy.rps, unit: 'req/s' });
    // Overhead: sequential time per request through HTTP + REST (1 connection: 1 / throughput,
    // since autocannon's latencies have millisecond resolution) minus the same service call made
    // directly in the server process. Alternated ROUNDS times, medians, to damp a shared machine.
    const restGet: number[] = [];
    const restList: number[] = [];
    const directGet: number[] = [];
    const directList: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      restGet.push(1e6 / (await load(meta, ready.apiKey, 1, 3)).rps);
      restList.push(1e6 / (await load(list, ready.apiKey, 1, 3)).rps);
      child.stdin!.write('direct\n');
      const direct = JSON.parse(await nextLine()) as Direct;
      directGet.push(direct.directGetUs);
      directList.push(direct.directListUs);
    }
    const line = (name: string, d: number, r: number) =>
      console.log(`| ${name} | ${d.toFixed(0)} | ${r.toFixed(0)} | ${(r - d).toFixed(0)} | ${timeRatio(r, d)} |`);
    console.log(`\nREST vs direct StorageService call, sequential, median of ${ROUNDS} alternated rounds (µs per request):`);
    console.log(`| request | direct | REST | overhead | REST vs direct call ${RATIO_LABEL} |`);
    console.log('|---|---|---|---|---|');
    line('metadata GET', median(directGet), median(restGet));
    line('folder listing (100 of 200)', median(directList), median(restList));
    summary(cells);
    return 0;
  } finally {
    child.stdin!.end();
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}
