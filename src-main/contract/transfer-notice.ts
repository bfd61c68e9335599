/**
 * When the end of a transfer is announced, and with which words: shared by the desktop app's
 * main process (an OS notification while the window is not focused) and the renderer (a toast
 * while it is; the browser's Notification in web mode). Only long transfers are announced, and
 * only endings the user did not cause: done or failed, not cancelled.
 */
import { formatBytes, formatDuration } from './format';
import type { Transfer } from './index';

export const DEFAULT_NOTIFY_AFTER_SECONDS = 10;

export interface TransferNotice {
  title: string;
  body: string;
}

type Ended = Pick<Transfer, 'direction' | 'name' | 'state' | 'error' | 'bytesTotal' | 'startedAt' | 'finishedAt'>;

export function transferNotice(t: Ended, notifyAfterSeconds: number | null): TransferNotice | null {
  if (notifyAfterSeconds === null || !t.finishedAt || (t.state !== 'done' && t.state !== 'failed')) return null;
  const seconds = (Date.parse(t.finishedAt) - Date.parse(t.startedAt)) / 1000;
  if (!(seconds >= notifyAfterSeconds)) return null;
  const verb = { upload: 'Upload', download: 'Download', copy: 'Copy', move: 'Move' }[t.direction];
  if (t.state === 'failed') return { title: `${verb} failed`, body: `${t.name}: ${t.error ?? 'unknown error'}` };
  return { title: `${verb} finished`, body: `${t.name}${t.bytesTotal !== null ? ` (${formatBytes(t.bytesTotal)})` : ''} in ${formatDuration(seconds)}` };
}
