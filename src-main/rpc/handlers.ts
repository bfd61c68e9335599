/**
 * The contract, implemented: one function per procedure, over the services, composed from one
 * file per area. Electron-only abilities come in as a `Platform` (platform.ts).
 */
import type { App } from '../app';
import type { Handlers } from '../contract';
import { activityHandlers } from './activity';
import { filesHandlers } from './files';
import { localServerHandlers } from './local-server';
import { mailHandlers } from './mail';
import type { Platform } from './platform';
import { settingsHandlers } from './settings';
import { syncHandlers } from './sync';

export type { Platform } from './platform';

export function createHandlers(app: App, platform: Platform): Handlers {
  const { accounts } = app;
  return {
    'app.info': async () => ({ version: platform.version, mode: platform.mode, dataDir: app.dataDir, apiUrl: platform.apiUrl ?? null }),
    'connectors.list': async () => accounts.connectors(),
    'accounts.list': async () => accounts.list(),
    'accounts.test': async ({ service, options, account }) => (await accounts.test(service, options, account), { ok: true as const }),
    'accounts.connect': async ({ service, options, account }) => accounts.connect({ service, options, account }),
    'accounts.update': async ({ id, account, active }) => accounts.update(id, { account, active }),
    'accounts.delete': async ({ id }) => (await accounts.delete(id), {}),
    'accounts.reconnect': async ({ id, options }) => accounts.reconnect(id, options),
    'accounts.identity': async ({ service, options }) => accounts.identity(service, options),
    'accounts.quota': async ({ id }) => accounts.quota(id),
    ...filesHandlers(app, platform),
    ...settingsHandlers(app.settings, app.apiKeys),
    ...mailHandlers(app.mail, app.storage, app.settings),
    ...localServerHandlers(app, platform),
    ...activityHandlers(app.activity),
    ...syncHandlers(app.sync, (account, id) => app.storage.locate(account, id), app.settings, platform.mode === 'electron' && platform.chooseFolder ? () => platform.chooseFolder!() : undefined),
  };
}
