/**
 * The `files.*`, `uploads.*` and `transfers.*` procedures over storage, the uploads area, the
 * downloader and the transfers list.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Handlers, Resource } from '../contract';
import type { Downloader } from '../downloads/downloader';
import { downloadInto, localName } from '../downloads/into-folder';
import { ServiceError } from '../errors';
import type { ConflictMode, StorageService, TransferOptions } from '../services/storage';
import type { FolderWatch } from '../services/folder-watch';
import { uploadLocalFolder } from '../services/folder-upload';
import type { TransfersService } from '../services/transfers';
import type { Uploads } from '../uploads';
import type { Platform } from './platform';

type FilesProcedure = Extract<keyof Handlers, `files.${string}` | `uploads.${string}` | `transfers.${string}`>;

export interface FilesDeps {
  storage: StorageService;
  transfers: TransfersService;
  uploads: Pick<Uploads, 'multipart' | 'uploader'>;
  downloads: Downloader;
  folderWatch: FolderWatch;
}

export function filesHandlers(deps: FilesDeps, platform: Platform): Pick<Handlers, Exclude<FilesProcedure, 'files.downloadTicket' | 'files.zipTicket'>> {
  const { storage, transfers, uploads, downloads } = deps;
  return {
    'files.list': async ({ account, folder, page, pageSize }) => storage.list(account, folder, page, pageSize),
    'files.listCached': async ({ account, folder }) => storage.listCached(account, folder),
    'files.get': async ({ account, id }) => storage.get(account, id),
    'files.mkdir': async ({ account, parent, name }) => storage.mkdir(account, parent, name, { conflictIfExists: true }),
    'files.rename': async ({ account, id, name, conflict }) => storage.move(account, id, { name, conflict }),
    'files.move': async ({ account, id, toAccount, parent, name, conflict }) =>
      withTransfer(deps, 'move', { account, id, toAccount, parent, name, conflict }, (options) => storage.move(account, id, { parentId: parent, name, account: toAccount, conflict }, options)),
    'files.copy': async ({ account, id, toAccount, parent, name, conflict }) =>
      withTransfer(deps, 'copy', { account, id, toAccount, parent, name, conflict }, (options) => storage.copy(account, id, { parentId: parent, name, account: toAccount, conflict }, options)),
    'files.delete': async ({ account, id, permanent, recursive }) => storage.delete(account, id, { permanent, recursive }),
    'files.deleteInfo': async ({ account }) => storage.deleteInfo(account),
    'files.restore': async ({ account, token }) => storage.restore(account, token),
    'files.search': async ({ account, q }) => storage.search(account, q),
    'files.watch': async ({ account, folder }) => {
      const loc = await storage.locate(account, folder);
      if (!loc.trash) await deps.folderWatch.watch(account, loc.path);
      return {};
    },
    'files.uploadPaths': async ({ account, parent, paths, conflict }) => {
      if (platform.mode !== 'electron') throw new ServiceError('not_implemented', 'Uploading by local path is only available in the desktop app; the web UI uploads over HTTP.');
      const entries = await Promise.all(
        paths.map(async (path) => {
          const info = await stat(path).catch(() => null);
          if (!info?.isFile() && !info?.isDirectory()) throw new ServiceError('invalid_parameters', `"${basename(path)}" is not a readable file.`);
          return { path, size: info.size, folder: info.isDirectory() };
        }),
      );
      const files = entries.filter((e) => !e.folder);
      if (conflict === 'fail') {
        const taken = new Set((await storage.list(account, parent, 1, 100_000)).items.map((r) => r.name));
        const clash = files.find((f) => taken.has(basename(f.path)));
        if (clash) throw new ServiceError('naming_conflict', `"${basename(clash.path)}" already exists in this folder.`);
      }
      // Every file is a durable upload job (big ones in parallel parts): progress, pause, retry
      // and the outcome arrive as transfers.updated events.
      for (const { path } of files) {
        void uploads.uploader.upload({ accountId: account, parentId: parent, localPath: path, overwrite: conflict === 'overwrite' }).catch(() => {});
      }
      // A dropped folder goes up with everything in it, as one transfer (services/folder-upload.ts).
      for (const { path } of entries.filter((e) => e.folder)) void uploadLocalFolder({ storage, transfers }, account, parent, path).catch(() => {});
      return { started: entries.length };
    },
    'files.uploadPath': async ({ account, parent, path, conflict }) => {
      if (platform.mode !== 'electron') throw new ServiceError('not_implemented', 'Uploading by local path is only available in the desktop app; the web UI uploads over HTTP.');
      const info = await stat(path).catch(() => null);
      if (!info?.isFile()) throw new ServiceError('invalid_parameters', `"${basename(path)}" is not a readable file.`);
      const { transfer, signal } = transfers.start({ direction: 'upload', name: basename(path), account, target: parent, bytesTotal: info.size });
      try {
        // Into a local folder the file system copies; elsewhere the file is streamed.
        let resource = await storage.uploadFile(account, parent, basename(path), path, { conflict, signal });
        if (resource) transfers.setDone(transfer.id, resource.size ?? info.size);
        else {
          const source = createReadStream(path, { signal });
          resource = await transfers.sendMetered(transfer.id, source, (body) => storage.upload(account, parent, basename(path), body, { conflict, size: info.size, signal }));
        }
        transfers.finish(transfer.id, undefined, resource.name);
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
      const target = to ?? (platform.chooseSavePath ? await platform.chooseSavePath(localName(resource.name)) : null);
      if (!target) return { path: null };
      const job = await downloads.plan({ accountId: account, fileId: id, targetPath: target });
      try {
        return { path: await downloads.resume(job) };
      } catch (e) {
        // Paused or cancelled by the user in Transfers: not an error, and not saved (yet).
        if (['paused', 'cancelled'].includes(downloads.job(job).state)) return { path: null };
        throw e;
      }
    },
    'files.downloadInto': async ({ account, ids, to }) => {
      // As files.download: writing to a caller-chosen path is a desktop ability only.
      if (platform.mode !== 'electron') {
        throw new ServiceError('not_implemented', 'Saving into a local folder is only available in the desktop app; the web UI downloads a zip over HTTP.');
      }
      const dir = to ?? (platform.chooseFolder ? await platform.chooseFolder() : null);
      if (!dir) return { path: null, started: 0 };
      const { started } = await downloadInto({ storage, downloads }, account, ids, dir);
      return { path: dir, started };
    },
    'uploads.begin': async ({ account, parent, name, size, conflict }) => {
      const m = await uploads.multipart.init(account, { parentId: parent, name, size, overwrite: conflict === 'overwrite' });
      return { session: m.id, partSize: m.part_size, parallel: m.parallel_uploads, staged: uploads.multipart.staged(account, m.id) };
    },
    'uploads.parts': async ({ account, session }) => uploads.multipart.parts(account, session).map((p) => p.partNumber),
    'uploads.complete': async ({ account, session, transfer }) => uploads.multipart.complete(account, session, { meter: transfer ? transfers.upstreamMeter(transfer) : undefined }),
    'uploads.abort': async ({ account, session }) => (await uploads.multipart.abort(account, session), {}),
    'transfers.list': async () => transfers.list(),
    'transfers.cancel': async ({ id }) => (await transfers.cancel(id), {}),
    'transfers.pause': async ({ id }) => (transfers.pause(id), {}),
    'transfers.resume': async ({ id }) => (transfers.resume(id), {}),
    'transfers.retry': async ({ id }) => (transfers.retry(id), {}),
    'transfers.clearFinished': async () => (transfers.clearFinished(), {}),
  };
}

/**
 * Cross-account moves and copies stream bytes and can take long: show them as transfers. The
 * transfer's signal reaches every step (cancel: nothing changed) and the streamed bytes are its
 * progress; a server-side move or copy, which streams nothing, counts as done when it ends.
 */
async function withTransfer(
  { storage, transfers }: Pick<FilesDeps, 'storage' | 'transfers'>,
  direction: 'move' | 'copy',
  { account, id, toAccount, parent: target, name, conflict }: { account: number; id: string; toAccount?: number; parent: string; name?: string; conflict?: ConflictMode },
  run: (options: TransferOptions) => Promise<Resource>,
): Promise<Resource> {
  const resource = await storage.get(account, id);
  // "Ask on a taken name" calls with `fail` first: a taken name is a question, not a failed
  // transfer, so it is answered before a row appears (the call itself still refuses atomically).
  if (conflict === 'fail' && (await storage.nameTaken(toAccount ?? account, target, name ?? resource.name))) {
    throw new ServiceError('naming_conflict', `"${name ?? resource.name}" already exists in this folder.`);
  }
  const { transfer, signal } = transfers.start({ direction, name: resource.name, account, target, bytesTotal: resource.size });
  let streamed = 0;
  const progress = (bytes: number) => {
    streamed += bytes;
    transfers.progress(transfer.id, bytes);
  };
  try {
    const result = await run({ signal, progress });
    if (resource.size !== null && streamed < resource.size) transfers.progress(transfer.id, resource.size - streamed);
    transfers.finish(transfer.id, undefined, result.name);
    return result;
  } catch (e) {
    transfers.finish(transfer.id, e);
    throw e;
  }
}

