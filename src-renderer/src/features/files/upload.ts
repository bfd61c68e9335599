/**
 * Uploads from the OS (drag and drop or the file picker). Before anything is sent, the names
 * are checked against the destination folder; if some exist, the user chooses "keep both"
 * (conflict=rename → "name (1).ext") or "overwrite".
 *
 * Web mode runs the uploads in this page (features/transfers/web-upload.ts: big files in
 * parallel, pausable parts).
 * Electron mode hands the files to the main process (`files.uploadPaths`): the preload turns
 * each File into its local path, and progress comes back as `transfers.updated` events.
 */
import { create } from 'zustand';
import type { InfiniteData, QueryClient } from '@tanstack/react-query';
import type { FolderPage } from '../../../../src-main/contract';
import type { Api } from '../../api/client';
import { keys } from '../../api/hooks';
import { toastError, useUi } from '../../stores/ui';
import { uploadFolder } from '../transfers/folder-upload';
import { askToNotify } from '../transfers/notices';
import { startWebUpload } from '../transfers/web-upload';

export interface UploadTarget {
  account: number;
  folder: string;
  folderName: string;
}

interface PendingConflict {
  files: File[];
  target: UploadTarget;
  conflicting: string[];
}

export const useConflicts = create<{ pending: PendingConflict | null; set(p: PendingConflict | null): void }>((set) => ({
  pending: null,
  set: (pending) => set({ pending }),
}));

async function existingNames(api: Api, qc: QueryClient, target: UploadTarget): Promise<Set<string>> {
  const cached = qc.getQueryData<InfiniteData<FolderPage>>(keys.folder(target.account, target.folder));
  const last = cached?.pages.at(-1);
  if (cached && last && !last.hasNext) return new Set(cached.pages.flatMap((p) => p.items.map((i) => i.name)));
  const names = new Set<string>();
  for (let page = 1; ; page++) {
    const r = await api.call('files.list', { account: target.account, folder: target.folder, page, pageSize: 100000 });
    r.items.forEach((i) => names.add(i.name));
    if (!r.hasNext) return names;
  }
}

/** Entry point for drops and the picker: checks names, prompts on conflicts, then uploads. */
export async function requestUpload(api: Api, qc: QueryClient, files: File[], target: UploadTarget): Promise<void> {
  if (files.length === 0) return;
  let names: Set<string>;
  try {
    names = await existingNames(api, qc, target);
  } catch (e) {
    toastError('Upload failed', e);
    return;
  }
  const conflicting = files.filter((f) => names.has(f.name)).map((f) => f.name);
  if (conflicting.length) useConflicts.getState().set({ files, target, conflicting });
  else await runUpload(api, files, target, 'rename');
}

/** What an OS drop carries: plain files, and folders (uploaded recursively, one group each). */
export interface Dropped {
  files: File[];
  folders: FileSystemDirectoryEntry[];
  /** The folders as the File objects the drop carries (the desktop app resolves their paths). */
  folderFiles: File[];
}

/**
 * Reads a drop. Must run inside the drop event: the DataTransfer is emptied once it returns. A
 * dropped folder also arrives as an empty File of its name, which is not a file to upload.
 */
export function droppedItems(dt: DataTransfer): Dropped {
  const folders: FileSystemDirectoryEntry[] = [];
  for (const item of Array.from(dt.items ?? [])) {
    const entry = item.kind === 'file' ? item.webkitGetAsEntry?.() : null;
    if (entry?.isDirectory) folders.push(entry as FileSystemDirectoryEntry);
  }
  const names = new Set(folders.map((f) => f.name));
  const all = Array.from(dt.files ?? []);
  return { files: all.filter((f) => !names.has(f.name)), folders, folderFiles: all.filter((f) => names.has(f.name)) };
}

/** A drop onto a folder: its files as requestUpload does, each folder as one upload group. */
export async function requestDrop(api: Api, qc: QueryClient, dropped: Dropped, target: UploadTarget): Promise<void> {
  if (dropped.folders.length) {
    if (api.mode === 'ipc') {
      // The main process reads the folders from the disk (each one transfer); the preload turns
      // each File into its local path.
      try {
        await api.call('files.uploadPaths', { account: target.account, parent: target.folder, paths: dropped.folderFiles as unknown as string[], conflict: 'rename' });
        useUi.getState().setTransfersOpen(true);
      } catch (e) {
        toastError('Upload failed', e);
      }
    } else {
      useUi.getState().setTransfersOpen(true);
      void askToNotify();
      for (const folder of dropped.folders) void uploadFolder(api, folder, { account: target.account, folder: target.folder });
    }
  }
  await requestUpload(api, qc, dropped.files, target);
}

const CONCURRENCY = 3;

export async function runUpload(api: Api, files: File[], target: UploadTarget, conflict: 'rename' | 'overwrite'): Promise<void> {
  const ui = useUi.getState();
  if (api.mode === 'ipc') {
    try {
      // The preload replaces each File by its local path (webUtils.getPathForFile).
      await api.call('files.uploadPaths', { account: target.account, parent: target.folder, paths: files as unknown as string[], conflict });
      ui.setTransfersOpen(true);
    } catch (e) {
      toastError('Upload failed', e);
    }
    return;
  }
  ui.setTransfersOpen(true);
  void askToNotify();
  // Files wait their turn: CONCURRENCY at a time (a paused one gives its turn up).
  const queue = [...files];
  const worker = async () => {
    for (let file = queue.shift(); file; file = queue.shift()) await startWebUpload(api, file, { account: target.account, folder: target.folder }, conflict);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
}
