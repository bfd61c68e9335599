/**
 * Handlers of the `sync.*` procedures (contract/sync.ts) over SyncEngine, spread into
 * rpc/handlers.ts beside the other procedures.
 */
import type { z } from 'zod';
import type { syncProcedures } from '../contract/sync';
import { LocalConnector } from '../connectors/local';
import type { StorageConnector } from '../connectors/types';
import type { SettingsStore } from '../cache/queries/settings';
import { SETTING_SYNC_POLL_SECONDS } from '../services/settings-keys';
import type { SyncEngine } from '../sync/engine';
import { DEFAULT_REMOTE_POLL_SECONDS } from '../sync/remote-watch';
import { ServiceError } from '../errors';

type P = typeof syncProcedures;
export type SyncHandlers = { [K in keyof P]: (input: z.output<P[K]['input']>) => Promise<z.output<P[K]['output']>> };

/** Where a resource id of an account points: its connector and path (StorageService.locate). */
export type Locate = (account: number, id: string) => Promise<{ connector: StorageConnector; path: string; trash?: boolean }>;

/**
 * `chooseFolder`: the desktop app's folder dialog (Platform.chooseFolder); absent in headless
 * mode, where the browser cannot pick a folder of this computer and its path is typed.
 */
export function syncHandlers(engine: SyncEngine, locate: Locate, settings: SettingsStore, chooseFolder?: () => Promise<string | null>): SyncHandlers {
  const settingsView = () => ({ remotePollSeconds: settings.get<number>(SETTING_SYNC_POLL_SECONDS, DEFAULT_REMOTE_POLL_SECONDS) });
  const view = (id: number) => {
    const p = engine.status().find((x) => x.id === id);
    if (!p) throw new Error(`sync pair ${id} vanished`);
    const { created: _created, allowDeletes: _allow, ...rest } = p;
    return rest;
  };
  return {
    'sync.pairs.list': async () => engine.status().map((p) => view(p.id)),
    'sync.localFolder.choose': async () => {
      if (!chooseFolder) throw new ServiceError('not_implemented', 'Choosing a folder with a dialog is only available in the desktop app; type the folder\'s path.');
      return { path: await chooseFolder() };
    },
    'sync.pairs.create': async (input) => view((await engine.create(input)).id),
    'sync.pairs.update': async ({ id, excluded }) => (engine.setExcluded(id, excluded), view(id)),
    'sync.pairs.folders': async ({ id }) => engine.folders(id),
    'sync.pairs.remove': async ({ id }) => (await engine.remove(id), {}),
    'sync.pairs.pause': async ({ id }) => (await engine.pause(id), view(id)),
    'sync.pairs.resume': async ({ id }) => (engine.resume(id), view(id)),
    'sync.pairs.rescan': async ({ id }) => {
      engine.store.pair(id);
      void engine.rescan(id).catch(() => {});
      return view(id);
    },
    'sync.pairs.confirm': async ({ id }) => {
      engine.store.pair(id);
      void engine.confirm(id).catch(() => {});
      return view(id);
    },
    'sync.settings.get': async () => settingsView(),
    'sync.settings.set': async ({ remotePollSeconds }) => {
      settings.set(SETTING_SYNC_POLL_SECONDS, remotePollSeconds);
      return settingsView();
    },
    'sync.conflicts.list': async ({ pair }) => engine.store.conflicts(pair),
    'sync.conflicts.resolve': async ({ id, keep }) => (await engine.resolve(id, keep), {}),
    'sync.files.states': async ({ account, folder }) => {
      const at = await locate(account, folder);
      if (at.trash) return {};
      return engine.fileStates(account, at.path, at.connector instanceof LocalConnector ? at.connector.root : undefined);
    },
  };
}
