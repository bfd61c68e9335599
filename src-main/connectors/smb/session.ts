/**
 * Long-lived smbclient sessions: one process and one authentication serve many operations.
 * Commands go to smbclient's stdin one line at a time; each request is opened and closed by an
 * unknown command named by a random marker, whose "command not found" lines bound the answer.
 *
 * smbclient reads stdin through stdio and waits for the descriptor to be readable before each
 * line: lines already in stdio's buffer would wait for the next write. `stdbuf -i0` reads stdin
 * unbuffered (one line a time). Output is fully buffered in OUT_BUFFER-byte writes (a line a
 * write cost a 100,000-entry listing 100,000 writes and tens of thousands of reads here): after
 * the closing marker a few `help` commands print more than the buffer holds (in Samba 4.17),
 * which pushes the marker out at the cost of 20 bytes of input. `help`'s text is smbclient's and
 * may be shorter in another build, so a request not answered within PAD_AFTER_MS also gets an
 * unknown command of more than OUT_BUFFER characters, whose "command not found" line alone
 * overflows the buffer: the answer then ends late, never hangs. (Not sent with every request:
 * stdin is read a byte a call, and 2 KiB of it cost smbclient ~2 ms.) All this text, and anything
 * else printed between two requests, comes before the next request's opening marker and is
 * dropped. stderr (unbuffered: `get`'s and `put`'s reports, a
 * failed write to the server) is kept apart, since in the same pipe it would land out of order:
 * smbclient writes it before the marker that follows, so what has come by the time the marker
 * is read is added to the answer. A request may take its answer's lines as they arrive (`line`:
 * a listing's entries are made while the rest is on its way); the rest is its answer as before.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { ServiceError } from '../../errors';
import { statusError, unavailable, type Run } from './status';

export const STDBUF = '/usr/bin/stdbuf';
/** A session left without work this long ends (its smbd on the server ends with it). */
const IDLE_MS = 60_000;
/** smbclient's stdout buffer, bytes: its output reaches us in writes of this size. */
export const OUT_BUFFER = 2048;
/**
 * Commands after a request's closing marker that print more than OUT_BUFFER (`help` prints
 * about 1,300 bytes in Samba 4.17: four of them are 2.5 buffers), so the marker is written out.
 */
const FLUSH = 'help\nhelp\nhelp\nhelp\n';
/** A request still unanswered after this long gets the pad line (see above). */
const PAD_AFTER_MS = 100;
/** The length of the pad line, an unknown command (smbclient reads lines of up to 8 KiB). */
const PAD_CHARS = OUT_BUFFER + 64;
/** Output kept for the reason a session ended, at most (its tail). */
const LOG_BYTES = 4096;

export interface SessionRequest {
  lines: string[];
  /** Stop waiting after this long without a byte of answer (the session is ended). */
  quietMs?: number;
  /**
   * Takes the answer's lines (without their line break) as they arrive, before the answer has
   * ended; a line it takes (returns true) is left out of the output the request resolves with.
   * It must not throw.
   */
  line?: (line: string) => boolean;
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

interface Request {
  begin: Buffer;
  end: Buffer;
  /** What smbclient wrote to stderr while this request ran. */
  errors: string;
  resolve: (r: Run) => void;
  reject: (e: SessionLost) => void;
  quiet?: NodeJS.Timeout;
  quietMs?: number;
  /** Sends the pad line if the answer is late (PAD_AFTER_MS). */
  pad?: NodeJS.Timeout;
  line?: (line: string) => boolean;
  /** With `line`: the opening marker was read, and what is held starts at a line of the answer. */
  open: boolean;
  /** With `line`: the answer's lines it did not take, each with its line break. */
  kept: string[];
}

export class SmbSession {
  private readonly child: ChildProcess;
  private readonly marker = `tributary-${randomBytes(8).toString('hex')}`;
  private readonly pad = `${this.marker}-pad-`.padEnd(PAD_CHARS, 'x');
  private seq = 0;
  /** Output not yet taken as an answer, as read (one decode per answer). */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** smbclient's stderr (its tail), for the reason a session ended. */
  private errors = '';
  private current?: Request;
  /** A request whose closing marker was read, until its stderr is in (see data()). */
  private closing?: Request;
  private idle?: NodeJS.Timeout;
  private hung = false;
  dead = false;
  busy = false;

  constructor(program: string, args: string[], env: NodeJS.ProcessEnv, onEnd: (s: SmbSession) => void) {
    if (program.includes('/') && !existsSync(program)) {
      throw new ServiceError('service_not_available', `${program} is not installed: SMB accounts need Samba's smbclient (package "smbclient").`);
    }
    this.child = spawn('/bin/sh', ['-c', `exec ${STDBUF} -i0 -o${OUT_BUFFER} "$0" "$@"`, program, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => this.data(d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      this.errors = (this.errors + d).slice(-LOG_BYTES);
      const c = this.current ?? this.closing;
      if (c) c.errors += d;
    });
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
      clearTimeout(c.pad);
      const log = `${(c.kept.join('') + this.heldText()).slice(-LOG_BYTES)}\n${this.errors}`;
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

  private data(d: Buffer): void {
    const c = this.current;
    if (!c) {
      this.keep(d);
      // Between requests only flush text and notices arrive: the tail is enough for a log.
      if (this.heldBytes > LOG_BYTES * 4) {
        const t = this.tail(LOG_BYTES);
        this.held = [t];
        this.heldBytes = t.length;
      }
      return;
    }
    if (c.quietMs) c.quiet?.refresh();
    // The closing marker may straddle two reads: search the new bytes with the end of the old.
    const overlap = Math.min(this.heldBytes, c.end.length - 1);
    const probe = overlap ? Buffer.concat([this.tail(overlap), d]) : d;
    const found = probe.indexOf(c.end);
    this.keep(d);
    if (found < 0) {
      if (c.line) this.pass(c);
      return;
    }
    const at = this.heldBytes - probe.length + found;
    const all = Buffer.concat(this.held, this.heldBytes);
    // The answer starts after its opening marker: what came before is the last request's flush
    // (already dropped once `pass` has read the marker).
    const open = c.open ? -1 : all.lastIndexOf(c.begin, at);
    const text = all.toString('utf8', open < 0 ? 0 : open + c.begin.length, at);
    const output = c.line ? this.take(c, text, true) : text;
    const rest = all.subarray(at + c.end.length);
    this.held = rest.length ? [rest] : [];
    this.heldBytes = rest.length;
    this.current = undefined;
    clearTimeout(c.quiet);
    clearTimeout(c.pad);
    // smbclient wrote the request's stderr before this marker: when the marker can be read, so
    // can the stderr, and it is read in the same turn of the event loop, before setImmediate.
    this.closing = c;
    setImmediate(() => {
      this.closing = undefined;
      const all = c.errors ? `${output}${c.errors}` : output;
      // smbclient does not reconnect: after a lost connection this session is of no more use.
      if (statusError(all, '')?.code === 'service_not_available') this.end();
      c.resolve({ output: all, code: 0 });
    });
  }

  /**
   * Hands the complete lines of the answer read so far to the request's `line`, and holds only
   * the line still arriving. The closing marker is one line (its only line break ends it), so a
   * complete line read before it was found is not part of it. A line break never falls inside a
   * UTF-8 sequence, so each piece decodes as it would within the whole.
   */
  private pass(c: Request): void {
    let all = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held, this.heldBytes);
    if (!c.open) {
      // The marker is random and sent once: its first copy is the one the answer follows.
      const open = all.indexOf(c.begin);
      if (open < 0) return;
      c.open = true;
      all = all.subarray(open + c.begin.length);
    }
    const end = all.lastIndexOf(10) + 1;
    if (end > 0) this.take(c, all.toString('utf8', 0, end), false);
    const rest = all.subarray(end);
    this.held = rest.length ? [rest] : [];
    this.heldBytes = rest.length;
  }

  /** Offers `text`'s lines to `c.line`; `last`: the answer's end (its last line may lack a break). Returns what was not taken. */
  private take(c: Request, text: string, last: boolean): string {
    const lines = text.split('\n');
    const n = lines.length - 1;
    for (let i = 0; i < n; i++) if (!c.line!(lines[i]!)) c.kept.push(`${lines[i]}\n`);
    if (last && lines[n] !== '' && !c.line!(lines[n]!)) c.kept.push(lines[n]!);
    return last ? c.kept.join('') : '';
  }

  private keep(d: Buffer): void {
    this.held.push(d);
    this.heldBytes += d.length;
  }

  /** The last `n` bytes held (n no more than held). */
  private tail(n: number): Buffer {
    const parts: Buffer[] = [];
    for (let i = this.held.length - 1, left = n; left > 0; i--) {
      const b = this.held[i]!;
      parts.unshift(b.length > left ? b.subarray(b.length - left) : b);
      left -= b.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private heldText(): string {
    return Buffer.concat(this.held, this.heldBytes).toString('utf8').slice(-LOG_BYTES);
  }

  /** Runs commands; resolves with their output once the marker that follows them is printed. */
  run(req: SessionRequest): Promise<Run> {
    clearTimeout(this.idle);
    this.hold(true);
    const mark = `${this.marker}-${++this.seq}`;
    // The answer lies between the two markers' "not found" lines (an `ls` entry line ends with a
    // date, so it cannot be taken for one; the marker is random, so no name can be made to match).
    const line = (m: string) => Buffer.from(`${m}: command not found\n`);
    return new Promise<Run>((resolve, reject) => {
      const c: Request = { begin: line(`${mark}-begin`), end: line(`${mark}-end`), errors: '', resolve, reject, quietMs: req.quietMs, line: req.line, open: false, kept: [] };
      if (req.quietMs) {
        c.quiet = setTimeout(() => {
          this.hung = true;
          this.child.kill('SIGKILL');
        }, req.quietMs);
      }
      this.current = c;
      // Harmless if the answer is on its way: the pad's line then lands between requests.
      c.pad = setTimeout(() => this.current === c && this.child.stdin!.write(`${this.pad}\n`), PAD_AFTER_MS);
      this.child.stdin!.write(`${mark}-begin\n${req.lines.join('\n')}\n${mark}-end\n${FLUSH}`);
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
    for (const h of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as { ref?(): void; unref?(): void }[]) {
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
