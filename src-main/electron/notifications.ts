/**
 * Desktop notifications when a long transfer ends: the main process watches
 * `transfers.updated` and, while no Tributary window has the focus, shows the notice that
 * contract/transfers.ts words (the focused renderer shows a toast instead). Electron's
 * Notification comes in as `show`, so this runs (and is tested) without Electron.
 */
import type { App } from '../app';
import type { Transfer } from '../contract';
import { DEFAULT_NOTIFY_AFTER_SECONDS, transferNotice, type TransferNotice } from '../contract/transfers';
import { SETTING_NOTIFY_AFTER_SECONDS } from '../services/settings-keys';

export interface Announcer {
  isFocused(): boolean;
  show(notice: TransferNotice, transfer: Transfer): void;
}

/** Starts announcing; returns the function that stops it. */
export function announceLongTransfers(app: Pick<App, 'events' | 'settings'>, announcer: Announcer): () => void {
  const announced = new Set<string>();
  return app.events.on('transfers.updated', (t) => {
    if (!t.finishedAt) {
      announced.delete(t.id); // running again (a retry): its next ending is news again
      return;
    }
    if (announced.has(t.id)) return;
    announced.add(t.id);
    const notice = transferNotice(t, app.settings.get<number | null>(SETTING_NOTIFY_AFTER_SECONDS, DEFAULT_NOTIFY_AFTER_SECONDS));
    if (notice && !announcer.isFocused()) announcer.show(notice, t);
  });
}
