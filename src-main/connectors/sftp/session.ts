/**
 * The SSH connection of one SFTP account: opened lazily, kept alive, and reopened after a drop.
 * The host key is pinned trust-on-first-use (known-hosts.ts); a changed key is refused until the
 * user confirms the new fingerprint (`hostKeyFingerprint`).
 */
import SftpClient from 'ssh2-sftp-client';
import { ServiceError } from '../../errors';
import type { ServerIdentity } from '../types';
import { mapError, SFTP } from './errors';
import type { SftpOptions } from './options';
import { fingerprintOf, KnownHosts, normalizeFingerprint } from './known-hosts';

// The raw ssh2 SFTP channel: ssh2-sftp-client's wrappers lose the numeric status codes we map.
export type RawSftp = any;
export interface Session {
  client: SftpClient;
  sftp: RawSftp;
  home: string;
  alive: boolean;
  /** Called once when the connection drops: in-flight streams fail instead of waiting forever. */
  onDead: Set<() => void>;
}

/** A raw channel call as a promise. */
export const call = <T>(fn: (cb: (err: any, value?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

/**
 * The host key of a server this install has never seen and the options do not pin, for the
 * user to confirm before the first connection trusts it; null when known or pinned.
 */
export async function unknownHostKey(o: SftpOptions, dataDir: string): Promise<ServerIdentity | null> {
  if (o.hostKeyFingerprint) return null;
  const hostId = `[${o.host}]:${o.port}`;
  if (new KnownHosts(dataDir).get(hostId)) return null;
  let key: Buffer | undefined;
  const quiet = () => {};
  const client = new SftpClient('tributary-host-key', { error: quiet, end: quiet, close: quiet });
  try {
    // Refusing the key ends the handshake before any credential is sent.
    await client.connect({ host: o.host, port: o.port, username: o.username, readyTimeout: 20_000, hostVerifier: (k: Buffer) => ((key = k), false) } as SftpClient.ConnectOptions);
  } catch (e) {
    if (!key) throw mapError(e, `Could not connect to ${o.host}:${o.port}`);
  } finally {
    await client.end().catch(() => {});
  }
  if (!key) return null;
  // The key blob starts with its type ("ssh-ed25519"), as a length-prefixed string.
  const type = key.length > 4 ? key.subarray(4, 4 + key.readUInt32BE(0)).toString('latin1') : 'unknown';
  const value = `SHA256:${fingerprintOf(key)}`;
  return { fingerprint: value, what: `the ${type} host key of ${o.host}:${o.port}`, option: 'hostKeyFingerprint', value };
}

export class SftpSessions {
  private session?: Promise<Session>;
  /** The last session opened: the server's extensions (copy-data, ...) are read from it. */
  current?: Session;
  private closed = false;
  private readonly knownHosts: KnownHosts;

  constructor(
    private readonly o: SftpOptions,
    dataDir: string,
  ) {
    this.knownHosts = new KnownHosts(dataDir);
  }

  private async connect(): Promise<Session> {
    const o = this.o;
    if (!o.password && !o.privateKey) throw new ServiceError('invalid_parameters', 'A password or a private key is required.');
    const hostId = `[${o.host}]:${o.port}`;
    const pinned = o.hostKeyFingerprint ? normalizeFingerprint(o.hostKeyFingerprint) : undefined;
    let seen: string | undefined;
    let refusal: ServiceError | undefined;
    // Quiet global listeners: drops are noticed through `alive` and reported per operation.
    const quiet = () => {};
    const client = new SftpClient('tributary', { error: quiet, end: quiet, close: quiet });
    const config = {
      host: o.host,
      port: o.port,
      username: o.username,
      password: o.password,
      privateKey: o.privateKey,
      passphrase: o.passphrase,
      readyTimeout: 20_000,
      keepaliveInterval: 10_000,
      keepaliveCountMax: 3,
      hostVerifier: (key: Buffer) => {
        seen = fingerprintOf(key);
        const known = this.knownHosts.get(hostId);
        if (pinned && pinned !== seen) {
          refusal = new ServiceError(
            'forbidden',
            `The host key of ${o.host} (SHA256:${seen}) does not match the fingerprint in the settings (SHA256:${pinned}). The connection was refused.`,
          );
          return false;
        }
        if (!pinned && known && known !== seen) {
          refusal = new ServiceError(
            'forbidden',
            `The host key of ${o.host} has changed: it was SHA256:${known} and is now SHA256:${seen}. ` +
              `This can mean someone is intercepting the connection. If the server's key was replaced on purpose, ` +
              `accept the new key by setting the host key fingerprint to SHA256:${seen}.`,
          );
          return false;
        }
        return true;
      },
    };
    try {
      await client.connect(config as SftpClient.ConnectOptions);
    } catch (e) {
      await client.end().catch(() => {});
      if (refusal) throw refusal;
      throw mapError(e, `Could not connect to ${o.host}:${o.port}`);
    }
    // Trust on first use (or on the user's explicit acceptance of a new key).
    if (seen) this.knownHosts.set(hostId, seen);
    const sftp = (client as any).sftp as RawSftp;
    const ssh = (client as any).client;
    // Nagle's algorithm holds each small READ request and window adjustment back until the
    // last one is acknowledged: with it off, 1 GiB downloads ran at about twice the speed.
    ssh.setNoDelay(true);
    const session: Session = { client, sftp, home: '/', alive: true, onDead: new Set() };
    const dead = () => {
      if (!session.alive) return;
      session.alive = false;
      for (const f of session.onDead) f();
      session.onDead.clear();
    };
    ssh.on('close', dead);
    ssh.on('end', dead);
    ssh.on('error', dead);
    sftp.on?.('close', dead);
    try {
      const root = o.root?.trim() ? o.root.trim() : '.';
      session.home = await call<string>((cb) => sftp.realpath(root, cb));
      const st = await call<any>((cb) => sftp.stat(session.home, cb));
      if (!st.isDirectory()) throw new ServiceError('invalid_parameters', `"${o.root}" is not a folder on ${o.host}.`);
    } catch (e) {
      await client.end().catch(() => {});
      if (e instanceof ServiceError) throw e;
      if (e && (e as any).code === SFTP.NO_SUCH_FILE) throw new ServiceError('invalid_parameters', `The folder "${o.root}" does not exist on ${o.host}.`);
      throw mapError(e, 'Could not open the folder');
    }
    return session;
  }

  /** The live session, reconnecting when the previous one dropped. */
  async get(): Promise<Session> {
    if (this.closed) throw new ServiceError('service_not_available', 'This connection was closed.');
    if (this.session) {
      const s = await this.session.catch(() => undefined);
      if (s?.alive) return s;
      if (s) s.client.end().catch(() => {});
    }
    const p = this.connect();
    this.session = p;
    p.then((s) => (this.current = s)).catch(() => {
      if (this.session === p) this.session = undefined;
    });
    return p;
  }

  /** Runs an idempotent operation, once more on a fresh connection if the first one dropped. */
  async idempotent<T>(op: (s: Session) => Promise<T>): Promise<T> {
    const s = await this.get();
    try {
      return await op(s);
    } catch (e) {
      if (!s.alive && !this.closed) return op(await this.get());
      throw e;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = await this.session?.catch(() => undefined);
    this.session = undefined;
    if (s) await s.client.end().catch(() => {});
  }
}
