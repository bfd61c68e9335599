/**
 * SFTP and SMB benchmark: upload and download of one big file and the listing of one huge
 * folder against the same servers (OpenSSH sshd with internal-sftp, Samba smbd; harnesses in
 * test/servers), by Tributary (StorageService over the sftp / smb connectors), rclone 1.60
 * (environment-only config) and the stock command-line clients (OpenSSH `sftp -b`, Samba
 * `smbclient`). For SMB it also times the npm library route that was not chosen (v9u-smb2, in a
 * child node with --openssl-legacy-provider), to keep the choice in docs/sftp-smb.md honest.
 *   npm run bench sftp-smb    (or node scripts/run-ts.mjs test/bench/sftp-smb.bench.ts)
 *   BENCH_SIZE_MB (default 1024), BENCH_LIST_ENTRIES (default 100000), BENCH_LIST_RUNS (default
 *   3: listings run in turns, one per tool per round, best of that many), BENCH_TRANSFER_RUNS
 *   (default 1: uploads and downloads likewise), BENCH_ONLY (sftp or smb: that backend alone)
 * Every upload writes a new file, as Tributary's always does (`newFile`). Every tool writes its
 * download to /dev/null (Tributary pipes its stream into a file stream there, as the REST
 * answer's route does into a socket); for SMB, "to file" also times a download into a file on
 * disk (Tributary's downloader, `smbclient get`, `rclone copyto`), in turns like the listings,
 * and "from file" an upload of the file on disk (Tributary's uploader, which has smbclient `put`
 * read the file, against `smbclient put` and `rclone copyto`), in TRANSFER_RUNS turns, each
 * round's ratios printed. Prints MB/s, entries/s and Tributary's speed ÷ each tool's (>1 =
 * Tributary faster). For SMB, "smbclient through a pipe" times smbclient's own put from and get
 * into a pipe: the ceiling of Tributary's streamed upload and download, which pass through one.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, createReadStream, createWriteStream, mkdirSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createApp, type App } from '../../src-main/app';
import { startSamba } from '../servers/samba';
import { Client, type SFTPWrapper } from 'ssh2';
import { startSshd, type Sshd } from '../servers/sshd';
import { hasBinary, scratchDir } from '../servers/util';
import { RATIO_LABEL, ratioCells, speedRatio, summary } from './ratio';
import { rcloneRemote } from './peers';

const SIZE_MB = Number(process.env.BENCH_SIZE_MB ?? 1024);
const ENTRIES = Number(process.env.BENCH_LIST_ENTRIES ?? 100_000);
/** Listings are timed best-of-N (BENCH_LIST_RUNS, default 3): one listing is short and the load varies. */
const LIST_RUNS = Number(process.env.BENCH_LIST_RUNS ?? 3);
/** Uploads and downloads: rounds of one transfer per tool, best of each (BENCH_TRANSFER_RUNS, default 1). */
const TRANSFER_RUNS = Number(process.env.BENCH_TRANSFER_RUNS ?? 1);

/**
 * An upload that writes a new file: `file` in the server's folder `dir`, left from the round
 * before, is removed, then a `sync` (neither timed). Tributary always writes a new file (a
 * hidden name, then a rename), and on this host's ext4 that is a different write from the
 * peers' overwrite in place: smbclient alone, alternated, took 2.7–2.9 s for 1 GiB to a new name
 * beside the earlier ones and 1.3–1.5 s over an existing file. The server's disk is the
 * source's, so the writeback of the upload before would also be charged to the next tool.
 */
const newFile = (dir: string, file: string, fn: () => number | Promise<number>) => async () => {
  rmSync(join(dir, file), { force: true });
  spawnSync('sync');
  return fn();
};

/** A row per tool from its `up <tool>` and `down <tool>` seconds (listings filled in after). */
function transferRows(tools: string[], seconds: Record<string, number>, MB: number): Row[] {
  return tools.map((tool) => ({ tool, uploadMBs: MB / seconds[`up ${tool}`]!, downloadMBs: MB / seconds[`down ${tool}`]!, listEntriesPerS: null }));
}

/** The best of LIST_RUNS timings. */
async function best(fn: () => number | Promise<number>): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < LIST_RUNS; i++) min = Math.min(min, await fn());
  return min;
}

interface Row {
  tool: string;
  uploadMBs: number | null;
  downloadMBs: number | null;
  listEntriesPerS: number | null;
  /** Download into a file on disk (SMB only). */
  fileMBs?: number | null;
  /** Upload of a file on disk by the desktop uploader's route (SMB only). */
  fromFileMBs?: number | null;
  note?: string;
  /** A measure of the route, not a peer: printed, left out of the summary. */
  reference?: boolean;
}

async function timed(fn: () => unknown | Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

function exec(cmd: string, args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): string {
  const r = spawnSync(cmd, args, { env: options.env ?? process.env, input: options.input, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

const nullSink = () =>
  new Writable({
    write(_chunk, _enc, cb) {
      cb();
    },
  });

function makeSource(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  const block = randomBytes(4 << 20);
  for (let left = bytes; left > 0; left -= block.length) writeSync(fd, block, 0, Math.min(left, block.length));
  closeSync(fd);
}

/** ENTRIES small files written straight to the server's disk (fixture, not measured). */
function makeListing(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < ENTRIES; i++) writeFileSync(join(dir, `entry-${String(i).padStart(6, '0')}.txt`), 'x');
  chmodSync(dir, 0o777);
}

/** Times one page-1 listing of the folder named `name` in the account's root, as REST asks it. */
async function tributaryListing(app: App, acc: number, name: string): Promise<() => Promise<number>> {
  const folder = (await app.storage.list(acc, 'root', 1, 1000)).items.find((i) => i.name === name)!;
  return async () => {
    let total = 0;
    const s = await timed(async () => {
      total = (await app.storage.list(acc, folder.id, 1, 1000)).total;
    });
    if (total !== ENTRIES) throw new Error(`Tributary listed ${total} entries, not ${ENTRIES}`);
    return s;
  };
}

/** Times one `rclone lsf` of `folder`. */
const rcloneListing = (env: NodeJS.ProcessEnv, folder: string) => cliListing('rclone', ['lsf', folder], undefined, env);

/**
 * Times one listing by a command-line tool (`input`: its commands on stdin) and checks that it
 * printed all ENTRIES entries (fixture names start `entry-`; other lines are the tool's own).
 */
function cliListing(cmd: string, args: string[], input?: string, env: NodeJS.ProcessEnv = process.env): () => number {
  return () => {
    let lines = 0;
    const s = spawnTimed(cmd, args, env, false, (out) => (lines = out.split('\n').filter((l) => l.includes('entry-')).length), input);
    if (lines !== ENTRIES) throw new Error(`${cmd} listed ${lines} entries, not ${ENTRIES}`);
    return s;
  };
}

/**
 * Listings (or downloads) of several tools timed in turns, one of each per round for LIST_RUNS
 * rounds, best per tool: a change of load on the shared machine reaches every tool alike.
 */
async function inTurns(tools: Record<string, () => number | Promise<number>>, rounds = LIST_RUNS): Promise<Record<string, number>> {
  const bestOf: Record<string, number> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [tool, fn] of Object.entries(tools)) bestOf[tool] = Math.min(bestOf[tool] ?? Infinity, await fn());
  }
  return bestOf;
}

/** Wall time of one command (process start included, as a user would see it). */
function spawnTimed(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env, stdoutToNull = false, onOut?: (s: string) => void, input?: string): number {
  const t0 = process.hrtime.bigint();
  let out = '';
  if (stdoutToNull) {
    const devnull = openSync('/dev/null', 'w');
    try {
      const r = spawnSync(cmd, args, { env, input, stdio: [input === undefined ? 'ignore' : 'pipe', devnull, 'pipe'] });
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    } finally {
      closeSync(devnull);
    }
  } else {
    out = exec(cmd, args, { env, input });
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  onOut?.(out);
  return s;
}

/** The summary cells of one backend: Tributary (first row) against each peer row. */
function summarize(backend: string, rows: Row[]): void {
  const speeds = (r: Row) => ({ upload: r.uploadMBs, download: r.downloadMBs, listing: r.listEntriesPerS });
  const [ours, ...all] = rows;
  const peers = all.filter((p) => !p.reference);
  summary(peers.flatMap((p) => ratioCells(backend, p.tool, speeds(ours!), speeds(p))));
  summary(peers.filter((p) => p.fileMBs && ours!.fileMBs).map((p) => ({ row: backend, column: 'download to file', peer: p.tool, value: ours!.fileMBs! / p.fileMBs! })));
  summary(peers.filter((p) => p.fromFileMBs && ours!.fromFileMBs).map((p) => ({ row: backend, column: 'upload from file', peer: p.tool, value: ours!.fromFileMBs! / p.fromFileMBs! })));
}

function print(title: string, rows: Row[]): void {
  const fmt = (n: number | null, unit: string) => (n === null ? '—' : `${n >= 100 ? n.toFixed(0) : n.toFixed(1)} ${unit}`);
  const ours = rows[0]!;
  console.log(`\n${title}`);
  const files = ours.fileMBs !== undefined;
  console.log(`tool                 upload        download      ${files ? 'to file       from file     ' : ''}list            | up / down${files ? ' / to file / from file' : ''} / list ${RATIO_LABEL}`);
  for (const r of rows) {
    const line = `${r.tool.padEnd(20)} ${fmt(r.uploadMBs, 'MB/s').padEnd(13)} ${fmt(r.downloadMBs, 'MB/s').padEnd(13)} ${files ? `${fmt(r.fileMBs ?? null, 'MB/s').padEnd(13)} ${fmt(r.fromFileMBs ?? null, 'MB/s').padEnd(13)}` : ''} ${fmt(r.listEntriesPerS, 'entries/s').padEnd(15)}`;
    const file = files ? ` / ${speedRatio(ours.fileMBs ?? null, r.fileMBs ?? null)} / ${speedRatio(ours.fromFileMBs ?? null, r.fromFileMBs ?? null)}` : '';
    console.log(r === ours ? line : `${line} | ${speedRatio(ours.uploadMBs, r.uploadMBs)} / ${speedRatio(ours.downloadMBs, r.downloadMBs)}${file} / ${speedRatio(ours.listEntriesPerS, r.listEntriesPerS)}${r.note ? `  (${r.note})` : ''}`);
  }
}

async function benchSftp(work: string, src: string, bytes: number): Promise<Row[]> {
  const server = await startSshd();
  const app = await createApp({ dataDir: join(work, 'data-sftp'), defaultLocalFolder: false });
  try {
    makeListing(join(server.dataDir, 'many'));
    const acc = await app.accounts.connect({
      service: 'sftp',
      options: { host: server.host, port: server.port, username: server.username, password: server.password, root: server.dataDir },
    });
    // internal-sftp runs no shell: no remote md5sum, no shell probing.
    const env = rcloneRemote('bsftp', { type: 'sftp', host: server.host, port: String(server.port), user: server.username, pass: server.password, shell_type: 'none', disable_hashcheck: 'true' }, work);
    const key = join(work, 'sftp-key');
    writeFileSync(key, server.rootPrivateKey, { mode: 0o600 });
    const ssh = ['-q', '-P', String(server.port), '-i', key, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-b', '-', `root@${server.host}`];
    const MB = bytes / 1e6;
    // Uploads, then downloads, in turns (TRANSFER_RUNS rounds, best of each).
    let id = '';
    const transfers = await inTurns(
      {
        'up Tributary': newFile(server.dataDir, 'tributary.bin', () =>
          timed(async () => {
            id = (await app.storage.upload(acc.id, 'root', 'tributary.bin', createReadStream(src, { highWaterMark: 1 << 20 }), { size: bytes, conflict: 'overwrite' })).id;
          }),
        ),
        'up rclone': newFile(server.dataDir, 'rclone.bin', () => spawnTimed('rclone', ['copyto', src, `bsftp:${server.dataDir}/rclone.bin`], env)),
        'up OpenSSH sftp -b': newFile(server.dataDir, 'cli.bin', () => spawnTimed('sftp', ssh, process.env, true, undefined, `put ${src} ${server.dataDir}/cli.bin\n`)),
        'down Tributary': () =>
          timed(async () => {
            const { stream } = await app.storage.download(acc.id, id);
            await pipeline(stream, createWriteStream('/dev/null'));
          }),
        'down rclone': () => spawnTimed('rclone', ['cat', `bsftp:${server.dataDir}/rclone.bin`], env, true),
        'down OpenSSH sftp -b': () => spawnTimed('sftp', ssh, process.env, true, undefined, `get ${server.dataDir}/cli.bin /dev/null\n`),
      },
      TRANSFER_RUNS,
    );
    const listings = await inTurns({
      Tributary: await tributaryListing(app, acc.id, 'many'),
      rclone: rcloneListing(env, `bsftp:${server.dataDir}/many`),
      'OpenSSH sftp -b': cliListing('sftp', ssh, `ls -1 ${server.dataDir}/many\n`),
    });
    const rows = transferRows(['Tributary', 'rclone', 'OpenSSH sftp -b'], transfers, MB);
    for (const row of rows) row.listEntriesPerS = ENTRIES / listings[row.tool]!;
    rows.push(await ssh2Listing(server, `${server.dataDir}/many`));
    return rows;
  } finally {
    await app.close();
    await server.stop();
  }
}

/**
 * The library's own ceiling for a listing: ssh2's readdir(path) in this process on a fresh
 * connection, no entries made, no sorting (it asks one batch of names at a time).
 */
async function ssh2Listing(server: Sshd, folder: string): Promise<Row> {
  const client = new Client();
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject);
    client.connect({ host: server.host, port: server.port, username: server.username, password: server.password });
  });
  try {
    const sftp = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((e, s) => (e ? reject(e) : resolve(s))));
    let n = 0;
    const list = await best(() =>
      timed(async () => {
        n = (await new Promise<unknown[]>((resolve, reject) => sftp.readdir(folder, (e, l) => (e ? reject(e) : resolve(l))))).length;
      }),
    );
    if (n !== ENTRIES) throw new Error(`ssh2 listed ${n} entries, not ${ENTRIES}`);
    return { tool: 'ssh2 readdir', uploadMBs: null, downloadMBs: null, listEntriesPerS: ENTRIES / list, note: 'the library alone' };
  } finally {
    client.end();
  }
}

async function benchSmb(work: string, src: string, bytes: number): Promise<Row[]> {
  const server = await startSamba();
  const app = await createApp({ dataDir: join(work, 'data-smb'), defaultLocalFolder: false });
  try {
    makeListing(join(server.shareDir, 'many'));
    const acc = await app.accounts.connect({
      service: 'smb',
      options: { host: server.host, port: server.port, share: server.share, workgroup: server.workgroup, username: server.username, password: server.password },
    });
    const env = rcloneRemote('bsmb', { type: 'smb', host: server.host, port: String(server.port), user: server.username, pass: server.password, domain: server.workgroup }, work);
    const MB = bytes / 1e6;
    const cli = ['-s', '/dev/null', '-p', String(server.port), `//${server.host}/${server.share}`, '-U', `${server.username}%${server.password}`];
    const fresh = (file: string, fn: () => number | Promise<number>) => newFile(server.shareDir, file, fn);
    // Uploads, then downloads, in turns (TRANSFER_RUNS rounds, best of each). rclone's smb
    // remote addresses the share as the first path segment. "smbclient through a pipe" is
    // smbclient's own put from / get into a pipe (`cat` at the other end): the ceiling of any
    // route that streams through smbclient's stdin or stdout, as Tributary's does.
    let id = '';
    const transfers = await inTurns(
      {
        'up Tributary': fresh('tributary.bin', () =>
          timed(async () => {
            id = (await app.storage.upload(acc.id, 'root', 'tributary.bin', createReadStream(src, { highWaterMark: 1 << 20 }), { size: bytes, conflict: 'overwrite' })).id;
          }),
        ),
        'up rclone': fresh('rclone.bin', () => spawnTimed('rclone', ['copyto', src, `bsmb:${server.share}/rclone.bin`], env)),
        'up smbclient': fresh('cli.bin', () => spawnTimed('smbclient', [...cli, '-c', `put ${src} cli.bin`], process.env, true)),
        'up smbclient through a pipe': fresh('pipe.bin', () => spawnTimed('sh', ['-c', 'f=$1; shift; cat "$f" | smbclient "$@" -c "put - pipe.bin"', 'sh', src, ...cli], process.env, true)),
        // Piped into a sink that is done with a chunk at its write callback (a file stream here,
        // the socket of a REST answer), the download writes from reused buffers
        // (connectors/smb/read-stream.ts); a consumer that keeps its chunks gets copies.
        'down Tributary': () =>
          timed(async () => {
            const { stream } = await app.storage.download(acc.id, id);
            await pipeline(stream, createWriteStream('/dev/null'));
          }),
        'down Tributary into a consumer that keeps its chunks': () =>
          timed(async () => {
            const { stream } = await app.storage.download(acc.id, id);
            await pipeline(stream, nullSink());
          }),
        'down rclone': () => spawnTimed('rclone', ['cat', `bsmb:${server.share}/rclone.bin`], env, true),
        'down smbclient': () => spawnTimed('smbclient', [...cli, '-c', 'get cli.bin /dev/null'], process.env, true),
        'down smbclient through a pipe': () => spawnTimed('sh', ['-c', 'smbclient "$@" -E -c "get pipe.bin -" | cat > /dev/null', 'sh', ...cli], process.env, true),
      },
      TRANSFER_RUNS,
    );
    const rows = transferRows(['Tributary', 'rclone', 'smbclient', 'smbclient through a pipe'], transfers, MB);
    Object.assign(rows[3]!, { reference: true, note: 'the ceiling of a streamed route' });
    rows.push({
      tool: 'Tributary into a consumer that keeps its chunks',
      uploadMBs: null,
      downloadMBs: MB / transfers['down Tributary into a consumer that keeps its chunks']!,
      listEntriesPerS: null,
      reference: true,
      note: 'a JavaScript sink: gets copies, not the reused buffers',
    });
    const target = join(work, 'downloaded.bin');
    /** Times one download into a file, checks its size and removes it (the disk is not the subject). */
    const intoFile = async (fn: () => unknown) => {
      const s = await timed(fn);
      if (statSync(target).size !== bytes) throw new Error(`a download into a file has ${statSync(target).size} bytes, not ${bytes}`);
      rmSync(target);
      return s;
    };
    const fileId = (await app.storage.list(acc.id, 'root', 1, 1000)).items.find((i) => i.name === 'tributary.bin')!.id;
    const files = await inTurns({
      Tributary: () => intoFile(() => app.downloads.download({ accountId: acc.id, fileId, targetPath: target })),
      rclone: () => intoFile(() => spawnTimed('rclone', ['copyto', `bsmb:${server.share}/rclone.bin`, target], env)),
      smbclient: () => intoFile(() => spawnTimed('smbclient', [...cli, '-c', `get cli.bin ${target}`], process.env, true)),
    });
    for (const row of rows) row.fileMBs = files[row.tool] ? MB / files[row.tool]! : null;
    // Uploads of the file on disk in turns: the desktop uploader (smbclient `put` reads the file,
    // progress from its sent bytes), `smbclient put`, `rclone copyto`, each writing a new file as
    // above (and replacing a file would cost Tributary's atomic publish, a rename over it, an
    // ext4 flush of the new file). Every round is printed.
    const rounds: Record<string, number[]> = { Tributary: [], rclone: [], smbclient: [] };
    const targets: Record<string, string> = { Tributary: 'from-file.bin', rclone: 'rclone-from-file.bin', smbclient: 'cli-from-file.bin' };
    const round = (tool: string, fn: () => number | Promise<number>) =>
      fresh(targets[tool]!, async () => {
        const s = await fn();
        rounds[tool]!.push(s);
        return s;
      });
    const fromFile = await inTurns(
      {
        Tributary: round('Tributary', () => timed(() => app.uploads.uploader.upload({ accountId: acc.id, parentId: 'root', localPath: src, name: 'from-file.bin', overwrite: true }))),
        rclone: round('rclone', () => spawnTimed('rclone', ['copyto', src, `bsmb:${server.share}/rclone-from-file.bin`], env)),
        smbclient: round('smbclient', () => spawnTimed('smbclient', [...cli, '-c', `put ${src} cli-from-file.bin`], process.env, true)),
      },
      TRANSFER_RUNS,
    );
    for (const row of rows) row.fromFileMBs = fromFile[row.tool] ? MB / fromFile[row.tool]! : null;
    rounds.Tributary!.forEach((t, i) => console.log(`SMB upload from file, round ${i + 1}: Tributary ${(MB / t).toFixed(0)} MB/s, ÷ smbclient put ${(rounds.smbclient![i]! / t).toFixed(2)}, ÷ rclone ${(rounds.rclone![i]! / t).toFixed(2)}`));
    const lists = await inTurns({
      Tributary: await tributaryListing(app, acc.id, 'many'),
      rclone: rcloneListing(env, `bsmb:${server.share}/many`),
      smbclient: cliListing('smbclient', [...cli, '-c', 'ls many/*']),
    });
    for (const row of rows) row.listEntriesPerS = lists[row.tool] ? ENTRIES / lists[row.tool]! : null;
    rows.push(library(server.port, server.share, src, bytes));
    return rows;
  } finally {
    await app.close();
    await server.stop();
  }
}

/** The npm route not taken: v9u-smb2 in a child node that has MD4 (legacy OpenSSL provider). */
function library(port: number, share: string, src: string, bytes: number): Row {
  const script = `
    const SMB2 = require(${JSON.stringify(createRequire(import.meta.url).resolve('v9u-smb2'))});
    const fs = require('fs');
    const c = new SMB2({ share: '\\\\\\\\127.0.0.1\\\\${share}', port: ${port}, domain: 'WORKGROUP', username: 'itest', password: 'secret', autoCloseTimeout: 0 });
    const t = () => Number(process.hrtime.bigint()) / 1e9;
    (async () => {
      let t0 = t();
      await new Promise((res, rej) => c.createWriteStream('lib.bin', (e, ws) => e ? rej(e) : fs.createReadStream(${JSON.stringify(src)}).pipe(ws).on('finish', res).on('error', rej)));
      const up = t() - t0; t0 = t();
      await new Promise((res, rej) => c.createReadStream('lib.bin', (e, rs) => { if (e) return rej(e); rs.on('data', () => {}).on('end', res).on('error', rej); }));
      const down = t() - t0; t0 = t();
      const n = (await c.readdir('many')).length;
      const list = t() - t0;
      c.disconnect();
      console.log(JSON.stringify({ up, down, list, n }));
    })().catch((e) => { console.error(e.message); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['--openssl-legacy-provider', '-e', script], { encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) return { tool: 'v9u-smb2 (npm)', uploadMBs: null, downloadMBs: null, listEntriesPerS: null, note: `failed: ${(r.stderr || '').trim().split('\n')[0]}` };
  const m = JSON.parse(r.stdout.trim().split('\n').pop()!) as { up: number; down: number; list: number; n: number };
  const MB = bytes / 1e6;
  return { tool: 'v9u-smb2 (npm)', uploadMBs: MB / m.up, downloadMBs: MB / m.down, listEntriesPerS: m.n / m.list, note: 'needs --openssl-legacy-provider' };
}

export async function main(): Promise<void> {
  for (const bin of ['/usr/bin/rclone', '/usr/bin/sftp', '/usr/bin/smbclient']) if (!hasBinary(bin)) throw new Error(`${bin} is required for this benchmark`);
  const bytes = SIZE_MB * 1024 * 1024;
  console.log(`SFTP/SMB bench: ${SIZE_MB} MiB file, ${ENTRIES} entries, OpenSSH 9.2 internal-sftp and Samba 4.17 on loopback`);
  const work = scratchDir('bench-sftp-smb');
  chmodSync(work, 0o755);
  try {
    const src = join(work, 'source.bin');
    makeSource(src, bytes);
    const only = process.env.BENCH_ONLY;
    const sftp = only === 'smb' ? undefined : await benchSftp(work, src, bytes);
    if (sftp) print('SFTP (OpenSSH internal-sftp)', sftp);
    const smb = only === 'sftp' ? undefined : await benchSmb(work, src, bytes);
    if (smb) print('SMB (Samba smbd, SMB3)', smb);
    if (sftp) summarize('SFTP (OpenSSH)', sftp);
    if (smb) summarize('SMB (Samba)', smb);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
