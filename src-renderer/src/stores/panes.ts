/**
 * The panes' layout, kept across sessions: the width of each resizable pane (the accounts pane,
 * the mailbox's folders and message list) and whether a collapsible one is hidden.
 */
import { create } from 'zustand';

/** Each pane's width limits and first width, in CSS pixels. */
export const PANES = {
  accounts: { min: 160, max: 480, initial: 260 },
  mailFolders: { min: 120, max: 360, initial: 180 },
  mailList: { min: 240, max: 640, initial: 340 },
} as const;
export type PaneId = keyof typeof PANES;
const IDS = Object.keys(PANES) as PaneId[];
const KEY = 'tributary.panes';

interface Layout {
  width: Record<PaneId, number>;
  collapsed: Record<PaneId, boolean>;
}
interface Panes extends Layout {
  resize(pane: PaneId, width: number): void;
  collapse(pane: PaneId, collapsed: boolean): void;
}

const clamp = (pane: PaneId, w: number) => Math.round(Math.max(PANES[pane].min, Math.min(PANES[pane].max, w)));

type Kept = Partial<Record<PaneId, unknown>>;

function saved(): Layout {
  let v: { width?: Kept; collapsed?: Kept | boolean; side?: unknown } = {};
  try {
    v = JSON.parse(localStorage.getItem(KEY) ?? '') ?? {};
  } catch {
    // Nothing kept yet, or not readable: the first layout.
  }
  // Earlier versions kept only the accounts pane, as {side, collapsed}.
  const width: Kept = typeof v.side === 'number' ? { accounts: v.side } : (v.width ?? {});
  const collapsed: Kept = typeof v.collapsed === 'boolean' ? { accounts: v.collapsed } : (v.collapsed ?? {});
  const each = <T,>(f: (id: PaneId) => T) => Object.fromEntries(IDS.map((id) => [id, f(id)])) as Record<PaneId, T>;
  return {
    width: each((id) => {
      const w = width[id];
      return typeof w === 'number' ? clamp(id, w) : PANES[id].initial;
    }),
    collapsed: each((id) => collapsed[id] === true),
  };
}

export const usePanes = create<Panes>((set) => ({
  ...saved(),
  resize: (pane, w) => set((s) => ({ width: { ...s.width, [pane]: clamp(pane, w) } })),
  collapse: (pane, c) => set((s) => ({ collapsed: { ...s.collapsed, [pane]: c } })),
}));

usePanes.subscribe((p) => localStorage.setItem(KEY, JSON.stringify({ width: p.width, collapsed: p.collapsed })));
