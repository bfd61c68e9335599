/**
 * Apache httpd + mod_dav_fs on loopback, per notes/test-servers.md §3 (same modules and
 * directives), on a free port and in a scratch folder. Runs in the foreground in its own
 * process group, so `kill()` can take the parent and every worker down at once (the fault
 * tests), and `restart()` brings it back on the same port with the same files.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { freePort, hasBinary, run, scratchDir, spawnServer, waitPort, waitPortClosed } from './util';

export interface ApacheServer {
  /** Base URL of the DAV root, e.g. http://127.0.0.1:40123/ */
  url: string;
  host: string;
  port: number;
  /** Folder on disk that the DAV root serves (inspect files behind the server's back). */
  root: string;
  user: string;
  password: string;
  /** Graceful stop; resolves once the port is closed and the scratch folder is gone. */
  stop(): Promise<void>;
  /** SIGKILL to the whole process group (parent and workers), like a crash. */
  kill(): Promise<void>;
  /** Starts again after `kill()`, same port, same files. */
  restart(): Promise<void>;
  /** Puts a file on the server's disk behind its back, owned by the server's user (tests whose subject is not the upload). */
  place(name: string, bytes: Buffer): void;
}

const APACHE = '/usr/sbin/apache2';
const MODULES = '/usr/lib/apache2/modules';

/** `keepAliveTimeout`: seconds Apache keeps an idle connection open (Apache's default is 5). */
export async function startApache(opts: { keepAliveTimeout?: number } = {}): Promise<ApacheServer> {
  if (!hasBinary(APACHE)) throw new Error(`${APACHE} is not installed (apt-get install apache2, see notes/test-servers.md §3)`);
  const port = await freePort();
  const dir = scratchDir('apache');
  chmodSync(dir, 0o755); // workers run as www-data and must reach dav/ and run/
  const dav = join(dir, 'dav');
  mkdirSync(dav);
  mkdirSync(join(dir, 'run'));
  const user = 'alice';
  const password = randomBytes(9).toString('base64url');
  const conf = join(dir, 'httpd.conf');
  writeFileSync(
    conf,
    `ServerRoot ${dir}
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile ${dir}/run/httpd.pid
DefaultRuntimeDir ${dir}/run
ErrorLog ${dir}/error.log
LogLevel warn
LoadModule mpm_event_module ${MODULES}/mod_mpm_event.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule authn_file_module ${MODULES}/mod_authn_file.so
LoadModule auth_basic_module ${MODULES}/mod_auth_basic.so
LoadModule dav_module ${MODULES}/mod_dav.so
LoadModule dav_fs_module ${MODULES}/mod_dav_fs.so
LoadModule mime_module ${MODULES}/mod_mime.so
User www-data
Group www-data
TypesConfig /etc/mime.types
DAVLockDB ${dir}/run/davlock
LimitRequestBody 0
KeepAliveTimeout ${opts.keepAliveTimeout ?? 5}
DocumentRoot ${dav}
<Directory ${dav}>
  Dav On
  AuthType Basic
  AuthName "dav"
  AuthUserFile ${dir}/htpasswd
  Require valid-user
</Directory>
`,
  );
  run('htpasswd', ['-bc', join(dir, 'htpasswd'), user, password]);
  run('chown', ['-R', 'www-data:www-data', dav, join(dir, 'run')]);

  let child: ChildProcess | undefined;
  const killGroup = () => {
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };
  const start = async () => {
    rmSync(join(dir, 'run', 'httpd.pid'), { force: true });
    let log = '';
    child = spawnServer(APACHE, ['-f', conf, '-DFOREGROUND'], { detached: true });
    child.stdout?.on('data', (d) => (log += d));
    child.stderr?.on('data', (d) => (log += d));
    process.once('exit', killGroup);
    try {
      await waitPort(port);
    } catch (e) {
      killGroup();
      throw new Error(`Apache did not start on ${port}: ${log}`, { cause: e });
    }
  };
  await start();

  return {
    url: `http://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
    root: dav,
    user,
    password,
    async stop() {
      if (child?.pid && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        process.kill(child.pid, 'SIGTERM'); // graceful: the parent stops its workers
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        killGroup();
      }
      process.off('exit', killGroup);
      await waitPortClosed(port);
      rmSync(dir, { recursive: true, force: true });
    },
    async kill() {
      killGroup();
      await waitPortClosed(port);
    },
    async restart() {
      await start();
    },
    place(name, bytes) {
      const p = join(dav, name);
      writeFileSync(p, bytes);
      run('chown', ['www-data:www-data', p]);
    },
  };
}

/** The WebDAV connector's options for this server's DAV root. */
export function webdavOptions(apache: ApacheServer) {
  const u = new URL(apache.url);
  return { protocol: 'http', host: u.hostname, port: Number(u.port), path: u.pathname, username: apache.user, password: apache.password };
}
