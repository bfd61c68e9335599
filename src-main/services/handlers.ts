/**
 * The contract, implemented: one function per procedure, over the services. Electron-only
 * abilities (native dialogs, reading files the user dropped from the desktop) come in as a
 * `Platform`; in headless mode they are absent and those procedures say so.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { activityHandlers } from '../activity/handlers';
import type { App } from '../app';
import { mailHandlers } from '../mail/handlers';
import { localServerHandlers } from '../server/handlers';
import { SETTING_NOTIFY_AFTER_SECONDS, SETTING_OUTBOUND_ALLOWED_HOSTS, SETTING_OUTBOUND_ALLOW_PRIVATE, SETTING_RETRIEVE_TOKENS, SETTING_TRACKING_BASE_URL } from './settings-keys';
import { outboundPolicy } from './outbound';
import type { TransferOptions } from './storage';
import { procedures, type Handlers, type Settings } from '../contract';
import { DEFAULT_NOTIFY_AFTER_SECONDS } from '../contract/transfers';
import { ServiceError, toServiceError } from '../errors';

export interface Platform {
  mode: 'electron' | 'headless';
  /** Asks the user where to save a file; null when they cancel. */
  chooseSavePath?(suggestedName: string): Promise<string | null>;
  /** Base URL of the localhost REST API, when it runs. */
  apiUrl?: string | null;
  version: string;
}

export function createHandlers(app: App, platform: Platform): Handlers {
  const { accounts, storage, transfers } = app;

  return {
    'app.info': async () => ({ version: platform.version, mode: platform.mode, dataDir: app.dataDir, apiUrl: platform.apiUrl ?? null }),
    'connectors.list': async () => accounts.connectors(),
    'accounts.list': async () => accounts.list(),
    'accounts.test': async ({ service, options }) => (await accounts.test(service, options), { ok: true as const }),
    'accounts.connect': async ({ service, options, account }) => accounts.connect({ service, options, account }),
    'accounts.update': async ({ id, account, active }) => accounts.update(id, { account, active }),
    'accounts.delete': async ({ id }) => (await accounts.delete(id), {}),
    'accounts.quota': async ({ id }) => accounts.quota(id),
    'files.list': async ({ account, folder, page, pageSize }) => storage.list(account, folder, page, pageSize),
    'files.listCached': async ({ account, folder }) => storage.listCached(account, folder),
    'files.get': async ({ account, id }) => storage.get(account, id),
    'files.mkdir': async ({ account, parent, name }) => storage.mkdir(account, parent, name, { conflictIfExists: true }),
    'files.rename': async ({ account, id, name }) => storage.move(account, id, { name }),
    'files.move': async ({ account, id, toAccount, parent, name }) =>
      withTransfer(app, 'move', account, id, parent, (options) => storage.move(account, id, { parentId: parent, name, account: toAccount }, options)),
    'files.copy': async ({ account, id, toAccount, parent, name }) =>
      withTransfer(app, 'copy', account, id, parent, (options) => storage.copy(account, id, { parentId: parent, name, account: toAccount }, options)),
    'files.delete': async ({ account, id, permanent, recursive }) => (await storage.delete(account, id, { permanent, recursive }), {}),
    'files.search': async ({ account, q }) => storage.search(account, q),
    'files.uploadPaths': async ({ account, parent, paths, conflict }) => {
      if (platform.mode !== 'electron') throw new ServiceError('not_implemented', 'Uploading by local path is only available in the desktop app; the web UI uploads over HTTP.');
      const files = await Promise.all(
        paths.map(async (path) => {
          const info = await stat(path).catch(() => null);
          if (!info?.isFile()) throw new ServiceError('invalid_parameters', `"${basename(path)}" is not a readable file.`);
          return { path, size: info.size };
        }),
      );
      if (conflict === 'fail') {
        const taken = new Set((await storage.list(account, parent, 1, 100_000)).items.map((r) => r.name));
        const clash = files.find((f) => taken.has(basename(f.path)));
        if (clash) throw new ServiceError('naming_conflict', `"${basename(clash.path)}" already exists in this folder.`);
      }
      // Every file is a durable upload job (big ones in parallel parts): progress, pause, retry
      // and the outcome arrive as transfers.updated events.
      for (const { path } of files) {
        void app.uploads.uploader.upload({ accountId: account, parentId: parent, localPath: path, overwrite: conflict === 'overwrite' }).catch(() => {});
      }
      return { started: files.length };
    },
    'files.uploadPath': async ({ account, parent, path, conflict }) => {
      if (platform.mode !== 'electron') throw new ServiceError('not_implemented', 'Uploading by local path is only available in the desktop app; the web UI uploads over HTTP.');
      const info = await stat(path).catch(() => null);
      if (!info?.isFile()) throw new ServiceError('invalid_parameters', `"${basename(path)}" is not a readable file.`);
      const { transfer, signal } = transfers.start({ direction: 'upload', name: basename(path), account, target: parent, bytesTotal: info.size });
      try {
        const source = createReadStream(path, { signal });
        const metered = source.pipe(transfers.meter(transfer.id));
        source.once('error', (e) => metered.destroy(e));
        const resource = await storage.upload(account, parent, basename(path), metered, { conflict, size: info.size });
        transfers.finish(transfer.id);
        return resource;
      } catch (e) {
        transfers.finish(transfer.id, e);
        throw e;
      }
    },
    'files.download': async ({ account, id, to }) => {
      // Writing to a caller-chosen path is a desktop ability only: headless, anyone holding the
      // UI token could otherwise overwrite any file this process can write.
      if (platform.mode !== 'electron') {
        throw new ServiceError('not_implemented', 'Saving to a local path is only available in the desktop app; the web UI downloads over HTTP.');
      }
      const resource = await storage.get(account, id);
      const target = to ?? (platform.chooseSavePath ? await platform.chooseSavePath(resource.name) : null);
      if (!target) return { path: null };
      const job = await app.downloads.plan({ accountId: account, fileId: id, targetPath: target });
      try {
        return { path: await app.downloads.resume(job) };
      } catch (e) {
        // Paused or cancelled by the user in Transfers: not an error, and not saved (yet).
        if (['paused', 'cancelled'].includes(app.downloads.job(job).state)) return { path: null };
        throw e;
      }
    },
    'uploads.begin': async ({ account, parent, name, size, conflict }) => {
      const m = await app.uploads.multipart.init(account, { parentId: parent, name, size, overwrite: conflict === 'overwrite' });
      return { session: m.id, partSize: m.part_size, parallel: m.parallel_uploads };
    },
    'uploads.parts': async ({ account, session }) => app.uploads.multipart.parts(account, session).map((p) => p.partNumber),
    'uploads.complete': async ({ account, session }) => app.uploads.multipart.complete(account, session),
    'uploads.abort': async ({ account, session }) => (await app.uploads.multipart.abort(account, session), {}),
    'apiKeys.list': async () => app.apiKeys.list(),
    'apiKeys.create': async ({ name }) => app.apiKeys.create(name),
    'apiKeys.revoke': async ({ id }) => app.apiKeys.revoke(id),
    'settings.get': async () => settingsView(app),
    'settings.set': async ({ retrieveTokens, trackingBaseUrl, notifyAfterSeconds, allowPrivateNetwork, allowedHosts }) => {
      if (retrieveTokens !== undefined) app.settings.set(SETTING_RETRIEVE_TOKENS, retrieveTokens);
      if (allowPrivateNetwork !== undefined) app.settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, allowPrivateNetwork);
      if (allowedHosts !== undefined) app.settings.set(SETTING_OUTBOUND_ALLOWED_HOSTS, [...new Set(allowedHosts.filter(Boolean))]);
      if (trackingBaseUrl !== undefined) app.settings.set(SETTING_TRACKING_BASE_URL, trackingBaseUrl);
      if (notifyAfterSeconds !== undefined) app.settings.set(SETTING_NOTIFY_AFTER_SECONDS, notifyAfterSeconds);
      return settingsView(app);
    },
    'transfers.list': async () => transfers.list(),
    'transfers.cancel': async ({ id }) => (await transfers.cancel(id), {}),
    'transfers.pause': async ({ id }) => (transfers.pause(id), {}),
    'transfers.resume': async ({ id }) => (transfers.resume(id), {}),
    'transfers.retry': async ({ id }) => (transfers.retry(id), {}),
    'transfers.clearFinished': async () => (transfers.clearFinished(), {}),
    ...mailHandlers(app.mail, storage),
    ...localServerHandlers(app, platform),
    ...activityHandlers(app.activity),
  };
}

function settingsView(app: App): Settings {
  return {
    retrieveTokens: app.settings.get<boolean>(SETTING_RETRIEVE_TOKENS, false),
    trackingBaseUrl: app.settings.get<string | null>(SETTING_TRACKING_BASE_URL, null),
    notifyAfterSeconds: app.settings.get<number | null>(SETTING_NOTIFY_AFTER_SECONDS, DEFAULT_NOTIFY_AFTER_SECONDS),
    allowPrivateNetwork: outboundPolicy(app.settings).allowPrivate,
    allowedHosts: outboundPolicy(app.settings).allowedHosts,
  };
}

/**
 * Cross-account moves and copies stream bytes and can take long: show them as transfers. The
 * transfer's signal reaches every step (cancel: nothing changed) and the streamed bytes are its
 * progress; a server-side move or copy, which streams nothing, counts as done when it ends.
 */
async function withTransfer<T>(
  app: App,
  direction: 'move' | 'copy',
  account: number,
  id: string,
  target: string,
  run: (options: TransferOptions) => Promise<T>,
): Promise<T> {
  const resource = await app.storage.get(account, id);
  const { transfer, signal } = app.transfers.start({ direction, name: resource.name, account, target, bytesTotal: resource.size });
  let streamed = 0;
  const progress = (bytes: number) => {
    streamed += bytes;
    app.transfers.progress(transfer.id, bytes);
  };
  try {
    const result = await run({ signal, progress });
    if (resource.size !== null && streamed < resource.size) app.transfers.progress(transfer.id, resource.size - streamed);
    app.transfers.finish(transfer.id);
    return result;
  } catch (e) {
    app.transfers.finish(transfer.id, e);
    throw e;
  }
}

/** Parses input with the contract, runs the handler, and shapes the result for any transport. */
export async function dispatch(handlers: Handlers, procedure: string, input: unknown) {
  try {
    // Own keys only: "constructor" or "__proto__" are not procedures.
    const def = Object.hasOwn(procedures, procedure) ? (procedures as Record<string, { input: { parse(v: unknown): unknown } }>)[procedure] : undefined;
    if (!def) throw new ServiceError('not_found', `Unknown procedure "${procedure}".`);
    let parsed: unknown;
    try {
      parsed = def.input.parse(input ?? {});
    } catch (e) {
      const issue = (e as { issues?: { path: PropertyKey[]; message: string }[] }).issues?.[0];
      throw new ServiceError('invalid_parameters', issue ? `${issue.path.join('.') || 'input'}: ${issue.message}` : 'Invalid input.');
    }
    const value = await (handlers as Record<string, (i: unknown) => Promise<unknown>>)[procedure](parsed);
    return { ok: true as const, value };
  } catch (e) {
    const err = toServiceError(e);
    if (err.code === 'internal_error') console.error(`[rpc] ${procedure} failed:`, e);
    return { ok: false as const, error: { code: err.code, message: err.message, status: err.status } };
  }
}
