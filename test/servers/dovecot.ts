/**
 * Dovecot 2.3 (IMAP with CONDSTORE/QRESYNC/IDLE + LMTP) on free loopback ports, in a scratch
 * directory, per notes/test-servers.md §1. Mail is delivered over LMTP like a real MTA would.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { freePort, run, scratchDir, waitPort, waitPortClosed } from './util';

export interface DovecotServer {
  host: string;
  imapPort: number;
  lmtpPort: number;
  dir: string;
  users: Record<string, string>;
  /** Delivers a raw message over LMTP to the given local users (user@example.test or user). */
  deliver(raw: string | Buffer, to: string[], from?: string): Promise<void>;
  /** The Maildir of a user (for fixtures written directly, e.g. the benchmark's). */
  maildir(user: string): string;
  doveadm(args: string[]): string;
  stop(): Promise<void>;
}

const DOVECOT = '/usr/sbin/dovecot';

export interface DovecotTls {
  /** PEM of the self-signed certificate (CN localhost, SAN 127.0.0.1): the CA to trust. */
  ca: string;
  /** Port of implicit TLS (imaps); `imapPort` then offers STARTTLS. */
  imapsPort: number;
}

export async function startDovecot(options: { users?: Record<string, string>; tls?: boolean } = {}): Promise<DovecotServer & { tls?: DovecotTls }> {
  if (!existsSync(DOVECOT)) throw new Error(`Dovecot is not installed (${DOVECOT}); apt-get install dovecot-imapd dovecot-lmtpd (notes/test-servers.md §0).`);
  const users = options.users ?? { alice: 'secret', bob: 'secret' };
  const dir = scratchDir('dovecot');
  // mkdtemp makes the folder 0700; Dovecot's auth and mail processes run as other users.
  chmodSync(dir, 0o755);
  const D = join(dir, 'dovecot');
  for (const sub of ['mail', 'run', 'state']) mkdirSync(join(D, sub), { recursive: true });
  // nobody:nogroup (65534) owns the mail; Dovecot refuses to store mail as root.
  chownSync(join(D, 'mail'), 65534, 65534);
  const [imapPort, lmtpPort] = [await freePort(), await freePort()];
  let tls: DovecotTls | undefined;
  let sslConf = 'ssl = no';
  let imapsPort = 0;
  if (options.tls) {
    imapsPort = await freePort();
    const [cert, key] = [join(D, 'cert.pem'), join(D, 'key.pem')];
    run('/usr/bin/openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert]);
    sslConf = `ssl = yes\nssl_cert = <${cert}\nssl_key = <${key}`;
    tls = { ca: readFileSync(cert, 'utf8'), imapsPort };
  }
  const conf = `base_dir = ${D}/run
state_dir = ${D}/state
instance_name = itest-dovecot-${imapPort}
protocols = imap lmtp
listen = 127.0.0.1
log_path = ${D}/dovecot.log
${sslConf}
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:${D}/mail/%n/Maildir
# IDLE learns of new mail by inotify; where a busy machine has no inotify instance left, Dovecot
# polls instead, every 30 s by default: longer than any test waits.
mailbox_idle_check_interval = 1 secs
mail_uid = nobody
mail_gid = nogroup
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%n ${D}/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=${D}/mail/%n
}
namespace inbox {
  inbox = yes
  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
  mailbox Trash {
    special_use = \\Trash
    auto = subscribe
  }
  mailbox Drafts {
    special_use = \\Drafts
    auto = subscribe
  }
  mailbox Junk {
    special_use = \\Junk
    auto = subscribe
  }
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${imapPort}
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = ${imapsPort}
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = ${lmtpPort}
  }
}
protocol imap {
  mail_max_userip_connections = 50
}
`;
  const confFile = join(D, 'dovecot.conf');
  writeFileSync(confFile, conf);
  writeFileSync(join(D, 'users'), Object.entries(users).map(([u, p]) => `${u}:{PLAIN}${p}\n`).join(''));
  // The master daemonizes and keeps its stdio: give it a file, not a pipe spawnSync would wait on.
  const out = openSync(join(D, 'start.log'), 'w');
  const started = spawnSync(DOVECOT, ['-c', confFile], { stdio: ['ignore', out, out] });
  closeSync(out);
  if (started.status !== 0) throw new Error(`dovecot failed to start: ${readFileSync(join(D, 'start.log'), 'utf8')}`);
  await waitPort(imapPort);
  await waitPort(lmtpPort);
  if (imapsPort) await waitPort(imapsPort);
  const lmtp = nodemailer.createTransport({ host: '127.0.0.1', port: lmtpPort, lmtp: true, ignoreTLS: true });
  return {
    host: '127.0.0.1',
    tls,
    imapPort,
    lmtpPort,
    dir: D,
    users,
    async deliver(raw, to, from = 'sender@example.test') {
      await lmtp.sendMail({ envelope: { from, to: to.map((t) => (t.includes('@') ? t : `${t}@example.test`)) }, raw });
    },
    maildir: (user) => join(D, 'mail', user, 'Maildir'),
    doveadm: (args) => run('/usr/bin/doveadm', ['-c', confFile, ...args]),
    async stop() {
      lmtp.close();
      spawnSync('/usr/bin/doveadm', ['-c', confFile, 'stop'], { stdio: 'ignore' });
      await waitPortClosed(imapPort).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The IMAP connector's options for `user` (password "secret") on this Dovecot, sending through `smtp`, all in plain text. */
export function imapOptions(dovecot: DovecotServer, smtp: { host: string; port: number }, user = 'alice') {
  return { host: dovecot.host, port: dovecot.imapPort, tls: 'none', user, password: 'secret', email: `${user}@example.test`, smtp_host: smtp.host, smtp_port: smtp.port, smtp_tls: 'none' };
}
