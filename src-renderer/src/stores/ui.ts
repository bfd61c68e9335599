/**
 * UI state only (server data lives in React Query): where the user is, what is selected, how
 * the list is sorted, which dialog is open, toasts, and the web uploads in flight (those run in
 * this page, so the page owns their progress).
 */
import { create } from 'zustand';

export type SortKey = 'name' | 'size' | 'modified';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  title: string;
  message: string;
}

export type LocalAction = 'pause' | 'resume' | 'cancel' | 'retry';

/** A web upload this page runs (features/transfers/web-upload.ts). */
export interface LocalUpload {
  id: string;
  name: string;
  account: number;
  target: string;
  bytesDone: number;
  bytesTotal: number;
  state: 'running' | 'paused' | 'done' | 'failed' | 'cancelled';
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  /** Bytes per second over the last few seconds while running. */
  speed: number;
  actions: LocalAction[];
}

interface UiState {
  /** The account's own view (files or mailbox), the activity dashboard, or the sync pairs. */
  view: 'account' | 'activity' | 'sync';
  account: number | null;
  folder: string;
  selected: ReadonlySet<string>;
  /** Row index the keyboard is on, and where a Shift-range starts. */
  focusIndex: number;
  anchorIndex: number;
  renaming: string | null;
  sort: { key: SortKey; dir: 'asc' | 'desc' };
  toasts: Toast[];
  transfersOpen: boolean;
  uploads: LocalUpload[];

  open(account: number, folder?: string): void;
  setView(view: 'account' | 'activity' | 'sync'): void;
  setSelection(ids: Iterable<string>, focusIndex?: number, anchorIndex?: number): void;
  setFocus(index: number): void;
  setRenaming(id: string | null): void;
  setSort(key: SortKey): void;
  toast(t: Omit<Toast, 'id'>): void;
  dismiss(id: number): void;
  setTransfersOpen(open: boolean): void;
  putUpload(u: LocalUpload): void;
  patchUpload(id: string, patch: Partial<LocalUpload>): void;
  clearFinishedUploads(): void;
}

let toastSeq = 1;

export const useUi = create<UiState>((set) => ({
  view: 'account',
  account: null,
  folder: 'root',
  selected: new Set(),
  focusIndex: 0,
  anchorIndex: 0,
  renaming: null,
  sort: { key: 'name', dir: 'asc' },
  toasts: [],
  transfersOpen: false,
  uploads: [],

  setView: (view) => set({ view }),
  open: (account, folder = 'root') => set({ view: 'account', account, folder, selected: new Set(), focusIndex: 0, anchorIndex: 0, renaming: null }),
  setSelection: (ids, focusIndex, anchorIndex) =>
    set((s) => ({ selected: new Set(ids), focusIndex: focusIndex ?? s.focusIndex, anchorIndex: anchorIndex ?? s.anchorIndex })),
  setFocus: (focusIndex) => set({ focusIndex }),
  setRenaming: (renaming) => set({ renaming }),
  setSort: (key) => set((s) => ({ sort: { key, dir: s.sort.key === key && s.sort.dir === 'asc' ? 'desc' : 'asc' } })),
  toast: (t) => {
    const id = toastSeq++;
    set((s) => ({ toasts: [...s.toasts.slice(-4), { ...t, id }] }));
    setTimeout(() => useUi.getState().dismiss(id), t.kind === 'error' ? 8000 : 4000);
  },
  dismiss: (id) => set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })),
  setTransfersOpen: (transfersOpen) => set({ transfersOpen }),
  putUpload: (u) => set((s) => ({ uploads: [...s.uploads, u] })),
  patchUpload: (id, patch) => set((s) => ({ uploads: s.uploads.map((u) => (u.id === id ? { ...u, ...patch } : u)) })),
  clearFinishedUploads: () => set((s) => ({ uploads: s.uploads.filter((u) => u.finishedAt === null) })),
}));

export function toastError(title: string, e: unknown): void {
  useUi.getState().toast({ kind: 'error', title, message: e instanceof Error ? e.message : String(e) });
}
