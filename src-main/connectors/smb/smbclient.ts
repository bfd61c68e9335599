/**
 * Samba's `smbclient` as the SMB protocol layer: one short-lived process per operation (at most
 * 6 at once), commands fed on stdin, its `ls` output parsed and its NT_STATUS reports mapped
 * onto the documented codes. The password travels in the environment, never on a command line.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { ServiceError, type ErrorCode } from '../../errors';
import { joinPath, TEMP_NAME } from '../shared/paths';
import type { Entry } from '../types';
import type { SmbOptions } from './options';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// smbclient's `ls` line: "  %-30s%7s %8.0f  %s" (name, attributes, size, ctime-style date).
const LS_LINE = /^ {2}(.+?) +([A-Z]*) +(\d+) {2}\w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})$/;
const MAX_PROCESSES = 6;
/**
 * The line that ends a successful `ls` (and `du`): the share's size and free blocks. Anchored at
 * both ends, so that an entry named like it (its line ends with a date) is not taken for it.
 */
export const BLOCKS_LINE = /^\s*(\d+) blocks of size (\d+)\. (\d+) blocks available$/m;
/** The line an `ls` that failed prints instead of entries. */
const LS_FAILED = /^NT_STATUS_[A-Z0-9_]+ listing /;

export interface Run {
  output: string;
  code: number | null;
}

export class Smbclient {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly children = new Set<ReturnType<typeof spawn>>();

  constructor(private readonly o: SmbOptions) {}

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
    // The password travels in the environment (PASSWD), never on the command line; TZ=UTC
    // makes `ls` print dates in UTC.
    const child = spawn(program, this.args(extra), {
      env: { ...process.env, PASSWD: this.o.password, TZ: 'UTC', LC_ALL: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
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

  /** Runs smbclient commands (fed on stdin, one per line, so names may contain ";"). */
  commands(lines: string[]): Promise<Run> {
    return this.slot(
      () =>
        new Promise<Run>((resolve, reject) => {
          const child = this.spawn([]);
          let output = '';
          child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
          child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
          child.once('error', (e) => reject(spawnError(this.o.smbclient, e)));
          child.once('close', (code) => resolve({ output, code }));
          child.stdin!.on('error', () => {});
          child.stdin!.end(lines.join('\n') + '\n');
        }),
    );
  }

  /**
   * smbclient reports a server that died mid-transfer with whatever status the broken exchange
   * left (NT_STATUS_INVALID_PARAMETER, say): a failure that is not specific is checked against
   * whether the server still answers at all, so "gone" reads as service_not_available.
   */
  async settle(err: ServiceError, what: string): Promise<ServiceError> {
    if (err.code !== 'upstream_error') return err;
    const alive = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: this.o.host, port: this.o.port, timeout: 2000 });
      const done = (ok: boolean) => (socket.destroy(), resolve(ok));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.once('timeout', () => done(false));
    });
    return alive ? err : unavailable(what, err.message);
  }

  /** Runs commands and throws the first NT_STATUS failure they reported, mapped. */
  async must(lines: string[], what: string): Promise<string> {
    const r = await this.commands(lines);
    const err = statusError(r.output, what);
    if (err) throw await this.settle(err, what);
    if (r.code !== 0 && r.code !== null) throw new ServiceError('upstream_error', `${what}: smbclient exited with ${r.code}: ${r.output.trim().slice(-300)}`);
    return r.output;
  }

  /** Stops every smbclient still running. */
  close(): void {
    for (const child of this.children) child.kill('SIGTERM');
  }
}

/** The entries of `ls` output for `folder`, our temporary files left out. */
export function parseLs(output: string, folder: string): Entry[] {
  const out: Entry[] = [];
  for (const line of output.split('\n')) {
    const m = LS_LINE.exec(line);
    if (!m) continue;
    const [, name, attrs, size, mon, day, hh, mm, ss, year] = m;
    if (name === '.' || name === '..' || TEMP_NAME.test(name!)) continue;
    const kind = attrs!.includes('D') ? 'folder' : 'file';
    const modified = new Date(Date.UTC(Number(year), MONTHS.indexOf(mon!), Number(day), Number(hh), Number(mm), Number(ss)));
    out.push({
      path: joinPath(folder, name!.normalize('NFC')),
      name: name!.normalize('NFC'),
      kind,
      size: kind === 'file' ? Number(size) : null,
      modified,
      created: null,
      etag: kind === 'file' ? `${modified.getTime()}-${size}` : undefined,
      raw: { attributes: attrs },
    });
  }
  return out;
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
  return remote ? `"${path.replace(/\//g, '\\')}"` : `"${path}"`;
}

const STATUS: Record<string, ErrorCode> = {
  OBJECT_NAME_NOT_FOUND: 'not_found',
  OBJECT_PATH_NOT_FOUND: 'not_found',
  NO_SUCH_FILE: 'not_found',
  NOT_FOUND: 'not_found',
  DELETE_PENDING: 'not_found',
  OBJECT_NAME_COLLISION: 'naming_conflict',
  DIRECTORY_NOT_EMPTY: 'folder_not_empty',
  NOT_A_DIRECTORY: 'invalid_parent_folder',
  FILE_IS_A_DIRECTORY: 'invalid_parameters',
  OBJECT_NAME_INVALID: 'invalid_parameters',
  OBJECT_PATH_SYNTAX_BAD: 'invalid_parameters',
  BAD_NETWORK_NAME: 'invalid_parameters',
  LOGON_FAILURE: 'upstream_auth_failed',
  WRONG_PASSWORD: 'upstream_auth_failed',
  NO_SUCH_USER: 'upstream_auth_failed',
  ACCOUNT_DISABLED: 'upstream_auth_failed',
  ACCOUNT_LOCKED_OUT: 'upstream_auth_failed',
  ACCOUNT_RESTRICTION: 'upstream_auth_failed',
  PASSWORD_EXPIRED: 'upstream_auth_failed',
  PASSWORD_MUST_CHANGE: 'upstream_auth_failed',
  ACCESS_DENIED: 'forbidden',
  NETWORK_ACCESS_DENIED: 'forbidden',
  SHARING_VIOLATION: 'conflict',
  FILE_LOCK_CONFLICT: 'conflict',
  DISK_FULL: 'payload_too_large',
};

const UNAVAILABLE = /CONNECTION_|IO_TIMEOUT|HOST_UNREACHABLE|NETWORK_UNREACHABLE|END_OF_FILE|INVALID_NETWORK_RESPONSE|PIPE_BROKEN|NETWORK_NAME_DELETED|LOCAL_DISCONNECT|REMOTE_DISCONNECT|NETWORK_SESSION_EXPIRED|PORT_UNREACHABLE|UNSUCCESSFUL|PIPE_DISCONNECTED|USER_SESSION_DELETED/;

/** smbclient's rename: `-f` replaces an existing target; without it the server refuses. */
export const renameLine = (from: string, to: string, replace: boolean) => `rename ${q(from)} ${q(to)}${replace ? ' -f' : ''}`;

/** The first NT_STATUS failure in smbclient's output, as a ServiceError; undefined if none. */
export function statusError(output: string, what: string): ServiceError | undefined {
  const m = /NT_STATUS_([A-Z0-9_]+)/.exec(output);
  if (!m || m[1] === 'OK') return undefined;
  const status = m[1]!;
  const line = output.split('\n').find((l) => l.includes(m[0]))?.trim() ?? m[0];
  const code = STATUS[status];
  if (code === 'upstream_auth_failed') return new ServiceError(code, `The SMB server refused the user name or password (${m[0]}).`);
  if (status === 'BAD_NETWORK_NAME') return new ServiceError('invalid_parameters', `The server has no share of that name (${m[0]}).`);
  if (code === 'not_found') return new ServiceError(code, `${what} was not found.`);
  if (code === 'naming_conflict') return new ServiceError(code, `${what}: the name is already taken.`);
  if (code === 'folder_not_empty') return new ServiceError(code, `${what}: the folder is not empty.`);
  if (code) return new ServiceError(code, `${what}: ${line}`);
  if (UNAVAILABLE.test(status)) return unavailable(what, line);
  return new ServiceError('upstream_error', `${what}: ${line}`);
}

export function unavailable(what: string, detail: string): ServiceError {
  return new ServiceError('service_not_available', `${what}: the SMB server is not reachable (${detail}).`, { retryAfter: 5 });
}

export function spawnError(program: string, e: NodeJS.ErrnoException): ServiceError {
  if (e.code === 'ENOENT') {
    return new ServiceError('service_not_available', `${program} was not found: SMB accounts need Samba's smbclient (package "smbclient").`, {}, { cause: e });
  }
  return new ServiceError('service_not_available', `Could not run ${program}: ${e.message}`, {}, { cause: e });
}
