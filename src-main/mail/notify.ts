/**
 * Every folder current: NOTIFY (RFC 5465) on one connection per account where the server offers
 * it, plus a background pass over every folder at an interval (MailSync.refresh: one LIST-STATUS,
 * then a QRESYNC/CONDSTORE sync of the folders that moved). With NOTIFY the interval pass is only
 * a safety net; without it the interval pass is how mail in other folders, and new folders,
 * arrive. IDLE on the inbox and the open folder (sync.ts) stays: it is the fastest path there.
 */
import type { MailConnector } from '../connectors/imap/connector';
import { KeptConnection } from './kept-connection';

/** The parts of imapflow used for NOTIFY, which it has no method for. */
interface RawClient {
  exec(command: string, attributes: unknown[]): Promise<{ next: () => void }>;
  untaggedHandlers: Record<string, ((u: unknown) => Promise<void> | void) | undefined>;
}

const atom = (value: string) => ({ type: 'ATOM', value });

/**
 * `NOTIFY SET (personal (...))`: new and expunged messages and flag changes in every personal
 * folder (as untagged STATUS), and folders created, renamed or deleted (as untagged LIST).
 */
const NOTIFY_SET = [atom('SET'), [atom('personal'), [atom('MessageNew'), atom('MessageExpunge'), atom('FlagChange'), atom('MailboxName'), atom('SubscriptionChange')]]];

export interface FollowOptions {
  /** Interval of the pass over every folder with NOTIFY working (ms). */
  safetyMs: number;
  /** Interval of the pass over every folder without NOTIFY (ms). */
  pollMs: number;
  /** Try NOTIFY at all. */
  notify: boolean;
  /** Silence before the kept connection is checked (kept-connection.ts). */
  quietMs: number;
}

/**
 * Keeps every folder of one account current: NOTIFY events and the interval both call
 * `refresh` (debounced; one pass at a time, and one more if something came in during it).
 */
export class FolderFollower extends KeptConnection {
  private timer: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private again = false;
  /** True once the server accepted NOTIFY; false when it has none or refused it. */
  notifying = false;

  constructor(
    connector: MailConnector,
    private readonly refresh: () => Promise<unknown>,
    private readonly options: FollowOptions,
  ) {
    super(connector, options.quietMs);
  }

  /** A pass now (or right after the running one). */
  poke(): void {
    if (this.stopped || this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.pass();
    }, 50);
  }

  private async pass(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.refresh().catch(() => {});
    await this.running;
    this.running = null;
    if (this.again && !this.stopped) {
      this.again = false;
      this.poke();
    }
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        void this.pass().finally(() => this.schedule());
      },
      this.notifying ? this.options.safetyMs : this.options.pollMs,
    );
  }

  /** Resolves `ready` once NOTIFY is set up, or known to be unavailable (the interval pass runs either way). */
  protected async run(ready: () => void): Promise<void> {
    this.schedule();
    if (!this.options.notify) return ready();
    await this.reconnecting(
      ready,
      async (client, connected) => {
        if (!client.capabilities.has('NOTIFY')) {
          this.notifying = false;
          ready();
          return 'stop';
        }
        const raw = client as unknown as RawClient;
        const poke = () => this.poke();
        raw.untaggedHandlers.STATUS = poke;
        raw.untaggedHandlers.LIST = poke;
        try {
          (await raw.exec('NOTIFY', NOTIFY_SET)).next();
        } catch {
          // The server advertised NOTIFY but refused the request: the interval pass does the work.
          this.notifying = false;
          ready();
          return 'stop';
        }
        // IDLE needs a selected mailbox (imapflow); the inbox's own changes come as EXISTS and the like.
        await client.mailboxOpen('INBOX', { readOnly: true });
        client.on('exists', poke);
        client.on('expunge', poke);
        client.on('flags', poke);
        this.notifying = true;
        this.schedule();
        connected();
        // What changed while this connection was being set up.
        this.poke();
        await this.idle(client, ready);
      },
      () => (this.notifying = false),
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    await this.closeConnection();
    await this.running;
  }
}
