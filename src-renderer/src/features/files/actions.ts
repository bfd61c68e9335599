/**
 * The file actions every entry point shares (toolbar, context menu, keyboard, drag and drop,
 * Cut/Copy/Paste, the folder picker): rename, move, copy and delete, each asking before it
 * writes over a taken name (Keep both / Replace / Skip, "apply to all" for a selection) and
 * telling what it did, with Undo where the account's trash can give an item back.
 */
import { create } from 'zustand';
import type { Resource } from '../../../../src-main/contract';
import { ApiError, type Api } from '../../api/client';
import { toastError, useUi } from '../../stores/ui';

/** An item as the actions need it: where it lives and what it is called. */
export interface ItemRef {
  account: number;
  id: string;
  name: string;
}

export interface Destination {
  account: number;
  folder: string;
  folderName: string;
}

export type ConflictChoice = 'rename' | 'overwrite' | 'skip';

/** A taken name the user is being asked about (features/files/ConflictDialog.tsx shows it). */
export interface ItemConflict {
  name: string;
  verb: 'rename' | 'move' | 'copy';
  folderName: string;
  /** Items after this one in the same action: "apply to all" is offered when there are any. */
  remaining: number;
  answer(choice: ConflictChoice, all: boolean): void;
}

export const useItemConflict = create<{ pending: ItemConflict | null; set(p: ItemConflict | null): void }>((set) => ({
  pending: null,
  set: (pending) => set({ pending }),
}));

function ask(conflict: Omit<ItemConflict, 'answer'>): Promise<{ choice: ConflictChoice; all: boolean }> {
  return new Promise((resolve) =>
    useItemConflict.getState().set({
      ...conflict,
      answer: (choice, all) => {
        useItemConflict.getState().set(null);
        resolve({ choice, all });
      },
    }),
  );
}

const isConflict = (e: unknown) => e instanceof ApiError && e.code === 'naming_conflict';

/**
 * Runs `call` without writing over anything first; on a taken name asks (or uses the answer
 * the user gave for all), then runs it again as chosen. Resolves with the result, or null
 * when skipped.
 */
async function settled<T>(
  call: (conflict: 'fail' | 'rename' | 'overwrite') => Promise<T>,
  question: Omit<ItemConflict, 'answer'>,
  remembered: { choice?: ConflictChoice },
): Promise<T | null> {
  try {
    return await call(remembered.choice && remembered.choice !== 'skip' ? remembered.choice : 'fail');
  } catch (e) {
    if (!isConflict(e) || remembered.choice === 'overwrite') throw e;
  }
  const { choice, all } = remembered.choice ? { choice: remembered.choice, all: true } : await ask(question);
  if (all) remembered.choice = choice;
  if (choice === 'skip') return null;
  return call(choice);
}

export async function renameItem(api: Api, item: ItemRef, name: string, folderName: string): Promise<Resource | null> {
  try {
    return await settled((conflict) => api.call('files.rename', { account: item.account, id: item.id, name, conflict }), { name, verb: 'rename', folderName, remaining: 0 }, {});
  } catch (e) {
    toastError(`Could not rename "${item.name}"`, e);
    return null;
  }
}

/** Moves or copies items into a folder (any account), one call each; asks on taken names. */
export async function transferItems(api: Api, items: ItemRef[], to: Destination, op: 'move' | 'copy'): Promise<number> {
  const remembered: { choice?: ConflictChoice } = {};
  let done = 0;
  for (const [index, item] of items.entries()) {
    if (op === 'move' && item.account === to.account && item.id === to.folder) continue;
    try {
      const input = { account: item.account, id: item.id, parent: to.folder, toAccount: to.account === item.account ? undefined : to.account };
      const r = await settled(
        (conflict) => api.call(op === 'copy' ? 'files.copy' : 'files.move', { ...input, conflict }),
        { name: item.name, verb: op, folderName: to.folderName, remaining: items.length - index - 1 },
        remembered,
      );
      if (r) done++;
    } catch (e) {
      toastError(`Could not ${op} "${item.name}"`, e);
    }
  }
  if (done) {
    useUi.getState().toast({ kind: 'info', title: op === 'copy' ? 'Copied' : 'Moved', message: `${done} item${done === 1 ? '' : 's'} ${op === 'copy' ? 'copied' : 'moved'} to “${to.folderName}”.` });
  }
  return done;
}

/** Deletes items; what went to a trash that can give it back is offered as one Undo. */
export async function deleteItems(api: Api, items: ItemRef[]): Promise<void> {
  const undo: { account: number; token: string }[] = [];
  let deleted = 0;
  for (const item of items) {
    try {
      const r = await api.call('files.delete', { account: item.account, id: item.id, recursive: true });
      deleted++;
      if (r.restore) undo.push({ account: item.account, token: r.restore });
    } catch (e) {
      toastError(`Could not delete "${item.name}"`, e);
    }
  }
  useUi.getState().setSelection([]);
  if (!deleted) return;
  const what = deleted === 1 ? `“${items[0].name}”` : `${deleted} items`;
  useUi.getState().toast({
    kind: 'info',
    title: 'Deleted',
    message: undo.length ? `${what} moved to the trash.` : `${what} deleted permanently.`,
    action: undo.length
      ? {
          label: 'Undo',
          run: async () => {
            for (const u of undo) {
              try {
                await api.call('files.restore', u);
              } catch (e) {
                toastError('Could not restore', e);
              }
            }
          },
        }
      : undefined,
  });
}

/** Cut or copied items waiting for Paste (Ctrl+X / Ctrl+C, then Ctrl+V in any folder of any account). */
export interface Clipboard {
  op: 'move' | 'copy';
  items: ItemRef[];
}

export const useClipboard = create<{ clip: Clipboard | null; set(c: Clipboard | null): void }>((set) => ({
  clip: null,
  set: (clip) => set({ clip }),
}));

export async function paste(api: Api, to: Destination): Promise<void> {
  const clip = useClipboard.getState().clip;
  if (!clip) return;
  // A cut is used once; a copy can be pasted again.
  if (clip.op === 'move') useClipboard.getState().set(null);
  await transferItems(api, clip.items, to, clip.op);
}

export const refOf = (r: Resource): ItemRef => ({ account: r.account, id: r.id, name: r.name });
