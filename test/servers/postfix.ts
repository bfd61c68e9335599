/**
 * Postfix 3.7 on a free loopback port, relaying mail for example.test to Dovecot over LMTP:
 * a real MTA (queue, cleanup, qmgr) per notes/test-servers.md §2A. No SASL: 127.0.0.1 is in
 * mynetworks, and the SMTP client skips AUTH when the server offers none.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, scratchDir, waitPort, waitPortClosed } from './util';

export interface PostfixServer {
  host: string;
  port: number;
  stop(): Promise<void>;
}

const POSTFIX = '/usr/sbin/postfix';

function postfix(conf: string, cmd: string, log: string): void {
  // The master daemonizes and keeps stdio; with no syslog its errors are silent, so capture them in a file.
  const fd = openSync(log, 'a');
  const r = spawnSync(POSTFIX, ['-c', conf, cmd], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (r.status !== 0) throw new Error(`postfix ${cmd} failed (${r.status}): ${readFileSync(log, 'utf8')}`);
}

export async function startPostfix(options: { lmtpPort: number; domain?: string }): Promise<PostfixServer> {
  if (!existsSync(POSTFIX)) throw new Error(`Postfix is not installed (${POSTFIX}); apt-get install postfix (notes/test-servers.md §0).`);
  const dir = scratchDir('postfix');
  chmodSync(dir, 0o755);
  const P = join(dir, 'postfix');
  for (const sub of ['conf', 'spool', 'data']) mkdirSync(join(P, sub), { recursive: true });
  spawnSync('chown', ['postfix', join(P, 'data')]);
  const port = await freePort();
  writeFileSync(
    join(P, 'conf', 'main.cf'),
    `compatibility_level = 3.6
queue_directory = ${P}/spool
data_directory = ${P}/data
maillog_file = ${P}/postfix.log
maillog_file_prefixes = ${P}/
mail_owner = postfix
setgid_group = postdrop
myhostname = mx.itest.test
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_recipient_restrictions = permit_mynetworks, reject
virtual_mailbox_domains = ${options.domain ?? 'example.test'}
virtual_transport = lmtp:inet:127.0.0.1:${options.lmtpPort}
default_transport = error:external delivery disabled
relay_transport = error:external delivery disabled
relayhost =
alias_maps =
alias_database =
local_recipient_maps =
smtputf8_enable = no
`,
  );
  writeFileSync(
    join(P, 'conf', 'master.cf'),
    `127.0.0.1:${port} inet n - n - - smtpd
pickup    unix  n - n 60 1 pickup
cleanup   unix  n - n - 0 cleanup
qmgr      unix  n - n 300 1 qmgr
rewrite   unix  - - n - - trivial-rewrite
bounce    unix  - - n - 0 bounce
defer     unix  - - n - 0 bounce
trace     unix  - - n - 0 bounce
verify    unix  - - n - 1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n - - proxymap
showq     unix  n - n - - showq
error     unix  - - n - - error
retry     unix  - - n - - error
discard   unix  - - n - - discard
lmtp      unix  - - n - - lmtp
anvil     unix  - - n - 1 anvil
scache    unix  - - n - 1 scache
postlog   unix-dgram n - n - 1 postlogd
`,
  );
  const conf = join(P, 'conf');
  const log = join(P, 'start.log');
  postfix(conf, 'check', log);
  postfix(conf, 'start', log);
  await waitPort(port);
  return {
    host: '127.0.0.1',
    port,
    async stop() {
      try {
        postfix(conf, 'stop', log);
      } catch {
        /* already stopped */
      }
      await waitPortClosed(port).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
