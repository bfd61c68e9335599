/**
 * UI state only (server data lives in React Query): where the user is, what is selected, how
 * the list is sorted, which dialog is open, toasts, and the web uploads in flight (those run in
 * this page, so the page owns their progress).
 */
import type { ReactNode } from 'react';
import { create } from 'zustand';
import { nameText } from '../components/Name';

export type SortKey = 'name' | 'size' | 'modified';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  /** Text, or text with names in it (components/Name.tsx: named`…`). */
  title: ReactNode;
  message: ReactNode;
  /** One button beside the message (Undo); running it dismisses the toast. */
  action?: { label: string; run(): void | Promise<void> };
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
  /** The name the file was saved under, when not its own (a conflict kept both). */
  savedAs: string | null;
}

interface UiState {
  /** The account's own view (files or mailbox), the activity dashboard, or the sync pairs. */
  view: 'account' | 'activity' | 'sync';
  account: number | null;
  /** The open folder: a storage folder id, or a mail folder id in a mail account. */
  folder: string;
  /** The open message of a mail account. */
  message: string | null;
  selected: ReadonlySet<string>;
  /** Row index the keyboard is on, and where a Shift-range starts. */
  focusIndex: number;
  anchorIndex: number;
  renaming: string | null;
  sort: { key: SortKey; dir: 'asc' | 'desc' };
  toasts: Toast[];
  transfersOpen: boolean;
  uploads: LocalUpload[];
  /** Transfers the user asked to cancel, by id: shown as "Cancelling…" until they end. */
  cancelling: Readonly<Record<string, { name: string; direction: string; at: number }>>;

  open(account: number, folder?: string, message?: string | null): void;
  /** The mailbox's folder and message, as the mailbox shows them (kept in the address). */
  showMail(folder: string, message: string | null): void;
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
  requestCancel(id: string, name: string, direction: string): void;
}

let toastSeq = 1;

export const useUi = create<UiState>((set) => ({
  view: 'account',
  account: null,
  folder: 'root',
  message: null,
  selected: new Set(),
  focusIndex: 0,
  anchorIndex: 0,
  renaming: null,
  sort: { key: 'name', dir: 'asc' },
  toasts: [],
  transfersOpen: false,
  uploads: [],
  cancelling: {},

  setView: (view) => {
    set({ view });
    remember();
  },
  open: (account, folder = 'root', message = null) => {
    set({ view: 'account', account, folder, message, selected: new Set(), focusIndex: 0, anchorIndex: 0, renaming: null });
    remember();
  },
  showMail: (folder, message) => {
    // The inbox a mailbox opens on by itself is the same place as the account: no new entry.
    const first = useUi.getState().folder === 'root';
    set({ folder, message });
    remember(first);
  },
  setSelection: (ids, focusIndex, anchorIndex) =>
    set((s) => ({ selected: new Set(ids), focusIndex: focusIndex ?? s.focusIndex, anchorIndex: anchorIndex ?? s.anchorIndex })),
  setFocus: (focusIndex) => set({ focusIndex }),
  setRenaming: (renaming) => set({ renaming }),
  setSort: (key) => set((s) => ({ sort: { key, dir: s.sort.key === key && s.sort.dir === 'asc' ? 'desc' : 'asc' } })),
  toast: (t) => {
    const id = toastSeq++;
    set((s) => ({ toasts: [...s.toasts.slice(-4), { ...t, id }] }));
    // A toast with an action stays long enough to be reached from the keyboard.
    setTimeout(() => useUi.getState().dismiss(id), t.kind === 'error' || t.action ? 8000 : 4000);
  },
  dismiss: (id) => set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })),
  setTransfersOpen: (transfersOpen) => set({ transfersOpen }),
  putUpload: (u) => set((s) => ({ uploads: [...s.uploads, u] })),
  patchUpload: (id, patch) => set((s) => ({ uploads: s.uploads.map((u) => (u.id === id ? { ...u, ...patch } : u)) })),
  clearFinishedUploads: () => set((s) => ({ uploads: s.uploads.filter((u) => u.finishedAt === null) })),
  requestCancel: (id, name, direction) => set((s) => ({ cancelling: { ...s.cancelling, [id]: { name, direction, at: Date.now() } } })),
}));

/** Whether the user cancelled a transfer of this name and kind after `since` (a copy or move that then failed). */
export function cancelledByUser(name: string, direction: string, since: number): boolean {
  return Object.values(useUi.getState().cancelling).some((c) => c.name === name && c.direction === direction && c.at >= since);
}

export function toastError(title: ReactNode, e: unknown): void {
  // A service's message may quote a name: its hidden characters are shown, not obeyed.
  useUi.getState().toast({ kind: 'error', title, message: nameText(e instanceof Error ? e.message : String(e)) });
}

// ---- navigation: where the user is lives in the address (#/account/3/folder/<id>), so Back,
// Forward, Alt+←/→, a reload and a pasted link all land on the same place.

/** A place; `item` (only in a copied link) is selected once the folder is open. */
type Place = { view: 'activity' | 'sync' } | { view: 'account'; account: number; folder: string; item?: string; message?: string | null };

export function placeHash(p: Place): string {
  if (p.view !== 'account') return `#/${p.view}`;
  const folder = p.folder === 'root' && !p.item ? '' : `/folder/${encodeURIComponent(p.folder)}`;
  const message = p.message ? `/message/${encodeURIComponent(p.message)}` : '';
  return `#/account/${p.account}${folder}${p.item ? `/item/${encodeURIComponent(p.item)}` : ''}${message}`;
}

export function parsePlace(hash: string): Place | null {
  if (hash === '#/activity' || hash === '#/sync') return { view: hash === '#/sync' ? 'sync' : 'activity' };
  const m = /^#\/account\/(\d+)(?:\/folder\/([^/]+))?(?:\/item\/([^/]+))?(?:\/message\/([^/]+))?$/.exec(hash);
  if (!m) return null;
  const part = (i: number) => (m[i] ? decodeURIComponent(m[i]) : undefined);
  return { view: 'account', account: Number(m[1]), folder: part(2) ?? 'root', item: part(3), message: part(4) ?? null };
}

/** The address of an item inside the app (Copy link): its folder, with the item selected. */
export function itemLink(account: number, folder: string, item: string): string {
  return `${window.location.origin}${window.location.pathname}${placeHash({ view: 'account', account, folder, item })}`;
}

function currentHash(): string | null {
  const s = useUi.getState();
  if (s.view !== 'account') return placeHash({ view: s.view });
  return s.account === null ? null : placeHash({ view: 'account', account: s.account, folder: s.folder, message: s.message });
}

/**
 * Where this tab is in its own history: entries carry their index, so Back and Forward know
 * whether there is somewhere to go (kept in sessionStorage: a reload keeps it too).
 */
const NAV_KEY = 'tributary.nav';
export const useNav = create<{ index: number; last: number }>(() => {
  try {
    const v = JSON.parse(sessionStorage.getItem(NAV_KEY) ?? '') as { index?: unknown; last?: unknown };
    if (Number.isInteger(v.index) && Number.isInteger(v.last)) return { index: v.index as number, last: v.last as number };
  } catch {
    // Nothing kept (a new tab): start at the first entry.
  }
  return { index: 0, last: 0 };
});
useNav.subscribe((n) => sessionStorage.setItem(NAV_KEY, JSON.stringify(n)));

/** A new history entry for a new place (none when arriving from the history itself). */
function remember(replace = false): void {
  const hash = currentHash();
  if (!hash || typeof window === 'undefined' || window.location.hash === hash) return;
  // The first place of a fresh tab replaces the bare address rather than stacking on it.
  if (!window.location.hash || replace) {
    window.history.replaceState({ nav: useNav.getState().index }, '', hash);
    return;
  }
  const index = useNav.getState().index + 1;
  window.history.pushState({ nav: index }, '', hash);
  useNav.setState({ index, last: index });
}

/** After Back, Forward or an address typed in: the entry's index, then its place. */
export function onHistory(state: unknown): void {
  const index = (state as { nav?: number } | null)?.nav;
  if (typeof index === 'number') useNav.setState({ index });
  else {
    // An address typed or pasted: a new entry after the current one.
    const next = useNav.getState().index + 1;
    window.history.replaceState({ nav: next }, '', window.location.hash);
    useNav.setState({ index: next, last: next });
  }
  followAddress();
}

/** Goes to the place in the address; false when it names none (or an account `known` denies). */
export function followAddress(known: (account: number) => boolean = () => true): boolean {
  const place = parsePlace(window.location.hash);
  if (!place || (place.view === 'account' && !known(place.account))) return false;
  if (window.location.hash === currentHash()) return true;
  if (place.view !== 'account') useUi.getState().setView(place.view);
  else {
    // The address becomes the folder's own (no extra history entry), with the link's item selected.
    if (place.item) window.history.replaceState(null, '', placeHash({ ...place, item: undefined }));
    useUi.getState().open(place.account, place.folder, place.message);
    if (place.item) useUi.getState().setSelection([place.item]);
  }
  return true;
}

/** At start: the entry the page opened on gets its index (a reload keeps the one it had). */
export function startNavigation(): void {
  const index = (window.history.state as { nav?: number } | null)?.nav;
  if (typeof index === 'number') useNav.setState({ index });
  else window.history.replaceState({ nav: useNav.getState().index }, '', window.location.href);
}
