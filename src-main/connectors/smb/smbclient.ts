/**
 * Samba's `smbclient` as the SMB protocol layer: listings, stats and changes go through a few
 * long-lived sessions (session.ts, at most 3 at once), transfers through one process each (at
 * most 6 at once); its `ls` output is parsed and its NT_STATUS reports mapped onto the
 * documented codes. The password travels in the environment, never on a command line.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { ServiceError } from '../../errors';
import { joinPath, TEMP_NAME } from '../shared/paths';
import type { Entry } from '../types';
import type { SmbOptions } from './options';
import { SessionLost, SmbSession, STDBUF } from './session';
import { spawnError, statusError, unavailable, type Run } from './status';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// smbclient's `ls` line: "  %-30s%7s %8.0f  %s" (name, attributes, size, ctime-style date).
const LS_LINE = /^ {2}(.+?) +([A-Z]*) +(\d+) {2}\w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})$/;
const MAX_PROCESSES = 6;
const MAX_SESSIONS = 3;
/** A read whose session prints nothing for this long is given up and its session ended. */
const READ_QUIET_MS = 60_000;
/** How long the check that a server still answers waits for it (settle). */
const PROBE_MS = 5000;
/**
 * The line that ends a successful `ls` (and `du`): the share's size and free blocks. Anchored at
 * both ends, so that an entry named like it (its line ends with a date) is not taken for it.
 */
export const BLOCKS_LINE = /^\s*(\d+) blocks of size (\d+)\. (\d+) blocks available$/m;
/** The line an `ls` that failed prints instead of entries. */
const LS_FAILED = /^NT_STATUS_[A-Z0-9_]+ listing /;

/** How commands are asked: `read` ones change nothing, so a session that died under them is asked again once. */
export interface Ask {
  read?: boolean;
  /**
   * On a session, a reader of each run's lines as they arrive (SessionRequest.line), made
   * afresh for each run: a read asked again starts over.
   */
  line?: () => (line: string) => boolean;
}

export interface SmbclientTuning {
  /** A read's session that prints nothing for this long is ended and the read fails (default 60 s). */
  readQuietMs?: number;
}

export class Smbclient {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly children = new Set<ReturnType<typeof spawn>>();
  private readonly sessions: SmbSession[] = [];
  private readonly sessionWaiting: (() => void)[] = [];
  /** Sessions need stdbuf (coreutils) to read commands a line at a time; without it, a process per operation. */
  private readonly useSessions = existsSync(STDBUF);
  private closed = false;

  constructor(
    private readonly o: SmbOptions,
    private readonly tuning: SmbclientTuning = {},
  ) {}

  private env(): NodeJS.ProcessEnv {
    // The password travels in the environment (PASSWD), never on the command line; TZ=UTC
    // makes `ls` print dates in UTC.
    return { ...process.env, PASSWD: this.o.password, TZ: 'UTC', LC_ALL: 'C.UTF-8' };
  }

  /** The process ids of the live sessions (tests stop and kill them). */
  sessionPids(): number[] {
    return this.sessions.filter((s) => !s.dead).map((s) => s.pid!);
  }

  /** A free session, started if fewer than MAX_SESSIONS run; else the next one freed. */
  private async session(): Promise<SmbSession> {
    for (;;) {
      if (this.closed) throw new ServiceError('service_not_available', 'This connection was closed.');
      const free = this.sessions.find((s) => !s.dead && !s.busy);
      const s =
        free ??
        (this.sessions.length < MAX_SESSIONS
          ? new SmbSession(this.o.smbclient, this.args(), this.env(), (ended) => {
              this.sessions.splice(this.sessions.indexOf(ended), 1);
              this.sessionWaiting.shift()?.();
            })
          : undefined);
      if (s) {
        if (!free) this.sessions.push(s);
        s.busy = true;
        return s;
      }
      await new Promise<void>((r) => this.sessionWaiting.push(r));
    }
  }

  /** Runs commands on a session; a read whose session died by itself is asked once more on a new one. */
  private async ask(lines: string[], how: Ask): Promise<Run> {
    for (let attempt = 0; ; attempt++) {
      const s = await this.session();
      try {
        const r = await s.run({ lines, quietMs: how.read ? (this.tuning.readQuietMs ?? READ_QUIET_MS) : undefined, line: how.line?.() });
        // A session whose connection dropped while it waited (a restarted server) has ended
        // by now: a read asks again on a new one.
        if (s.dead && how.read && attempt === 0 && statusError(r.output, '')?.code === 'service_not_available') continue;
        return r;
      } catch (e) {
        if (!(e instanceof SessionLost)) throw e;
        if (e.restartable && how.read && attempt === 0 && !this.closed) continue;
        throw await this.settle(e.error, 'The SMB share');
      } finally {
        s.release();
        this.sessionWaiting.shift()?.();
      }
    }
  }

  private args(extra: string[] = []): string[] {
    const o = this.o;
    const args = ['-s', '/dev/null', '-p', String(o.port), `//${o.host}/${o.share}`, '-W', o.workgroup || 'WORKGROUP'];
    if (o.username) args.push('-U', o.username);
    else args.push('-N');
    if (o.protection !== 'auto') args.push(`--client-protection=${o.protection}`);
    return [...args, ...extra];
  }

  spawn(extra: string[]) {
    const program = this.o.smbclient;
    if (program.includes('/') && !existsSync(program)) {
      throw new ServiceError('service_not_available', `${program} is not installed: SMB accounts need Samba's smbclient (package "smbclient").`);
    }
    const child = spawn(program, this.args(extra), { env: this.env(), stdio: ['pipe', 'pipe', 'pipe'] });
    this.children.add(child);
    child.once('close', () => this.children.delete(child));
    return child;
  }

  async slot<T>(fn: () => Promise<T>): Promise<T> {
    while (this.running >= MAX_PROCESSES) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  /**
   * Runs smbclient commands (fed on stdin, one per line, so names may contain ";"): on a
   * session, or in a process of their own where sessions cannot run. A session that ended under
   * them throws its reason.
   */
  commands(lines: string[], how: Ask = {}): Promise<Run> {
    if (this.useSessions) return this.ask(lines, how);
    return this.slot(() => this.run([], lines.join('\n') + '\n'));
  }

  /** One smbclient process with `extra` arguments and `input` on stdin; killed after `timeoutMs` (its code is then null). */
  private run(extra: string[], input: string, timeoutMs?: number): Promise<Run> {
    return new Promise<Run>((resolve, reject) => {
      const child = this.spawn(extra);
      let output = '';
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.once('error', (e) => reject(spawnError(this.o.smbclient, e)));
      child.once('close', (code) => (clearTimeout(timer), resolve({ output, code })));
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    });
  }

  /**
   * smbclient reports a server that died mid-transfer with whatever status the broken exchange
   * left (NT_STATUS_INVALID_PARAMETER, say): a failure that is not specific is checked against
   * whether the server still answers at all, so "gone" reads as service_not_available.
   */
  async settle(err: ServiceError, what: string): Promise<ServiceError> {
    if (err.code !== 'upstream_error') return err;
    if (await this.answers()) return err;
    const detail = err.message.startsWith(`${what}: `) ? err.message.slice(what.length + 2) : err.message;
    return unavailable(what, detail);
  }

  /**
   * Whether an SMB server answers at the account's address. A port that takes connections is not
   * enough (a proxy or a tunnel in between takes them with the server gone), so a refused port
   * settles it at once and an open one is asked by an smbclient that logs in and leaves: a server
   * that answers at all, even to refuse the login, is there.
   */
  private async answers(): Promise<boolean> {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: this.o.host, port: this.o.port, timeout: PROBE_MS });
      const done = (ok: boolean) => (socket.destroy(), resolve(ok));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.once('timeout', () => done(false));
    });
    if (!open) return false;
    const r = await this.run(['-c', 'exit'], '', PROBE_MS).catch(() => undefined);
    if (!r) return true; // no smbclient to ask with: the open port is all there is to go by
    // Killed (code null): no answer within PROBE_MS.
    return r.code === 0 || (r.code !== null && statusError(r.output, '')?.code !== 'service_not_available');
  }

  /** Runs commands and throws the first NT_STATUS failure they reported, mapped. */
  async must(lines: string[], what: string, how: Ask = {}): Promise<string> {
    const r = await this.commands(lines, how);
    const err = statusError(r.output, what);
    if (err) throw await this.settle(err, what);
    if (r.code !== 0 && r.code !== null) throw new ServiceError('upstream_error', `${what}: smbclient exited with ${r.code}: ${r.output.trim().slice(-300)}`);
    return r.output;
  }

  /** Stops every smbclient still running. */
  close(): void {
    this.closed = true;
    for (const s of this.sessions) s.end();
    for (const wake of this.sessionWaiting.splice(0)) wake();
    for (const child of this.children) child.kill('SIGTERM');
  }
}

/** The entries of `ls` output for `folder`, our temporary files left out (unless `temps`). */
export function parseLs(output: string, folder: string, temps = false): Entry[] {
  const out: Entry[] = [];
  for (const line of output.split('\n')) {
    const entry = lsEntry(line, folder, temps);
    if (entry) out.push(entry);
  }
  return out;
}

/** The entry of one `ls` line: undefined when the line is none, null for ".", ".." and (unless `temps`) our temporary files. */
function lsEntry(line: string, folder: string, temps: boolean): Entry | null | undefined {
  const m = LS_LINE.exec(line);
  if (!m) return undefined;
  const [, raw, attrs, size, mon, day, hh, mm, ss, year] = m;
  if (raw === '.' || raw === '..' || (!temps && TEMP_NAME.test(raw!))) return null;
  // As the server has it, not normalised: smbclient must be given these very characters back.
  const name = raw!;
  const kind = attrs!.includes('D') ? 'folder' : 'file';
  const modified = new Date(Date.UTC(Number(year), MONTHS.indexOf(mon!), Number(day), Number(hh), Number(mm), Number(ss)));
  return {
    path: joinPath(folder, name),
    name,
    kind,
    size: kind === 'file' ? Number(size) : null,
    modified,
    created: null,
    etag: kind === 'file' ? `${modified.getTime()}-${size}` : undefined,
    raw: { attributes: attrs },
  };
}

/**
 * The entries of the `index`-th `ls` answer of a run (the ones before it end as lsAnswers
 * reads them), read from its lines as they arrive (Ask.line) and each handed to `each` as it is
 * made. An entry's line is taken out of the run's output; every other line stays in it, so
 * that lsAnswers and statusError read the output as before. (An entry's line starts with two
 * spaces and ends with a date: it never ends an answer.)
 */
export class LsLines {
  readonly entries: Entry[] = [];
  /** What `each` threw: handing over stops, and the listing fails with it once the answer is in. */
  failed?: { error: unknown };
  private answer = 0;

  constructor(
    private readonly folder: string,
    private readonly index: number,
    private readonly each?: (entry: Entry) => void,
  ) {}

  readonly line = (line: string): boolean => {
    if (this.answer === this.index) {
      const entry = lsEntry(line, this.folder, false);
      if (entry === null) return true;
      if (entry) {
        this.entries.push(entry);
        if (this.each && !this.failed) {
          try {
            this.each(entry);
          } catch (error) {
            this.failed = { error };
          }
        }
        return true;
      }
    }
    if (BLOCKS_LINE.test(line) || LS_FAILED.test(line)) this.answer++;
    return false;
  };
}

/**
 * The output of a run of several `ls` commands, one answer per command in order: each ends at
 * its "blocks of size" line or at its NT_STATUS report. Fewer answers than commands: smbclient
 * stopped before (no session, a server gone).
 */
export function lsAnswers(output: string): string[] {
  const answers: string[] = [];
  let current: string[] = [];
  for (const line of output.split('\n')) {
    current.push(line);
    if (BLOCKS_LINE.test(line) || LS_FAILED.test(line)) {
      answers.push(current.join('\n'));
      current = [];
    }
  }
  return answers;
}

/** A path as one quoted smbclient argument: remote ones with backslashes, from the share root. */
export function q(path: string, remote = true): string {
  if (path.includes('"')) throw new ServiceError('invalid_parameters', 'SMB names cannot contain ".');
  // Commands are lines on smbclient's stdin: a line break would start a command of its own.
  if (/[\r\n]/.test(path)) throw new ServiceError('invalid_parameters', 'SMB names cannot contain line breaks.');
  return remote ? `"${path.replace(/\//g, '\\')}"` : `"${path}"`;
}

/** smbclient's rename: `-f` replaces an existing target; without it the server refuses. */
export const renameLine = (from: string, to: string, replace: boolean) => `rename ${q(from)} ${q(to)}${replace ? ' -f' : ''}`;
