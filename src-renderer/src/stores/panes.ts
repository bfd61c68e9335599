/** The panes' layout: the accounts pane's width and whether it is hidden, kept across sessions. */
import { create } from 'zustand';

export const PANE_MIN = 160;
export const PANE_MAX = 480;
const KEY = 'tributary.panes';

interface Panes {
  side: number;
  collapsed: boolean;
  set(p: Partial<Pick<Panes, 'side' | 'collapsed'>>): void;
}

function saved(): Pick<Panes, 'side' | 'collapsed'> {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? '') as Partial<Panes>;
    return { side: typeof v.side === 'number' ? clamp(v.side) : 260, collapsed: v.collapsed === true };
  } catch {
    return { side: 260, collapsed: false };
  }
}

const clamp = (w: number) => Math.round(Math.max(PANE_MIN, Math.min(PANE_MAX, w)));

export const usePanes = create<Panes>((set) => ({
  ...saved(),
  set: (p) => set((s) => ({ ...s, ...p, side: clamp(p.side ?? s.side) })),
}));

usePanes.subscribe((p) => localStorage.setItem(KEY, JSON.stringify({ side: p.side, collapsed: p.collapsed })));
