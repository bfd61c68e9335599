/**
 * Moving and copying by drag and drop, inside the app: rows carry their ids in a private MIME
 * type; folder rows, breadcrumbs and sidebar accounts accept them. Alt or Ctrl (Option on macOS)
 * copies, otherwise the items move. OS file drags carry 'Files' and mean upload.
 */
import type { Api } from '../../api/client';
import { toastError, useUi } from '../../stores/ui';

export const ITEMS_MIME = 'application/x-tributary-items';

export interface DraggedItems {
  account: number;
  from: string;
  ids: string[];
}

export function isCopyGesture(e: { altKey: boolean; ctrlKey: boolean }): boolean {
  return e.altKey || e.ctrlKey;
}

export function hasItems(dt: DataTransfer | null): boolean {
  return !!dt && Array.from(dt.types).includes(ITEMS_MIME);
}

export function hasFiles(dt: DataTransfer | null): boolean {
  return !!dt && Array.from(dt.types).includes('Files');
}

export function readItems(dt: DataTransfer): DraggedItems | null {
  try {
    const v = JSON.parse(dt.getData(ITEMS_MIME)) as DraggedItems;
    return Array.isArray(v.ids) && typeof v.account === 'number' ? v : null;
  } catch {
    return null;
  }
}

/** Moves or copies dragged items into a folder, one call each; failures become toasts. */
export async function dropItems(api: Api, items: DraggedItems, to: { account: number; folder: string }, copy: boolean): Promise<void> {
  if (!copy && items.account === to.account && items.ids.includes(to.folder)) return;
  if (!copy && items.account === to.account && items.from === to.folder) return;
  let done = 0;
  for (const id of items.ids) {
    try {
      const input = { account: items.account, id, parent: to.folder, toAccount: to.account === items.account ? undefined : to.account };
      await api.call(copy ? 'files.copy' : 'files.move', input);
      done++;
    } catch (e) {
      toastError(copy ? 'Copy failed' : 'Move failed', e);
    }
  }
  if (done) useUi.getState().toast({ kind: 'info', title: copy ? 'Copied' : 'Moved', message: `${done} item${done === 1 ? '' : 's'} ${copy ? 'copied' : 'moved'}.` });
}
