/**
 * Mail benchmark (spec 2): header sync of N messages (BENCH_MAIL_N, default 10,000;
 * 100,000 for the large run) in F folders (BENCH_MAIL_FOLDERS, default 50; the inbox is one)
 * from Dovecot into Tributary's cache vs `mbsync` full sync of the same mailbox (messages/s,
 * Tributary's speed ÷ mbsync's); the no-change pass over every folder (what NOTIFY and the
 * interval run: one LIST-STATUS, target < 200 ms) vs a no-change `mbsync` run; incremental sync
 * after 100 flag changes; FTS query latency (rare term, common prefix) over the synced set; RSS
 * after sync.
 *   npm run bench mail            BENCH_MAIL_N=100000 BENCH_MAIL_FOLDERS=50 npm run bench mail
 * The fixture is written as Maildir files straight into Dovecot's store (appending one by one
 * takes ~3 ms per message), then indexed with `doveadm index` so neither client pays for it.
 * Tributary runs in a child process, so the RSS printed is its own.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import { createApp } from '../../src-main/app';
import { ftsQuery } from '../../src-main/mail/messages';
import { MailService } from '../../src-main/mail/service';
import { startDovecot } from '../servers/dovecot';
import { scratchDir } from '../servers/util';
import { RATIO_LABEL, timeRatio } from './ratio';

const N = Number(process.env.BENCH_MAIL_N ?? 10_000);
const F = Math.max(1, Number(process.env.BENCH_MAIL_FOLDERS ?? 50));
/** Message i lives in folder i % F; folder 0 is the inbox. */
const INBOX_N = Math.ceil(N / F);
const root = join(import.meta.dirname, '..', '..');
const WORDS = ['alpha', 'budget', 'meeting', 'invoice', 'project', 'review', 'status', 'travel', 'contract', 'report', 'planning', 'quarter', 'design', 'release', 'customer', 'support'];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function message(i: number, date: Date): string {
  const w = (k: number) => WORDS[(i * 7 + k * 13) % WORDS.length];
  // One message carries a rare term; every subject starts with a word of the common-prefix family "pro…".
  const subject = `${i === Math.floor(N / 2) ? 'xylophonic ' : ''}${w(0)} ${w(1)} ${i % 3 === 0 ? 'proposal' : 'progress'} #${i}`;
  const body = Array.from({ length: 24 }, (_, k) => `${w(k)} ${w(k + 1)} line ${k} of message ${i} lorem ipsum dolor sit amet, consectetur adipiscing.`).join('\r\n');
  return (
    `From: Sender ${i % 50} <sender${i % 50}@example.test>\r\nTo: alice@example.test\r\nSubject: ${subject}\r\n` +
    `Date: ${date.toUTCString()}\r\nMessage-ID: <bench${i}@example.test>\r\n` +
    (i % 10 === 0 && i > 0 ? `In-Reply-To: <bench${i - 1}@example.test>\r\nReferences: <bench${i - 1}@example.test>\r\n` : '') +
    `MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n`
  );
}

/** Writes N messages into alice's Maildir: the inbox and F - 1 folders (owned by nobody, like Dovecot's own files). */
function writeFixture(maildir: string): void {
  const dirs = Array.from({ length: F }, (_, f) => (f === 0 ? maildir : join(maildir, `.Folder ${String(f).padStart(2, '0')}`)));
  for (const dir of dirs) for (const d of ['cur', 'new', 'tmp']) mkdirSync(join(dir, d), { recursive: true });
  const start = Date.now() - N * 60_000;
  for (let i = 0; i < N; i++) {
    const date = new Date(start + i * 60_000);
    const file = join(dirs[i % F]!, 'cur', `${Math.floor(date.getTime() / 1000)}.M${i}P1.bench:2,${i % 4 === 0 ? 'S' : ''}`);
    writeFileSync(file, message(i, date));
    utimesSync(file, date, date);
    chownSync(file, 65534, 65534);
  }
  for (const dir of dirs) for (const d of ['', 'cur', 'new', 'tmp']) chownSync(join(dir, d), 65534, 65534);
  chownSync(join(maildir, '..'), 65534, 65534);
}

interface ChildResult {
  fullMs: number;
  count: number;
  incrementalMs: number;
  incrementalUpdated: number;
  noChangeMs: number;
  noChangeSynced: number;
  folders: number;
  ftsRareMs: number;
  ftsRareHits: number;
  ftsPrefixMs: number;
  ftsPrefixHits: number;
  listMs: number;
  rssMb: number;
  baseRssMb: number;
  idleMs: number;
  dbMb: number;
}

/** Runs in a fresh process: full sync, 100 flag changes + incremental sync, FTS timings, RSS. */
async function child(port: number, lmtpPort: number): Promise<void> {
  const dataDir = scratchDir('mail-bench-app');
  const app = await createApp({ dataDir, defaultLocalFolder: false });
  const mail = new MailService({ db: app.db, accounts: app.accounts, events: app.events, keyring: app.keyring, live: false, prefetchBodies: 0 });
  global.gc?.();
  const baseRssMb = process.memoryUsage().rss / 1048576;
  const account = (await app.accounts.connect({ service: 'imap', options: { host: '127.0.0.1', port, tls: 'none', user: 'alice', password: 'secret', smtp_port: 1, smtp_tls: 'none' } }).catch(async () => {
    // verify() also checks SMTP, which the bench has none of: store the account without it.
    const { AccountsTable } = await import('../../src-main/cache/queries/accounts');
    const options = app.keyring.seal('credentials', Buffer.from(JSON.stringify({ host: '127.0.0.1', port, tls: 'none', user: 'alice', password: 'secret' })));
    return new AccountsTable(app.db).insert({ service: 'imap', account: 'alice', options });
  })).id;

  let t = performance.now();
  await mail.sync(account);
  const fullMs = performance.now() - t;
  const count = app.db.prepare('SELECT count(*) FROM mail_messages WHERE account_id = ?').pluck().get(account) as number;

  const ext = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user: 'alice', pass: 'secret' }, logger: false });
  await ext.connect();
  await ext.mailboxOpen('INBOX');
  const uids = [...new Set(Array.from({ length: 100 }, (_, k) => 1 + Math.floor((k * (INBOX_N - 1)) / 100)))];
  // A keyword new to this run: a real change on every run against the same mailbox.
  await ext.messageFlagsAdd(uids.join(','), [`run${process.pid}`], { uid: true });
  await ext.logout();
  const inbox = (await mail.folders.list(account)).find((f) => f.specialUse === 'inbox')!;
  t = performance.now();
  const stats = await mail.sync(account, inbox.id);
  const incrementalMs = performance.now() - t;

  // The no-change pass over every folder (median of 5): one LIST-STATUS, nothing to sync.
  const passes: number[] = [];
  let noChangeSynced = 0;
  for (let k = 0; k < 5; k++) {
    const s = performance.now();
    noChangeSynced += (await mail.refresh(account)).length;
    passes.push(performance.now() - s);
  }
  const folders = (await mail.folders.list(account)).length;

  const time = (fn: () => number) => {
    const runs: number[] = [];
    let hits = 0;
    for (let i = 0; i < 21; i++) {
      const s = performance.now();
      hits = fn();
      runs.push(performance.now() - s);
    }
    return { ms: median(runs), hits };
  };
  const rare = time(() => mail.messages.searchRows(account, ftsQuery('xylophonic'), 101).length);
  const prefix = time(() => mail.messages.searchRows(account, ftsQuery('prop*'), 101).length);
  const list = time(() => app.db.prepare('SELECT count(*) FROM mail_messages').pluck().get() as number);
  t = performance.now();
  const page = await mail.messages.list(account, { after: '1970-01-01T00:00:00Z', page_size: 100, bodies: false });
  const listMs = performance.now() - t;
  void list;
  global.gc?.();
  const rssMb = process.memoryUsage().rss / 1048576;
  const dbMb = (app.db.pragma('page_count', { simple: true }) as number) * (app.db.pragma('page_size', { simple: true }) as number) / 1048576;
  if (page.objects.length !== 100) throw new Error(`list returned ${page.objects.length}`);
  // IDLE latency: LMTP delivery → the message is in the cache and mail.changed was emitted.
  const live = new MailService({ db: app.db, accounts: app.accounts, events: app.events, keyring: app.keyring, prefetchBodies: 0 });
  await live.folders.list(account);
  const lmtp = nodemailer.createTransport({ host: '127.0.0.1', port: lmtpPort, lmtp: true, ignoreTLS: true });
  const idleRuns: number[] = [];
  for (let k = 0; k < 5; k++) {
    const subject = `idle probe ${process.pid} ${k}`;
    const seen = new Promise<number>((resolve) => {
      const off = app.events.on('mail.changed', () => {
        if (app.db.prepare('SELECT 1 FROM mail_messages WHERE subject = ?').get(subject)) {
          off();
          resolve(performance.now());
        }
      });
    });
    const s = performance.now();
    await lmtp.sendMail({ envelope: { from: 'probe@example.test', to: ['alice@example.test'] }, raw: `Subject: ${subject}\r\n\r\nprobe\r\n` });
    idleRuns.push((await seen) - s);
  }
  lmtp.close();
  await live.close();
  const result: ChildResult = {
    fullMs, count, incrementalMs, incrementalUpdated: (stats as { updated: number }).updated, noChangeMs: median(passes), noChangeSynced, folders,
    ftsRareMs: rare.ms, ftsRareHits: rare.hits, ftsPrefixMs: prefix.ms, ftsPrefixHits: prefix.hits, listMs, rssMb, baseRssMb, dbMb, idleMs: median(idleRuns),
  };
  console.log(`RESULT ${JSON.stringify(result)}`);
  await mail.close();
  await app.close();
  rmSync(dataDir, { recursive: true, force: true });
}

function runChild(port: number, lmtpPort: number): ChildResult {
  const r = spawnSync(process.execPath, ['--expose-gc', join(root, 'scripts/run-ts.mjs'), 'test/bench/mail.bench.ts', 'child', String(port), String(lmtpPort)], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`bench child failed (${r.status}): ${r.stderr || r.stdout}`);
  return JSON.parse(line.slice(7)) as ChildResult;
}

/** `mbsync` of every folder into a fresh Maildir, then once more with nothing changed. */
function mbsync(port: number): { ms: number; noChangeMs: number; count: number } {
  const dir = scratchDir('mbsync');
  const rc = join(dir, 'mbsyncrc');
  mkdirSync(join(dir, 'mail'), { recursive: true });
  writeFileSync(
    rc,
    `IMAPAccount peer\nHost 127.0.0.1\nPort ${port}\nUser alice\nPass secret\nSSLType None\nAuthMechs LOGIN\n\n` +
      `IMAPStore peer-remote\nAccount peer\n\nMaildirStore peer-local\nPath ${dir}/mail/\nInbox ${dir}/mail/INBOX\nSubFolders Verbatim\n\n` +
      `Channel peer\nFar :peer-remote:\nNear :peer-local:\nPatterns *\nCreate Near\nSyncState *\n`,
  );
  const run = () => {
    const t = performance.now();
    const r = spawnSync('/usr/bin/mbsync', ['-q', '-c', rc, '-a'], { encoding: 'utf8' });
    if (r.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`mbsync failed: ${r.stderr}`);
    }
    return performance.now() - t;
  };
  const ms = run();
  const noChangeMs = run();
  let count = 0;
  for (const folder of readdirSync(join(dir, 'mail'))) {
    for (const d of ['cur', 'new']) count += readdirSync(join(dir, 'mail', folder, d)).length;
  }
  rmSync(dir, { recursive: true, force: true });
  return { ms, noChangeMs, count };
}

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'child') return child(Number(argv[1]), Number(argv[2]));
  const dovecot = await startDovecot({ users: { alice: 'secret' } });
  try {
    let t = performance.now();
    writeFixture(dovecot.maildir('alice'));
    const writeMs = performance.now() - t;
    t = performance.now();
    dovecot.doveadm(['index', '-u', 'alice', '*']);
    const indexMs = performance.now() - t;
    console.log(`fixture: ${N} messages of ~2 KB in ${F} folders written as Maildir files in ${(writeMs / 1000).toFixed(2)} s, doveadm index ${(indexMs / 1000).toFixed(2)} s`);

    const first = runChild(dovecot.imapPort, dovecot.lmtpPort);
    const peer = mbsync(dovecot.imapPort);
    const second = runChild(dovecot.imapPort, dovecot.lmtpPort);
    if (first.count !== N || second.count !== N + 5 || peer.count !== N + 5) throw new Error(`counts differ: tributary ${first.count}/${second.count}, mbsync ${peer.count}, expected ${N}`);
    const rate = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString('en-US')} msg/s`;
    const best = Math.min(first.fullMs, second.fullMs);
    console.log(`header sync, Tributary (cold Dovecot cache): ${(first.fullMs / 1000).toFixed(2)} s  ${rate(N, first.fullMs)}`);
    console.log(`header sync, Tributary (second run):         ${(second.fullMs / 1000).toFixed(2)} s  ${rate(N, second.fullMs)}`);
    console.log(`full sync, mbsync 1.4.4:                     ${(peer.ms / 1000).toFixed(2)} s  ${rate(N, peer.ms)}`);
    console.log(`ratio vs mbsync ${RATIO_LABEL}: ${timeRatio(best, peer.ms)}`);
    console.log(`no-change pass over all ${second.folders} folders (LIST-STATUS): ${second.noChangeMs.toFixed(1)} ms (median of 5; ${second.noChangeSynced} folders synced; target < 200 ms); no-change mbsync: ${peer.noChangeMs.toFixed(0)} ms`);
    console.log(`incremental sync after 100 flag changes: ${second.incrementalMs.toFixed(1)} ms (${second.incrementalUpdated} updated)`);
    console.log(`FTS rare term: ${second.ftsRareMs.toFixed(2)} ms (${second.ftsRareHits} hit); common prefix "prop*" first 100: ${second.ftsPrefixMs.toFixed(2)} ms (${second.ftsPrefixHits} rows)`);
    console.log(`list first page (100, no bodies): ${second.listMs.toFixed(1)} ms`);
    console.log(`IDLE: delivery (LMTP) → message cached + mail.changed: ${second.idleMs.toFixed(0)} ms (median of 5)`);
    console.log(`RSS after sync (Tributary child): ${second.rssMb.toFixed(0)} MB, of which ${(second.rssMb - second.baseRssMb).toFixed(0)} MB since before the sync (the rest is Node + the Vite module runner of the bench); cache database ${second.dbMb.toFixed(1)} MB`);
  } finally {
    await dovecot.stop();
  }
}
