/**
 * Transfers the user started (uploads, downloads, cross-account copies): progress, speed
 * inputs and cancellation, pushed to the renderer as `transfers.updated`.
 */
import { randomUUID } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { Transfer } from '../contract';
import { ServiceError } from '../errors';
import type { EventBus } from './events';

/** Progress events are throttled to this interval per transfer. */
const PUSH_EVERY_MS = 150;

export class TransfersService {
  private readonly transfers = new Map<string, Transfer>();
  private readonly controllers = new Map<string, AbortController>();
  private readonly lastPush = new Map<string, number>();

  constructor(private readonly events: EventBus) {}

  start(init: Pick<Transfer, 'direction' | 'name' | 'account' | 'target' | 'bytesTotal'>): { transfer: Transfer; signal: AbortSignal } {
    const transfer: Transfer = { ...init, id: randomUUID(), bytesDone: 0, state: 'running', error: null, startedAt: new Date().toISOString(), finishedAt: null };
    const controller = new AbortController();
    this.transfers.set(transfer.id, transfer);
    this.controllers.set(transfer.id, controller);
    this.push(transfer, true);
    return { transfer, signal: controller.signal };
  }

  /** A pass-through stream that counts bytes into the transfer's progress. */
  meter(id: string): Transform {
    return new Transform({
      transform: (chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) => {
        this.progress(id, chunk.length);
        done(null, chunk);
      },
    });
  }

  progress(id: string, bytes: number): void {
    const t = this.transfers.get(id);
    if (!t) return;
    t.bytesDone += bytes;
    this.push(t, false);
  }

  finish(id: string, error?: unknown): void {
    const t = this.transfers.get(id);
    if (!t || t.finishedAt) return;
    const cancelled = this.controllers.get(id)?.signal.aborted;
    t.state = cancelled ? 'cancelled' : error ? 'failed' : 'done';
    t.error = error && !cancelled ? (error instanceof Error ? error.message : String(error)) : null;
    t.finishedAt = new Date().toISOString();
    this.controllers.delete(id);
    this.push(t, true);
  }

  cancel(id: string): void {
    const controller = this.controllers.get(id);
    if (!controller) throw new ServiceError('not_found', 'No running transfer has this id.');
    controller.abort(new ServiceError('request_timeout', 'Cancelled by the user.'));
  }

  list(): Transfer[] {
    return [...this.transfers.values()];
  }

  clearFinished(): void {
    for (const [id, t] of this.transfers) {
      if (!t.finishedAt) continue;
      this.transfers.delete(id);
      this.lastPush.delete(id);
    }
  }

  private push(t: Transfer, force: boolean): void {
    const now = Date.now();
    if (!force && now - (this.lastPush.get(t.id) ?? 0) < PUSH_EVERY_MS) return;
    this.lastPush.set(t.id, now);
    this.events.emit('transfers.updated', { ...t });
  }
}
