/**
 * The file actions every entry point shares (toolbar, context menu, keyboard, drag and drop,
 * Cut/Copy/Paste, the folder picker): rename, move, copy and delete, each asking before it
 * writes over a taken name (Keep both / Replace / Skip, "apply to all" for a selection) and
 * telling what it did, with Undo where the account's trash can give an item back.
 */
import { create } from 'zustand';
import type { Resource } from '../../../../src-main/contract';
import { ApiError, type Api } from '../../api/client';
import { count, named, plain } from '../../components/Name';
import { cancelledByUser, toastError, useUi } from '../../stores/ui';

/** An item as the actions need it: where it lives and what it is called. */
export interface ItemRef {
  account: number;
  id: string;
  name: string;
  /** The folder it is in, when known. */
  parent?: string;
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
    toastError(named`Could not rename "${item.name}"`, e);
    return null;
  }
}

/** "“a.txt”" for one item, "3 items" for several. */
const itemsPhrase = (items: ItemRef[]) => (items.length === 1 ? named`“${items[0].name}”` : count(items.length));

/**
 * Moves or copies items into a folder (any account), one call each; asks on taken names.
 * Resolves with the items that arrived. An item moved into the folder it is in is left alone.
 */
export async function transferItems(api: Api, items: ItemRef[], to: Destination, op: 'move' | 'copy'): Promise<ItemRef[]> {
  const remembered: { choice?: ConflictChoice } = {};
  const done: ItemRef[] = [];
  const cancelled: ItemRef[] = [];
  const alreadyThere: ItemRef[] = [];
  for (const [index, item] of items.entries()) {
    if (op === 'move' && item.account === to.account && item.id === to.folder) continue;
    if (op === 'move' && item.account === to.account && item.parent === to.folder) {
      alreadyThere.push(item);
      continue;
    }
    const since = Date.now();
    try {
      const input = { account: item.account, id: item.id, parent: to.folder, toAccount: to.account === item.account ? undefined : to.account };
      const r = await settled(
        (conflict) => api.call(op === 'copy' ? 'files.copy' : 'files.move', { ...input, conflict }),
        { name: item.name, verb: op, folderName: to.folderName, remaining: items.length - index - 1 },
        remembered,
      );
      if (r) done.push(item);
    } catch (e) {
      // Stopped with Cancel in the Transfers panel: what the user asked for, not a failure.
      if (cancelledByUser(item.name, op, since)) cancelled.push(item);
      else toastError(op === 'copy' ? named`Could not copy "${item.name}"` : named`Could not move "${item.name}"`, e);
    }
  }
  const ui = useUi.getState();
  const verb = plain(op === 'copy' ? 'copied' : 'moved');
  if (done.length) {
    ui.toast({ kind: 'info', title: op === 'copy' ? 'Copied' : 'Moved', message: named`${count(done.length)} ${verb} to “${to.folderName}”.` });
  }
  if (cancelled.length) {
    ui.toast({ kind: 'info', title: op === 'copy' ? 'Copy cancelled' : 'Move cancelled', message: named`${itemsPhrase(cancelled)} ${plain(cancelled.length === 1 ? 'was' : 'were')} not ${verb}.` });
  }
  if (alreadyThere.length && !done.length && !cancelled.length) alreadyHere(alreadyThere, to.folderName);
  return done;
}

/** Said, briefly, when items are moved into the folder they are in: nothing happens. */
function alreadyHere(items: ItemRef[], folderName: string): void {
  useUi.getState().toast({ kind: 'info', title: 'Nothing to move', message: named`${itemsPhrase(items)} ${plain(items.length === 1 ? 'is' : 'are')} already in “${folderName}”.` });
}

/** Deletes items; what went to a trash that can give it back is offered as one Undo. */
export async function deleteItems(api: Api, items: ItemRef[]): Promise<void> {
  const undo: { account: number; token: string }[] = [];
  const deleted: ItemRef[] = [];
  for (const item of items) {
    try {
      const r = await api.call('files.delete', { account: item.account, id: item.id, recursive: true });
      deleted.push(item);
      if (r.restore) undo.push({ account: item.account, token: r.restore });
    } catch (e) {
      toastError(named`Could not delete "${item.name}"`, e);
    }
  }
  useUi.getState().setSelection([]);
  if (!deleted.length) return;
  // Only what was deleted is named, and only it comes back with Undo.
  const what = itemsPhrase(deleted);
  useUi.getState().toast({
    kind: 'info',
    title: 'Deleted',
    message: undo.length === deleted.length ? named`${what} moved to the trash.` : undo.length ? named`${what} deleted; Undo puts ${undo.length} back.` : named`${what} deleted permanently.`,
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
  /** The folder they were cut or copied in. */
  from: { account: number; folder: string };
}

export const useClipboard = create<{ clip: Clipboard | null; set(c: Clipboard | null): void }>((set) => ({
  clip: null,
  set: (clip) => set({ clip }),
}));

export async function paste(api: Api, to: Destination): Promise<void> {
  const clip = useClipboard.getState().clip;
  if (!clip) return;
  if (clip.op === 'move' && clip.from.account === to.account && clip.from.folder === to.folder) {
    // Cut and pasted where they are: nothing moves, and the cut stays for another folder.
    alreadyHere(clip.items, to.folderName);
    return;
  }
  const arrived = await transferItems(api, clip.items, to, clip.op);
  // A cut is used once it moved; what did not move (failed, skipped, cancelled) stays cut.
  if (clip.op !== 'move' || useClipboard.getState().clip !== clip) return;
  const moved = new Set(arrived.map((i) => `${i.account}:${i.id}`));
  const left = clip.items.filter((i) => !moved.has(`${i.account}:${i.id}`));
  useClipboard.getState().set(left.length ? { ...clip, items: left } : null);
}

export const refOf = (r: Resource): ItemRef => ({ account: r.account, id: r.id, name: r.name, parent: r.parent?.id });
