/**
 * Rules about transfers that the main process and the renderer share: their names, which
 * actions a transfer offers in which state, how speed is measured, and when (and with which
 * words) the end of a transfer is announced — by the desktop app's main process (an OS
 * notification while the window is not focused) and by the renderer (a toast while it is; the
 * browser's Notification in web mode). Only long transfers are announced, and only endings the
 * user did not cause: done or failed, not cancelled.
 */
import { formatBytes, formatDuration } from './format';
import type { Transfer, TransferAction } from './index';

export const TRANSFER_VERB: Record<Transfer['direction'], string> = { upload: 'Upload', download: 'Download', copy: 'Copy', move: 'Move' };

/**
 * What the user can do with a transfer now. `pausable`: pausing keeps the work done so far;
 * `continuable`: its owner can run it again after a failure.
 */
export function transferActions(state: Transfer['state'], can: { pausable: boolean; continuable: boolean }): TransferAction[] {
  switch (state) {
    case 'running':
    case 'queued':
      return can.pausable ? ['pause', 'cancel'] : ['cancel'];
    case 'paused':
      return ['resume', 'cancel'];
    case 'failed':
      return can.continuable ? ['retry'] : [];
    default:
      return [];
  }
}

/** Bytes per second over the last few seconds of progress samples. */
export class SpeedWindow {
  private samples: [number, number][] = [];

  constructor(
    private readonly windowMs = 5000,
    /** Samples closer together than this are not kept (progress may come per 64 KB chunk). */
    private readonly minGapMs = 100,
  ) {}

  /** Records that `bytes` were done at `now` (ms). */
  add(now: number, bytes: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && now - last[0] < this.minGapMs) return;
    this.samples.push([now, bytes]);
    while (this.samples.length > 2 && now - this.samples[0][0] > this.windowMs) this.samples.shift();
  }

  /** Starts over (a continued transfer: what it kept is not speed). */
  reset(): void {
    this.samples = [];
  }

  /** Over the window up to `now` (ms), counting `bytes` done at `now`; 0 without two samples. */
  bytesPerSecond(now?: number, bytes?: number): number {
    const first = this.samples[0];
    const last = now !== undefined && bytes !== undefined ? [now, bytes] : this.samples[this.samples.length - 1];
    if (!first || !last || last[0] <= first[0]) return 0;
    return Math.max(0, ((last[1] - first[1]) * 1000) / (last[0] - first[0]));
  }
}

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
  const verb = TRANSFER_VERB[t.direction];
  if (t.state === 'failed') return { title: `${verb} failed`, body: `${t.name}: ${t.error ?? 'unknown error'}` };
  return { title: `${verb} finished`, body: `${t.name}${t.bytesTotal !== null ? ` (${formatBytes(t.bytesTotal)})` : ''} in ${formatDuration(seconds)}` };
}

/** First retry delay of a transfer's request, doubled per attempt up to RETRY_MAX_DELAY_MS. */
export const RETRY_BASE_MS = 250;
export const RETRY_MAX_DELAY_MS = 8000;

/**
 * The wait before retry `attempt` (0-based) of a transfer's request: exponential backoff with
 * ±25 % jitter, so that the parallel parts of one transfer do not retry in step. One rule for the
 * main process's uploads and downloads and the browser's web uploads.
 */
export function retryDelay(attempt: number, baseMs = RETRY_BASE_MS, maxMs = RETRY_MAX_DELAY_MS): number {
  return Math.min(maxMs, baseMs * 2 ** attempt) * (0.75 + Math.random() * 0.5);
}
