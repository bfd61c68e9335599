/**
 * The core both composition roots share (Electron `index.ts`, headless `serve.ts`): the data
 * directory, keyring, database, services and the first-run default account.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ActivityService, type ActivityOptions } from './activity';
import { activityV1 } from './rest/shapes/activity';
import { openDb, type Db } from './cache/db';
import { SettingsStore } from './cache/queries/settings';
import { loadConnectors } from './connectors/all';
import { IdCodec } from './ids';
import { mailFiles } from './mail/files';
import { MailService, type MailDeps } from './mail/service';
import { Keyring, type KeyWrapper } from './secrets';
import { AccountsService, type HealthPolicy } from './services/accounts';
import { ApiKeysService } from './services/api-keys';
import { EphemeralFiles } from './services/ephemeral';
import { EventBus } from './services/events';
import { FolderWatch } from './services/folder-watch';
import { DEFAULT_UNDO_SEND_SECONDS, SETTING_SYNC_POLL_SECONDS, SETTING_TRACKING_BASE_URL, SETTING_UNDO_SEND_SECONDS } from './services/settings-keys';
import { StorageService } from './services/storage';
import { SyncEngine, type SyncEngineOptions } from './sync/engine';
import { DEFAULT_REMOTE_POLL_SECONDS } from './sync/remote-watch';
import { TransfersService } from './services/transfers';
import { Downloader, type DownloaderOptions } from './downloads/downloader';
import { startUploads, type UploaderOptions, type Uploads } from './uploads';

export interface AppOptions {
  dataDir: string;
  /** When an unreachable account is deactivated (tests shorten it); services/accounts.ts has the default. */
  accountHealth?: HealthPolicy;
  /** Folder of the embedded default local account; `false` creates none. */
  defaultLocalFolder?: string | false;
  keyWrapper?: KeyWrapper;
  /** Webhook signing key; by default the oldest active API key (tests pass a fixed one). */
  signingKey?: () => string | null;
  /** Activity engine settings (follower intervals, clock, timers): tests and benchmarks. */
  activity?: Partial<Omit<ActivityOptions, 'signingKey' | 'renderV1'>>;
  /** Uploader settings (parallelism, bandwidth, retry window, progress hooks). */
  uploads?: UploaderOptions;
  /** Downloader settings: how long a failing server is waited out (tests shorten it). */
  downloads?: DownloaderOptions;
  /** Two-way sync engine settings (trash folder, poll interval, manual runs): tests. */
  sync?: SyncEngineOptions;
  /** Mail engine settings (live IDLE, body prefetch, a change hook): tests and benchmarks. */
  mail?: Partial<Pick<MailDeps, 'live' | 'prefetchBodies' | 'recordChanges' | 'trackingBaseUrl' | 'followIntervalMs' | 'followSafetyMs' | 'keptQuietMs' | 'notify' | 'undoSendSeconds'>>;
}

export interface App {
  dataDir: string;
  db: Db;
  keyring: Keyring;
  events: EventBus;
  settings: SettingsStore;
  accounts: AccountsService;
  storage: StorageService;
  /** The `ephemeral` upload area (spec 1), served as storage files and swept hourly. */
  ephemeral: EphemeralFiles;
  transfers: TransfersService;
  mail: MailService;
  activity: ActivityService;
  /** Spec 1 multipart sessions and the resumable client-side uploader over them. */
  uploads: Uploads;
  /** Resumable downloads to local paths (the desktop app's Download). */
  downloads: Downloader;
  /** REST API keys (spec 1, Authentication); the oldest active one signs webhooks (spec 3). */
  apiKeys: ApiKeysService;
  /** The folders open in a browser, kept current (watch or poll). */
  folderWatch: FolderWatch;
  /** Two-way sync pairs (docs/sync.md). */
  sync: SyncEngine;
  close(): Promise<void>;
}

export async function createApp(options: AppOptions): Promise<App> {
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  for (const failure of await loadConnectors()) {
    console.error(`Connector "${failure.folder}" could not be loaded and is unavailable:`, failure.error);
  }
  const keyring = Keyring.open(options.dataDir, options.keyWrapper);
  const db = openDb(join(options.dataDir, 'tributary.db'));
  const events = new EventBus();
  const settings = new SettingsStore(db);
  const accounts = new AccountsService(db, keyring, events, options.dataDir, options.accountHealth);
  const ids = new IdCodec(keyring.key('ids'));
  const storage = new StorageService(db, accounts, ids, events);
  const ephemeral = new EphemeralFiles(join(options.dataDir, 'ephemeral'), ids);
  storage.addProvider(ephemeral);
  const transfers = new TransfersService(events);
  const apiKeys = new ApiKeysService(db, keyring);
  const activity = new ActivityService({ db, settings, events, accounts, storage, keyring }, { ...options.activity, renderV1: activityV1, signingKey: options.signingKey ?? (() => apiKeys.signingKey()) });
  const mail = new MailService({
    db,
    accounts,
    events,
    keyring,
    trackingBaseUrl: () => settings.get<string | null>(SETTING_TRACKING_BASE_URL, null),
    undoSendSeconds: () => settings.get<number>(SETTING_UNDO_SEND_SECONDS, DEFAULT_UNDO_SEND_SECONDS),
    recordChanges: (account, changes) => activity.recordMailChanges(account, changes),
    ...options.mail,
  });
  storage.addProvider(mailFiles(mail));
  activity.subscriptions.mailFolder = (account, resource) => mail.folders.checkMonitored(account, resource);
  mail.start();
  const sweep = () => void ephemeral.sweep().catch((e) => console.error('Ephemeral sweep failed:', e));
  sweep();
  const sweeper = setInterval(sweep, 3600_000).unref();
  const uploads = startUploads({ db, dataDir: options.dataDir, settings, accounts, storage, transfers }, options.uploads);
  const downloads = new Downloader({ db, storage, transfers }, options.downloads);
  downloads.start();
  if (options.defaultLocalFolder !== false) await ensureDefaultAccount(settings, accounts, options.defaultLocalFolder ?? join(homedir(), 'Tributary'));
  await activity.start();
  const folderWatch = new FolderWatch({ accounts, storage, events, settings });
  const sync = new SyncEngine(db, (account) => accounts.storage(account), {
    remotePollMs: () => settings.get<number>(SETTING_SYNC_POLL_SECONDS, DEFAULT_REMOTE_POLL_SECONDS) * 1000,
    // The same knowledge of a backend's folder ETags as the activity followers'.
    deepFolderEtags: (account) => {
      const f = options.activity?.followers;
      return f?.perService?.[accounts.row(account).service]?.deepFolderEtags ?? f?.deepFolderEtags ?? false;
    },
    ...options.sync,
  });
  sync.onChange((pair) => events.emit('sync.changed', { pair }));
  // A follower of a subscription recorded something in an account: its pairs look now.
  const offActivity = events.on('activity.appended', ({ account }) => sync.remoteChanged(account));
  await sync.start();
  return {
    dataDir: options.dataDir,
    db,
    keyring,
    events,
    settings,
    accounts,
    storage,
    ephemeral,
    transfers,
    mail,
    activity,
    uploads,
    downloads,
    apiKeys,
    folderWatch,
    sync,
    async close() {
      clearInterval(sweeper);
      offActivity();
      await sync.close();
      await folderWatch.close();
      uploads.stop();
      await activity.close();
      await mail.close();
      await accounts.close();
      storage.entries.flush(); // listings not yet written to the cache
      db.close();
    },
  };
}

/** First run: a local-folder account, so the app is useful before any account is connected. */
async function ensureDefaultAccount(settings: SettingsStore, accounts: AccountsService, folder: string): Promise<void> {
  if (settings.get('defaultAccountCreated', false)) return;
  mkdirSync(folder, { recursive: true });
  await accounts.connect({ service: 'local', options: { path: folder }, account: 'This computer', isDefault: true });
  settings.set('defaultAccountCreated', true);
}

/** The per-user data folder, as Electron's `userData` would place it. */
export function defaultDataDir(): string {
  const base =
    process.platform === 'darwin'
      ? join(homedir(), 'Library', 'Application Support')
      : process.platform === 'win32'
        ? (process.env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'))
        : (process.env.XDG_CONFIG_HOME ?? join(homedir(), '.config'));
  return join(base, 'Tributary');
}
