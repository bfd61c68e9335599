/**
 * The end of a long transfer, announced (contract/transfers.ts decides which and how):
 * a toast while this window has the focus; otherwise, in web mode, a browser notification
 * (the desktop app's main process shows the OS notification itself).
 */
import { useEffect, useRef } from 'react';
import { DEFAULT_NOTIFY_AFTER_SECONDS, transferNotice } from '../../../../src-main/contract/transfers';
import { useApi, useSettings, useTransfers } from '../../api/hooks';
import { nameText } from '../../components/Name';
import { useUi } from '../../stores/ui';

/** Web mode: asks once for permission to notify (called when the user starts an upload). */
export async function askToNotify(): Promise<void> {
  if (typeof Notification === 'undefined' || Notification.permission !== 'default') return;
  await Notification.requestPermission().catch(() => {});
}

export function useTransferNotices(): void {
  const api = useApi();
  const settings = useSettings();
  const server = useTransfers();
  const local = useUi((s) => s.uploads);
  // Transfers seen running in this page: only their endings are announced, not old ones.
  const seen = useRef(new Map<string, 'live' | 'announced'>());
  const after = settings.data ? settings.data.notifyAfterSeconds : DEFAULT_NOTIFY_AFTER_SECONDS;

  useEffect(() => {
    const rows = [
      ...(server.data ?? []),
      ...local.map((u) => ({ ...u, direction: 'upload' as const, startedAt: new Date(u.startedAt).toISOString(), finishedAt: u.finishedAt === null ? null : new Date(u.finishedAt).toISOString() })),
    ];
    for (const t of rows) {
      const state = seen.current.get(t.id);
      if (!t.finishedAt) {
        if (!state) seen.current.set(t.id, 'live');
        continue;
      }
      if (state !== 'live') continue;
      seen.current.set(t.id, 'announced');
      const notice = transferNotice(t, after);
      if (!notice) continue;
      if (document.hasFocus()) {
        // The notice quotes the transfer's name: its hidden characters are shown, not obeyed.
        useUi.getState().toast({ kind: t.state === 'failed' ? 'error' : 'info', title: nameText(notice.title), message: nameText(notice.body) });
      } else if (api.mode === 'ws' && typeof Notification !== 'undefined' && Notification.permission === 'granted') {
        const n = new Notification(nameText(notice.title), { body: nameText(notice.body), tag: t.id });
        n.onclick = () => {
          window.focus();
          useUi.getState().setTransfersOpen(true);
        };
      }
    }
  }, [server.data, local, after, api]);
}

/** Mounted once beside the Transfers panel. */
export function TransferNotices(): null {
  useTransferNotices();
  return null;
}
