/**
 * Samba smbd on a free loopback port with one share (notes/test-servers.md §6), user `itest`
 * / `secret`. `shareDir` is the share's folder on disk. `kill()` SIGKILLs the server and its
 * per-client children (a dropped server mid-transfer); a restart waits until the port is closed
 * (a restart right after a kill died silently, §6).
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SmbOptions } from '../../src-main/connectors/smb/options';
import { ensureUser, killTree } from './sshd';
import { freePort, hasBinary, run, scratchDir, spawnServer, waitPort, waitPortClosed } from './util';

export interface Samba {
  host: string;
  port: number;
  share: string;
  workgroup: string;
  username: string;
  password: string;
  shareDir: string;
  /** smb.conf of this server, for `smbclient -s`. */
  configFile: string;
  scratch: string;
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const SMBD = '/usr/sbin/smbd';

export async function startSamba(options: { share?: string } = {}): Promise<Samba> {
  for (const bin of [SMBD, '/usr/bin/smbpasswd']) {
    if (!hasBinary(bin)) throw new Error(`${bin} is missing: install samba (notes/test-servers.md §6)`);
  }
  const share = options.share ?? 'share';
  const scratch = scratchDir('samba');
  const s = join(scratch, 'samba');
  for (const d of ['run', 'lock', 'state', 'cache', 'private', 'ncalrpc', 'share', 'logs']) mkdirSync(join(s, d), { recursive: true });
  chmodSync(scratch, 0o755);
  chmodSync(s, 0o755);
  chmodSync(join(s, 'share'), 0o777);
  ensureUser('itest', 'secret');
  const port = await freePort();
  const configFile = join(s, 'smb.conf');
  writeFileSync(
    configFile,
    `[global]
  netbios name = ITESTSMB
  workgroup = WORKGROUP
  server role = standalone server
  interfaces = 127.0.0.1
  bind interfaces only = yes
  smb ports = ${port}
  disable netbios = yes
  pid directory = ${s}/run
  lock directory = ${s}/lock
  state directory = ${s}/state
  cache directory = ${s}/cache
  private dir = ${s}/private
  ncalrpc dir = ${s}/ncalrpc
  log file = ${s}/logs/log.%m
  log level = 1
  passdb backend = tdbsam:${s}/private/passdb.tdb
  map to guest = Bad User
  guest account = nobody
  aio read size = 0
  aio write size = 0
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
[${share}]
  path = ${s}/share
  read only = no
  guest ok = yes
`,
  );
  run('smbpasswd', ['-c', configFile, '-a', '-s', 'itest'], { input: 'secret\nsecret\n' });

  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawnServer(SMBD, ['--foreground', '--no-process-group', '--debug-stdout', '-s', configFile]);
    child.stdout?.resume();
    child.stderr?.resume();
    await waitPort(port);
  };
  const kill = async () => {
    const c = child;
    child = undefined;
    if (!c) return;
    await killTree(c);
    await waitPortClosed(port);
  };
  await launch();
  return {
    host: '127.0.0.1',
    port,
    share,
    workgroup: 'WORKGROUP',
    username: 'itest',
    password: 'secret',
    shareDir: join(s, 'share'),
    configFile,
    scratch,
    kill,
    async restart() {
      await kill();
      await launch();
    },
    async stop() {
      await kill();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** The `smb` connector's options for this server's share and user. */
export function smbOptionsFor(server: Samba, extra: Partial<SmbOptions> = {}): SmbOptions {
  return {
    host: server.host,
    port: server.port,
    share: server.share,
    workgroup: server.workgroup,
    username: server.username,
    password: server.password,
    protection: 'auto',
    smbclient: 'smbclient',
    ...extra,
  };
}
