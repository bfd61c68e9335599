/**
 * Long-lived smbclient sessions: one process and one authentication serve many operations.
 * Commands go to smbclient's stdin one line at a time and each request ends with an unknown
 * command named by a random marker, whose "command not found" line closes the answer.
 *
 * smbclient reads stdin through stdio and waits for the descriptor to be readable before each
 * line: lines already in stdio's buffer would wait for the next write. `stdbuf -i0` reads stdin
 * unbuffered (one line a time), `-oL` sends each output line at once; stderr joins stdout
 * so that a report lands before the marker that follows it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { ServiceError } from '../../errors';
import { statusError, unavailable, type Run } from './status';

export const STDBUF = '/usr/bin/stdbuf';
/** A session left without work this long ends (its smbd on the server ends with it). */
const IDLE_MS = 60_000;

export interface SessionRequest {
  lines: string[];
  /** Stop waiting after this long without a byte of answer (the session is ended). */
  quietMs?: number;
}

/** Why a session ended under a request: `restartable` when it died by itself, so asking again is safe for reads. */
export class SessionLost extends Error {
  constructor(
    readonly error: ServiceError,
    readonly restartable: boolean,
  ) {
    super(error.message);
  }
}

export class SmbSession {
  private readonly child: ChildProcess;
  private readonly marker = `tributary-${randomBytes(8).toString('hex')}`;
  private seq = 0;
  private buffer = '';
  /** Where the search for the current marker goes on: a long listing is not scanned again per chunk. */
  private searched = 0;
  private current?: { end: string; resolve: (r: Run) => void; reject: (e: SessionLost) => void; quiet?: NodeJS.Timeout; quietMs?: number };
  private idle?: NodeJS.Timeout;
  private hung = false;
  dead = false;
  busy = false;

  constructor(program: string, args: string[], env: NodeJS.ProcessEnv, onEnd: (s: SmbSession) => void) {
    if (program.includes('/') && !existsSync(program)) {
      throw new ServiceError('service_not_available', `${program} is not installed: SMB accounts need Samba's smbclient (package "smbclient").`);
    }
    this.child = spawn('/bin/sh', ['-c', `exec ${STDBUF} -i0 -oL "$0" "$@" 2>&1`, program, ...args], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => this.data(d));
    this.child.stdin!.on('error', () => {});
    this.child.once('error', () => {});
    this.child.once('close', (code, signal) => {
      this.dead = true;
      clearTimeout(this.idle);
      onEnd(this);
      const c = this.current;
      this.current = undefined;
      if (!c) return;
      clearTimeout(c.quiet);
      const log = this.buffer;
      if (code === 127 && /not found/.test(log)) return c.reject(new SessionLost(new ServiceError('service_not_available', `${program} was not found: SMB accounts need Samba's smbclient (package "smbclient").`), false));
      if (this.hung) return c.reject(new SessionLost(unavailable('The SMB share', `smbclient gave no answer for ${c.quietMs} ms`), false));
      // A status smbclient printed before it stopped (a refused login, a lost server) is the answer.
      const reported = statusError(log, 'The SMB share');
      if (reported) return c.reject(new SessionLost(reported, false));
      c.reject(new SessionLost(unavailable('The SMB share', `smbclient stopped (${signal ?? `exit ${code}`}) ${log.trim().slice(-200)}`.trim()), true));
    });
  }

  /** The process id, for tests that stop or kill a session. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  private data(d: string): void {
    this.buffer += d;
    const c = this.current;
    if (!c) return;
    if (c.quietMs) c.quiet?.refresh();
    const at = this.buffer.indexOf(c.end, this.searched);
    if (at < 0) {
      this.searched = Math.max(0, this.buffer.length - c.end.length);
      return;
    }
    this.searched = 0;
    const output = this.buffer.slice(0, at);
    this.buffer = this.buffer.slice(at + c.end.length);
    this.current = undefined;
    clearTimeout(c.quiet);
    // smbclient does not reconnect: after a lost connection this session is of no more use.
    if (statusError(output, '')?.code === 'service_not_available') this.end();
    c.resolve({ output, code: 0 });
  }

  /** Runs commands; resolves with their output once the marker that follows them is printed. */
  run(req: SessionRequest): Promise<Run> {
    clearTimeout(this.idle);
    this.hold(true);
    const mark = `${this.marker}-${++this.seq}`;
    // The output ends with the marker's "not found" line (a new line before it: an `ls` entry
    // line cannot be taken for it).
    const end = `${mark}: command not found\n`;
    return new Promise<Run>((resolve, reject) => {
      const c: NonNullable<SmbSession['current']> = { end, resolve, reject, quietMs: req.quietMs };
      if (req.quietMs) {
        c.quiet = setTimeout(() => {
          this.hung = true;
          this.child.kill('SIGKILL');
        }, req.quietMs);
      }
      this.current = c;
      this.child.stdin!.write(`${req.lines.join('\n')}\n${mark}\n`);
    });
  }

  /** Back to the pool: ends by itself after a while without work. */
  release(): void {
    this.busy = false;
    if (!this.dead) this.idle = setTimeout(() => this.end(), IDLE_MS).unref();
    this.hold(false);
  }

  /** An idle session does not keep the process alive; one with a request does. */
  private hold(on: boolean): void {
    for (const h of [this.child, this.child.stdin, this.child.stdout] as { ref?(): void; unref?(): void }[]) {
      if (on) h.ref?.();
      else h.unref?.();
    }
  }

  end(): void {
    if (this.dead) return;
    this.dead = true;
    clearTimeout(this.idle);
    this.child.stdin!.end();
    // smbclient ends at end of input; a hung one is killed.
    setTimeout(() => this.child.exitCode === null && this.child.signalCode === null && this.child.kill('SIGKILL'), 2000).unref();
  }
}
