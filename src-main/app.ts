/**
 * The core both composition roots share (Electron `index.ts`, headless `serve.ts`): the data
 * directory, keyring, database, services and the first-run default account.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { openDb, type Db } from './cache/db';
import { SettingsStore } from './cache/queries/settings';
import { loadConnectors } from './connectors/all';
import { IdCodec } from './ids';
import { Keyring, type KeyWrapper } from './secrets';
import { AccountsService } from './services/accounts';
import { EventBus } from './services/events';
import { StorageService } from './services/storage';
import { TransfersService } from './services/transfers';

export interface AppOptions {
  dataDir: string;
  /** Folder of the embedded default local account; `false` creates none. */
  defaultLocalFolder?: string | false;
  keyWrapper?: KeyWrapper;
}

export interface App {
  dataDir: string;
  db: Db;
  keyring: Keyring;
  events: EventBus;
  settings: SettingsStore;
  accounts: AccountsService;
  storage: StorageService;
  transfers: TransfersService;
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
  const accounts = new AccountsService(db, keyring, events, options.dataDir);
  const storage = new StorageService(db, accounts, new IdCodec(keyring.key('ids')), events);
  const transfers = new TransfersService(events);
  const app: App = {
    dataDir: options.dataDir,
    db,
    keyring,
    events,
    settings,
    accounts,
    storage,
    transfers,
    async close() {
      await accounts.close();
      db.close();
    },
  };
  if (options.defaultLocalFolder !== false) await ensureDefaultAccount(app, options.defaultLocalFolder ?? join(homedir(), 'Tributary'));
  return app;
}

/** First run: a local-folder account, so the app is useful before any account is connected. */
async function ensureDefaultAccount(app: App, folder: string): Promise<void> {
  if (app.settings.get('defaultAccountCreated', false)) return;
  mkdirSync(folder, { recursive: true });
  await app.accounts.connect({ service: 'local', options: { path: folder }, account: 'This computer', isDefault: true });
  app.settings.set('defaultAccountCreated', true);
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
