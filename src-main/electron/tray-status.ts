/**
 * What the tray (menu-bar) icon shows and offers, decided from the transfers service alone: no
 * Electron import, so it is tested under plain Node; tray.ts only draws it.
 *
 * The icon has three states: idle, busy (files are moving) and error (a transfer failed and is
 * still listed: it stays until it is retried or cleared in the Transfers panel). A failure wins
 * over movement in the icon, as it is the one that needs the user; the text says both.
 */
import type { Transfer } from '../contract';
import type { TransfersService } from '../services/transfers';
import type { EventBus } from '../services/events';

export type TrayState = 'idle' | 'busy' | 'error';

export interface TrayStatus {
  state: TrayState;
  /** Running or queued. */
  moving: number;
  paused: number;
  failed: number;
  /** Running transfers that can be paused (copies and small web uploads cannot). */
  pausable: number;
  /**
   * Percent done of the moving transfers whose size is known, in steps of 5 (the menu and
   * tooltip are rebuilt when it changes, not at every progress event); null when none is known.
   */
  percent: number | null;
  /** One line for the menu's first, disabled item. */
  summary: string;
  /** The icon's tooltip (Windows, Linux) or title. */
  tooltip: string;
}

type Counted = Pick<Transfer, 'state' | 'actions' | 'bytesDone' | 'bytesTotal'>;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function trayStatus(transfers: readonly Counted[]): TrayStatus {
  let moving = 0;
  let paused = 0;
  let failed = 0;
  let pausable = 0;
  let done = 0;
  let total = 0;
  for (const t of transfers) {
    if (t.state === 'running' || t.state === 'queued') {
      moving++;
      if (t.actions.includes('pause')) pausable++;
      if (t.bytesTotal !== null && t.bytesTotal > 0) {
        done += Math.min(t.bytesDone, t.bytesTotal);
        total += t.bytesTotal;
      }
    } else if (t.state === 'paused') paused++;
    else if (t.state === 'failed') failed++;
  }
  const percent = total > 0 ? Math.floor((done * 20) / total) * 5 : null;
  const parts: string[] = [];
  if (moving) parts.push(`Moving ${plural(moving, 'file')}${percent !== null ? ` (${percent}%)` : ''}`);
  if (paused) parts.push(`${paused} paused`);
  if (failed) parts.push(`${failed} failed`);
  const summary = parts.length ? parts.join(' · ') : 'No transfers running';
  const state: TrayState = failed ? 'error' : moving ? 'busy' : 'idle';
  return { state, moving, paused, failed, pausable, percent, summary, tooltip: `Tributary — ${summary}` };
}

export type TrayAction = 'open' | 'pauseAll' | 'resumeAll' | 'quit';

export type TrayMenuItem = { type: 'separator' } | { type: 'item'; label: string; enabled: boolean; action?: TrayAction };

export function trayMenu(status: TrayStatus): TrayMenuItem[] {
  return [
    { type: 'item', label: status.summary, enabled: false },
    { type: 'separator' },
    { type: 'item', label: 'Open Tributary', enabled: true, action: 'open' },
    { type: 'item', label: 'Pause all transfers', enabled: status.pausable > 0, action: 'pauseAll' },
    // Only offered when something waits paused: the menu stays short otherwise.
    ...(status.paused > 0 ? [{ type: 'item' as const, label: 'Resume all transfers', enabled: true, action: 'resumeAll' as const }] : []),
    { type: 'separator' },
    { type: 'item', label: 'Quit Tributary', enabled: true, action: 'quit' },
  ];
}

/**
 * The icon file under resources/tray/ for a state: macOS template images (the menu bar tints
 * them), else a white glyph on dark panels and a dark one on light panels; Linux panels draw
 * icons bigger than Windows' 16 px notification area, so they get the 32 px one.
 */
export function trayIconFile(state: TrayState, platform: NodeJS.Platform, darkPanel: boolean): string {
  if (platform === 'darwin') return `${state}Template.png`;
  const variant = darkPanel ? 'dark' : 'light';
  return platform === 'win32' ? `${state}-${variant}.png` : `${state}-${variant}-32.png`;
}

/**
 * Whether the panel the tray icon sits on is dark, from what the OS tells: Windows' taskbar
 * follows the system colour mode (not the apps' one); GNOME's top bar (Ubuntu and most Linux
 * desktops) is dark in every theme, while KDE's panel follows the theme. macOS tints template
 * images itself.
 */
export function panelIsDark(platform: NodeJS.Platform, os: { systemDark: boolean; themeDark: boolean; desktop: string | undefined }): boolean {
  if (platform === 'win32') return os.systemDark;
  if (platform === 'darwin') return os.systemDark;
  return /kde/i.test(os.desktop ?? '') ? os.themeDark : true;
}

/**
 * Whether closing the window hides it to the tray (the app keeps running there) rather than
 * closing it: on Windows and Linux. On macOS the window closes and the app stays in the Dock,
 * as Mac apps do.
 */
export function closeHidesToTray(platform: NodeJS.Platform): boolean {
  return platform !== 'darwin';
}

type Transfers = Pick<TransfersService, 'list' | 'pause' | 'resume'>;

/** Pauses every transfer that can be paused now; answers how many were. */
export function pauseAll(transfers: Transfers): number {
  let n = 0;
  for (const t of transfers.list()) {
    if (!t.actions.includes('pause')) continue;
    try {
      transfers.pause(t.id);
      n++;
    } catch {
      // It ended between list and pause: nothing to pause.
    }
  }
  return n;
}

export function resumeAll(transfers: Transfers): number {
  let n = 0;
  for (const t of transfers.list()) {
    if (!t.actions.includes('resume')) continue;
    try {
      transfers.resume(t.id);
      n++;
    } catch {
      // Cancelled meanwhile.
    }
  }
  return n;
}

/**
 * Calls `show` with the status now and after every transfer change (the service's
 * `transfers.updated` events), only when what the tray shows changed. `refresh` recomputes on
 * demand: clearing finished transfers sends no event. Returns { refresh, stop }.
 */
export function watchTrayStatus(app: { events: Pick<EventBus, 'on'>; transfers: Pick<TransfersService, 'list'> }, show: (status: TrayStatus) => void): { refresh(): void; stop(): void } {
  let last = '';
  const refresh = () => {
    const status = trayStatus(app.transfers.list());
    const key = `${status.state}\0${status.summary}\0${status.pausable > 0}\0${status.paused > 0}`;
    if (key === last) return;
    last = key;
    show(status);
  };
  const stop = app.events.on('transfers.updated', refresh);
  refresh();
  return { refresh, stop };
}
