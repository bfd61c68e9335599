/**
 * One IMAP connection kept open in the background (IDLE on a folder in sync.ts, NOTIFY in
 * notify.ts): reconnects after a failure with back-off from 1 s doubling to 60 s until stopped.
 * A network path that dies without a close (sleep, a changed Wi-Fi, a NAT entry dropped) is
 * found by silence: after `quietMs` without a byte the connection sends a NOOP, and it is closed
 * and opened again when that gets no answer within `quietMs` more.
 */
import type { ImapFlow } from 'imapflow';
import type { MailConnector } from '../connectors/imap/connector';

/** Silence on a kept connection before it is checked (Dovecot's IDLE says "Still here" every 2 min). */
export const KEPT_QUIET_MS = 60_000;

export abstract class KeptConnection {
  protected client: ImapFlow | null = null;
  protected stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    protected readonly connector: MailConnector,
    private readonly quietMs: number,
  ) {}

  /** Resolves once the connection is set up, or the first attempt failed (it keeps retrying). */
  start(): Promise<void> {
    return new Promise((ready) => {
      this.loop = this.run(ready);
    });
  }

  protected abstract run(ready: () => void): Promise<void>;

  /**
   * Runs `session` on a fresh connection whenever the last one ended, until stopped or `session`
   * returns 'stop'. `connected` resets the back-off; `failed` runs before each wait.
   */
  protected async reconnecting(
    ready: () => void,
    session: (client: ImapFlow, connected: () => void) => Promise<'stop' | void>,
    failed: () => void = () => {},
  ): Promise<void> {
    let delay = 1000;
    while (!this.stopped) {
      try {
        const client = await this.connector.connect({ quietMs: this.quietMs });
        this.client = client;
        if ((await session(client, () => (delay = 1000))) === 'stop') break;
        // The session ended under us: the shared command connection shares its fate (a path
        // that died silently would otherwise hold the next operation until its own timeout).
        if (!this.stopped) this.connector.replaceShared();
      } catch {
        if (!this.stopped) this.connector.replaceShared();
        ready();
        if (this.stopped) break;
        failed();
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 60_000);
      } finally {
        const c = this.client;
        this.client = null;
        if (c) await c.logout().catch(() => c.close());
      }
    }
  }

  /** IDLE on the selected mailbox while the connection lasts; `ready` once the first IDLE is under way. */
  protected async idle(client: ImapFlow, ready: () => void): Promise<void> {
    let first = true;
    // IDLE needs a selected mailbox. Without one (after the server's BYE, or a mailbox closed
    // under it) imapflow answers idle() at once, and `usable` alone would let this loop spin.
    while (!this.stopped && client.usable && client.state === client.states.SELECTED) {
      const idling = client.idle();
      if (first) {
        first = false;
        setTimeout(ready, 100);
      }
      await idling;
    }
  }

  /** Stops reconnecting, closes the connection and waits for the loop to end. */
  protected async closeConnection(): Promise<void> {
    this.stopped = true;
    const c = this.client;
    if (c) await c.logout().catch(() => c.close());
    await this.loop?.catch(() => {});
  }
}
