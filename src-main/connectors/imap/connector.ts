/**
 * Connections of one IMAP/SMTP account: fresh IMAP clients for the sync engine and IDLE
 * watchers, one shared command client serialized by a queue, and one pooled nodemailer
 * transport. All library errors leave here as ServiceError.
 */
import { defaultAddress } from './address';
import { ImapFlow } from 'imapflow';
import nodemailer, { type Transporter } from 'nodemailer';
import { ServiceError } from '../../errors';
import { isUnreachable } from '../shared/net-errors';

export type Security = 'tls' | 'starttls' | 'none';

export interface ImapOptions {
  host: string;
  port?: number;
  tls: Security;
  user: string;
  password?: string;
  accessToken?: string;
  ca?: string;
  email?: string;
  smtp_host?: string;
  smtp_port?: number;
  smtp_tls?: Security;
  /** Display name in From. */
  name?: string;
  /** Signature the compose window adds to new messages (plain text). */
  signature?: string;
}

export interface MailConnector {
  readonly kind: 'mail';
  /** The account's own address (From of sent mail). */
  readonly address: string;
  /** The name shown with it in From (option `name`); null when not set. */
  readonly displayName: string | null;
  /**
   * A new logged-in IMAP connection; the caller owns it and must logout(). With `quietMs`, a
   * connection that hears nothing for that long sends a NOOP, and one whose NOOP gets no answer
   * within as long again is closed (a network path that died without a close).
   */
  connect(opts?: { quietMs?: number }): Promise<ImapFlow>;
  /** The shared connection is suspect (a kept connection to the server died): the next operation opens a fresh one. */
  replaceShared(): void;
  /** Runs `fn` on the shared command connection, one operation at a time. */
  withClient<T>(fn: (client: ImapFlow) => Promise<T>): Promise<T>;
  /** Sends a complete RFC 822 message through the pooled SMTP transport. */
  send(raw: Buffer, envelope: { from: string; to: string[] }): Promise<{ messageId?: string; response: string }>;
  verify(): Promise<void>;
  close(): Promise<void>;
}

/** Connecting to the SMTP server and waiting for its greeting, each. */
export const SMTP_TIMEOUT_MS = 8000;

/** nodemailer's (ECONNECTION, ESOCKET) and imapflow's codes for a lost or missing connection. */
const MAIL_UNREACHABLE = ['ECONNECTION', 'ESOCKET', 'EConnectionClosed', 'NoConnection', 'StateLogout'];

/** Maps imapflow / nodemailer / socket failures to the documented codes. */
export function mailError(e: unknown, what: string): ServiceError {
  if (e instanceof ServiceError) return e;
  const err = e as { code?: string; authenticationFailed?: boolean; responseCode?: number; responseText?: string; response?: string; message?: string; mailboxMissing?: boolean };
  const detail = err.responseText || err.response || err.message || String(e);
  if (err.authenticationFailed || err.code === 'EAUTH' || err.responseCode === 535) {
    return new ServiceError('upstream_auth_failed', `${what}: authentication failed (${detail}).`, {}, { cause: e });
  }
  if (err.mailboxMissing) return new ServiceError('not_found', `${what}: the mailbox does not exist.`, {}, { cause: e });
  if (isUnreachable(err.code, MAIL_UNREACHABLE)) {
    return new ServiceError('service_not_available', `${what}: ${detail}`, { retryAfter: 30 }, { cause: e });
  }
  return new ServiceError('upstream_error', `${what}: ${detail}`, {}, { cause: e });
}

/**
 * A VANISHED response without EARLIER (QRESYNC, RFC 7162 §3.2.10) removes a message from the
 * selected mailbox as EXPUNGE does, but imapflow 2.1.2 leaves its message count as it was. Its
 * next EXISTS then carries the count imapflow already holds (one expunged elsewhere, one
 * delivered), and imapflow drops it without an `exists` event: IDLE would miss that new mail.
 * Runs before the watchers' own listeners. Should imapflow start counting VANISHED itself, the
 * count ends up too low, which only makes the next EXISTS an event, never hides one.
 */
function countVanished(client: ImapFlow, e: { path: string; vanished?: boolean; earlier?: boolean }): void {
  const box = client.mailbox;
  if (e.vanished && !e.earlier && box && box.path === e.path && box.exists > 0) box.exists--;
}

/**
 * Logged in and not logging out. After the server's BYE and until the socket closes, imapflow
 * still calls a connection usable but skips every command, answering undefined: a CREATE that
 * never reached the server would look done.
 */
function isLive(client: ImapFlow): boolean {
  return client.usable && (client.state === client.states.AUTHENTICATED || client.state === client.states.SELECTED);
}

export class ImapConnector implements MailConnector {
  readonly kind = 'mail' as const;
  readonly address: string;
  readonly displayName: string | null;
  private shared: Promise<ImapFlow> | null = null;
  private sharedSuspect = false;
  private queue: Promise<unknown> = Promise.resolve();
  private transport: Transporter | null = null;
  private readonly owned = new Set<ImapFlow>();
  private closed = false;

  constructor(private readonly o: ImapOptions) {
    this.address = o.email || defaultAddress(o.user, o.host);
    this.displayName = o.name?.trim() || null;
  }

  async connect(opts: { quietMs?: number } = {}): Promise<ImapFlow> {
    if (this.closed) throw new ServiceError('service_not_available', 'The mail account is closed.');
    const o = this.o;
    const client = new ImapFlow({
      host: o.host,
      port: o.port ?? (o.tls === 'tls' ? 993 : 143),
      secure: o.tls === 'tls',
      doSTARTTLS: o.tls === 'starttls' ? true : o.tls === 'none' ? false : undefined,
      tls: o.ca ? { ca: o.ca } : undefined,
      auth: o.accessToken ? { user: o.user, accessToken: o.accessToken } : { user: o.user, pass: o.password ?? '' },
      logger: false,
      qresync: true,
      // IDLE is started explicitly by the watcher (imapflow 2.1.2 does not deliver events otherwise).
      disableAutoIdle: true,
      connectionTimeout: 15_000,
      socketTimeout: opts.quietMs,
    });
    // Socket errors are reported through the pending command; an unhandled 'error' would crash.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (e) {
      client.close();
      throw mailError(e, `IMAP ${o.host}`);
    }
    this.owned.add(client);
    client.on('close', () => this.owned.delete(client));
    client.on('expunge', (e: { path: string; vanished?: boolean; earlier?: boolean }) => countVanished(client, e));
    return client;
  }

  replaceShared(): void {
    this.sharedSuspect = this.shared !== null;
  }

  withClient<T>(fn: (client: ImapFlow) => Promise<T>): Promise<T> {
    const attempt = async (retry: boolean): Promise<T> => {
      // A connection that is gone, or a connect that failed for an earlier operation (the server
      // was down then), is replaced now, so the server's return never costs one more failure.
      const previous = await this.shared?.catch(() => null);
      if (previous && this.sharedSuspect) previous.close();
      if (!previous || !isLive(previous) || this.sharedSuspect) this.shared = null;
      this.sharedSuspect = false;
      if (!this.shared) this.shared = this.connect();
      let client: ImapFlow;
      try {
        client = await this.shared;
      } catch (e) {
        this.shared = null;
        throw e;
      }
      try {
        return await fn(client);
      } catch (e) {
        const err = e as { code?: string; rejectedFrom?: string };
        // StateLogout: the server logged us out (a kick, BYE) before imapflow noticed.
        const lost = ['NoConnection', 'EConnectionClosed', 'StateLogout'].includes(err.code ?? '') || !isLive(client);
        if (lost) {
          // The server dropped us (BYE, reset): the next operation gets a fresh connection.
          if (this.shared) void this.shared.then((c) => c === client && c.close()).catch(() => {});
          this.shared = null;
          // Retried once only when the command never reached the server, so nothing runs twice.
          const unsent = err.code === 'NoConnection' || err.code === 'StateLogout' || /^(exec|write)/.test(err.rejectedFrom ?? '');
          if (retry && unsent && !this.closed) return attempt(false);
        }
        throw mailError(e, `IMAP ${this.o.host}`);
      }
    };
    const run = () => attempt(true);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => {});
    return p;
  }

  private smtp(): Transporter {
    if (!this.transport) {
      const o = this.o;
      const sec = o.smtp_tls ?? o.tls;
      this.transport = nodemailer.createTransport({
        pool: true,
        maxConnections: 2,
        host: o.smtp_host ?? o.host,
        port: o.smtp_port ?? (sec === 'tls' ? 465 : sec === 'starttls' ? 587 : 25),
        secure: sec === 'tls',
        requireTLS: sec === 'starttls',
        ignoreTLS: sec === 'none',
        tls: o.ca ? { ca: o.ca } : undefined,
        auth: o.accessToken ? { type: 'OAuth2', user: o.user, accessToken: o.accessToken } : { user: o.user, pass: o.password ?? '' },
        // A port that takes the connection but never greets (implicit TLS spoken to in plain text,
        // a filtering proxy) otherwise holds a send for nodemailer's 30 s default; the outbox retries.
        connectionTimeout: SMTP_TIMEOUT_MS,
        greetingTimeout: SMTP_TIMEOUT_MS,
      });
    }
    return this.transport;
  }

  async send(raw: Buffer, envelope: { from: string; to: string[] }): Promise<{ messageId?: string; response: string }> {
    try {
      const info = await this.smtp().sendMail({ envelope, raw });
      return { messageId: info.messageId, response: String(info.response ?? '') };
    } catch (e) {
      throw mailError(e, `SMTP ${this.o.smtp_host ?? this.o.host}`);
    }
  }

  async verify(): Promise<void> {
    const client = await this.connect();
    await client.logout().catch(() => {});
    try {
      await this.smtp().verify();
    } catch (e) {
      throw mailError(e, `SMTP ${this.o.smtp_host ?? this.o.host}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.owned].map((c) => c.logout().catch(() => c.close())));
    this.owned.clear();
    this.shared = null;
    this.transport?.close();
    this.transport = null;
  }
}
