/**
 * OpenSSH sshd with internal-sftp on a free loopback port (notes/test-servers.md §7).
 * Users: `itest` (password) and `root` (private key). `dataDir` is a world-writable scratch
 * folder to use as the account root. `kill()` SIGKILLs the server (and its session children)
 * for fault tests; `restart()` brings it back on the same port with the same host key.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, hasBinary, run, scratchDir, spawnServer, waitPort, waitPortClosed } from './util';

export interface Sshd {
  host: string;
  port: number;
  username: string;
  password: string;
  /** PEM (OpenSSH format) of a key authorized for root. */
  rootPrivateKey: string;
  /** SHA256 fingerprint of the host key, base64 without padding, as ssh-keygen prints it (no prefix). */
  hostKeyFingerprint: string;
  /** World-writable folder on the server to use as the account root. */
  dataDir: string;
  scratch: string;
  /** SIGKILLs sshd and every session it forked (a dropped server, mid-transfer). */
  kill(): Promise<void>;
  restart(options?: { newHostKey?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

const SSHD = '/usr/sbin/sshd';

/** Every descendant of `pid` (children first found, deepest last), read from `ps`. */
export function descendants(pid: number): number[] {
  const out = spawnSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' }).stdout ?? '';
  const children = new Map<number, number[]>();
  for (const line of out.split('\n')) {
    const [c, p] = line.trim().split(/\s+/).map(Number);
    if (c && p) children.set(p, [...(children.get(p) ?? []), c]);
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

/** SIGKILLs a server we started and every process it forked (sessions), then waits for its exit. */
export async function killTree(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  for (const pid of descendants(c.pid!)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  c.kill('SIGKILL');
  await exited;
}

export function ensureUser(name: string, password: string): void {
  if (spawnSync('id', [name]).status !== 0) run('useradd', ['-M', '-s', '/usr/sbin/nologin', name]);
  run('chpasswd', [], { input: `${name}:${password}\n` });
}

export async function startSshd(): Promise<Sshd> {
  for (const bin of [SSHD, '/usr/bin/ssh-keygen']) {
    if (!hasBinary(bin)) throw new Error(`${bin} is missing: install openssh-server (notes/test-servers.md §7)`);
  }
  const scratch = scratchDir('sshd');
  chmodSync(scratch, 0o755);
  const h = join(scratch, 'ssh');
  const dataDir = join(scratch, 'data');
  mkdirSync(h, { recursive: true });
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o777);
  mkdirSync('/run/sshd', { recursive: true });
  ensureUser('itest', 'secret');
  const keygenHost = () => {
    rmSync(join(h, 'hostkey'), { force: true });
    rmSync(join(h, 'hostkey.pub'), { force: true });
    run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(h, 'hostkey')]);
  };
  keygenHost();
  run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(h, 'clientkey')]);
  writeFileSync(join(h, 'authorized_keys'), readFileSync(join(h, 'clientkey.pub')));
  const port = await freePort();
  const config = join(h, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${h}/hostkey`,
      `PidFile ${h}/sshd.pid`,
      `AuthorizedKeysFile ${h}/authorized_keys`,
      'PasswordAuthentication yes',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'AllowUsers root itest',
      'MaxStartups 100',
      'MaxSessions 100',
      'Subsystem sftp internal-sftp',
      'ForceCommand internal-sftp',
      '',
    ].join('\n'),
  );
  run(SSHD, ['-t', '-f', config]);
  const fingerprint = () => run('ssh-keygen', ['-l', '-E', 'sha256', '-f', join(h, 'hostkey.pub')]).split(' ')[1]!.replace(/^SHA256:/, '');

  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawnServer(SSHD, ['-D', '-e', '-f', config]);
    child.stdout?.resume();
    child.stderr?.resume();
    await waitPort(port);
  };
  const kill = async () => {
    const c = child;
    child = undefined;
    if (!c) return;
    // Sessions are forked children of the listener: kill them too, or a transfer would go on.
    await killTree(c);
    await waitPortClosed(port);
  };
  await launch();
  const facts: Sshd = {
    host: '127.0.0.1',
    port,
    username: 'itest',
    password: 'secret',
    rootPrivateKey: readFileSync(join(h, 'clientkey'), 'utf8'),
    hostKeyFingerprint: fingerprint(),
    dataDir,
    scratch,
    kill,
    async restart(options = {}) {
      await kill();
      if (options.newHostKey) {
        keygenHost();
        facts.hostKeyFingerprint = fingerprint();
      }
      await launch();
    },
    async stop() {
      await kill();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
  return facts;
}
