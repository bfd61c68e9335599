/**
 * Moving and copying by drag and drop, inside the app: rows carry their ids in a private MIME
 * type; folder rows, breadcrumbs and sidebar accounts accept them. Alt or Ctrl (Option on macOS)
 * copies, otherwise the items move. OS file drags carry 'Files' and mean upload.
 */
import type { Api } from '../../api/client';
import { transferItems } from './actions';

export const ITEMS_MIME = 'application/x-tributary-items';

export interface DraggedItems {
  account: number;
  from: string;
  ids: string[];
  /** The items' names, in the order of `ids` (what a conflict question shows). */
  names?: string[];
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

/** Moves or copies dragged items into a folder, asking on taken names (features/files/actions.ts). */
export async function dropItems(api: Api, items: DraggedItems, to: { account: number; folder: string; folderName?: string }, copy: boolean): Promise<void> {
  if (!copy && items.account === to.account && items.ids.includes(to.folder)) return;
  if (!copy && items.account === to.account && items.from === to.folder) return;
  const refs = items.ids.map((id, i) => ({ account: items.account, id, name: items.names?.[i] ?? 'This item' }));
  await transferItems(api, refs, { account: to.account, folder: to.folder, folderName: to.folderName ?? 'the folder' }, copy ? 'copy' : 'move');
}
