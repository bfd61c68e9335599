/**
 * Live folders: the folders the user has open (the renderer renews a lease on each while it
 * shows it, `files.watch`) are kept current without any activity subscription. A backend that
 * pushes changes (`features.watch`, the local folder) is watched while one of its folders is
 * open; every other backend has its open folders listed again every few seconds (setting
 * `files.pollSeconds`) and right away when an activity follower of the account recorded
 * something. A listing that differs from the cached one (what the user last saw) replaces it and
 * publishes `files.changed` for that folder only.
 */
import { parentOf } from '../connectors/shared/paths';
import type { Entry, RawChange, StorageConnector, Watcher } from '../connectors/types';
import type { SettingsStore } from '../cache/queries/settings';
import type { AccountsService } from './accounts';
import type { EventBus } from './events';
import { SETTING_FOLDER_POLL_SECONDS } from './settings-keys';
import type { StorageService } from './storage';

/** A folder stays watched this long after the last renewal (the renderer renews every 10 s). */
export const LEASE_MS = 30_000;
export const DEFAULT_POLL_SECONDS = 3;

interface Lease {
  account: number;
  path: string;
  expires: number;
  /** When the folder was last listed by the poll. */
  polledAt: number;
  polling: boolean;
}

interface AccountWatch {
  connector: StorageConnector;
  watcher: Promise<Watcher | null>;
  /** Whether the watch reports changes yet: until then its folders are polled like any other. */
  ready: boolean;
}

export interface FolderWatchDeps {
  accounts: Pick<AccountsService, 'storage'>;
  storage: StorageService;
  events: EventBus;
  settings: SettingsStore;
}

export class FolderWatch {
  private readonly leases = new Map<string, Lease>();
  private readonly watches = new Map<number, AccountWatch>();
  private readonly timer: NodeJS.Timeout;
  private readonly offs: (() => void)[] = [];

  constructor(
    private readonly deps: FolderWatchDeps,
    private readonly now: () => number = Date.now,
  ) {
    this.timer = setInterval(() => this.tick(), 250);
    this.timer.unref();
    // A follower recorded changes of this account: its open folders are checked now.
    this.offs.push(deps.events.on('activity.appended', ({ account }) => this.pollAccount(account)));
    // Reconnected or removed accounts get new connectors: watches start again on demand.
    this.offs.push(deps.events.on('accounts.changed', () => void this.closeWatches()));
  }

  /** Seconds between two listings of an open folder on a backend that cannot push changes. */
  pollSeconds(): number {
    return this.deps.settings.get<number>(SETTING_FOLDER_POLL_SECONDS, DEFAULT_POLL_SECONDS);
  }

  /** Opens or renews the lease on one folder (an upstream path) of an account. */
  async watch(account: number, path: string): Promise<void> {
    const key = `${account}:${path}`;
    const lease = this.leases.get(key);
    if (lease) lease.expires = this.now() + LEASE_MS;
    else this.leases.set(key, { account, path, expires: this.now() + LEASE_MS, polledAt: this.now(), polling: false });
    if (!this.watches.has(account)) {
      const connector = await this.deps.accounts.storage(account);
      if (connector.features.watch && !this.watches.has(account)) {
        const watcher = connector.features
          .watch(
            (changes) => this.pushed(account, changes),
            () => void this.unwatchAccount(account),
          )
          .catch(() => null);
        const entry: AccountWatch = { connector, watcher, ready: false };
        this.watches.set(account, entry);
        void watcher.then((w) => {
          if (this.watches.get(account) !== entry) return;
          // A watch that could not start leaves the account to the poll.
          if (!w) return void this.watches.delete(account);
          // What changed between a folder's listing and the watch's start was reported by no
          // one: the open folders are listed once more now.
          entry.ready = true;
          this.pollAccount(account);
        });
      }
    }
  }

  /** The folders kept live now, and how: pushed by the backend or polled. */
  open(): { account: number; path: string; by: 'watch' | 'poll' }[] {
    return [...this.leases.values()].map((l) => ({ account: l.account, path: l.path, by: this.watched(l.account) ? 'watch' : 'poll' }));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const off of this.offs) off();
    this.leases.clear();
    await this.closeWatches();
  }

  /** Changes pushed by a watching backend: the open folders they touched are current again. */
  private pushed(account: number, changes: RawChange[]): void {
    const folders = new Set<string>();
    for (const c of changes) {
      folders.add(parentOf(c.path));
      if (c.previousPath) folders.add(parentOf(c.previousPath));
    }
    for (const path of folders) {
      if (this.leases.has(`${account}:${path}`)) this.deps.storage.touched(account, path);
    }
  }

  private tick(): void {
    const now = this.now();
    for (const [key, lease] of this.leases) if (lease.expires <= now) this.leases.delete(key);
    for (const account of this.watches.keys()) {
      if (![...this.leases.values()].some((l) => l.account === account)) void this.unwatchAccount(account);
    }
    const every = this.pollSeconds() * 1000;
    for (const lease of this.leases.values()) {
      if (!this.watched(lease.account) && now - lease.polledAt >= every) void this.poll(lease);
    }
  }

  /** Whether the account's changes are pushed by a watch that has started. */
  private watched(account: number): boolean {
    return this.watches.get(account)?.ready === true;
  }

  private pollAccount(account: number): void {
    for (const lease of this.leases.values()) if (lease.account === account) void this.poll(lease);
  }

  /**
   * Lists the folder and compares with the cached listing, which is what the user last saw; a
   * difference replaces the cache and tells the renderer. Failures wait for the next round
   * (the renderer shows its own error when it lists).
   */
  private async poll(lease: Lease): Promise<void> {
    if (lease.polling) return;
    lease.polling = true;
    try {
      const connector = await this.deps.accounts.storage(lease.account);
      const listed = await connector.list(lease.path);
      const cached = this.deps.storage.entries.listing(lease.account, lease.path);
      if (cached && signature(cached.entries) === signature(listed)) return;
      this.deps.storage.entries.replaceListing(lease.account, lease.path, listed);
      if (cached) this.deps.storage.touched(lease.account, lease.path);
    } catch {
      /* next round */
    } finally {
      lease.polling = false;
      lease.polledAt = this.now();
    }
  }

  private async unwatchAccount(account: number): Promise<void> {
    const w = this.watches.get(account);
    if (!w) return;
    this.watches.delete(account);
    await (await w.watcher)?.close().catch(() => {});
  }

  private async closeWatches(): Promise<void> {
    await Promise.all([...this.watches.keys()].map((a) => this.unwatchAccount(a)));
  }
}

/** What the browser shows of a listing: names, kinds, sizes, modification times and tags. */
function signature(entries: Entry[]): string {
  return entries
    .map((e) => `${e.kind}\0${e.name}\0${e.size ?? ''}\0${e.modified?.getTime() ?? ''}\0${e.etag ?? ''}`)
    .sort()
    .join('\n');
}
