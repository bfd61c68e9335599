/**
 * Transfers the user started (uploads, downloads, cross-account copies): progress, speed,
 * pause / resume / retry / cancel, pushed to the renderer as `transfers.updated`.
 *
 * The owner of a transfer runs it in attempts: `start` begins one (again under the same id when
 * it continues a paused or failed transfer) and hands out the attempt's AbortSignal; `finish`
 * ends it. Pausing aborts the attempt with a `TransferPaused` reason, so the owner can keep what
 * it has (confirmed parts, the partial file); cancelling aborts with a cancel reason and the
 * owner drops it. Owners that can continue register `controls`; transfers without them (a copy,
 * a small web upload) offer cancel only.
 */
import { randomUUID } from 'node:crypto';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import type { Transfer } from '../contract';
import { SpeedWindow, transferActions } from '../contract/transfers';
import { ServiceError } from '../errors';
import type { EventBus } from './events';

/** Progress events are throttled to this interval per transfer. */
const PUSH_EVERY_MS = 150;

export interface TransferControls {
  /** Whether pausing keeps the work done so far (so pause is offered). */
  pausable: boolean;
  /** Continues a paused or failed transfer: calls `start` again with the same id. */
  resume(): void;
  /** Drops what a paused or failed transfer left behind (multipart session, partial file). */
  discard(): Promise<void>;
}

/** The abort reason of a paused attempt. */
export class TransferPaused extends ServiceError {
  constructor() {
    super('request_timeout', 'Paused by the user.');
  }
}

export const pausedBy = (signal: AbortSignal) => signal.aborted && signal.reason instanceof TransferPaused;

type Init = Pick<Transfer, 'direction' | 'name' | 'account' | 'target' | 'bytesTotal'>;

interface Entry {
  transfer: Omit<Transfer, 'actions' | 'speed'>;
  controls?: TransferControls;
  controller?: AbortController;
  speed: SpeedWindow;
  lastPush: number;
}

export class TransfersService {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly events: EventBus) {}

  /**
   * Starts an attempt. With `id` of a paused or failed transfer it continues that one (its
   * progress restarts at 0: the owner reports what it already has with `progress`).
   */
  start(init: Init, options: { id?: string; controls?: TransferControls } = {}): { transfer: Transfer; signal: AbortSignal } {
    const id = options.id ?? randomUUID();
    const existing = this.entries.get(id);
    if (existing?.controller) throw new ServiceError('conflict', 'This transfer is already running.');
    const controller = new AbortController();
    const entry: Entry = {
      transfer: { ...init, id, bytesDone: 0, state: 'running', error: null, startedAt: existing?.transfer.startedAt ?? new Date().toISOString(), finishedAt: null, savedAs: null },
      controls: options.controls ?? existing?.controls,
      controller,
      speed: new SpeedWindow(),
      lastPush: 0,
    };
    this.entries.set(id, entry);
    this.push(entry, true);
    return { transfer: this.view(entry), signal: controller.signal };
  }

  /** Lists a transfer that waits paused without running (an upload paused before a restart). */
  addPaused(init: Init, options: { id: string; controls: TransferControls; bytesDone: number }): void {
    const entry: Entry = {
      transfer: { ...init, id: options.id, bytesDone: options.bytesDone, state: 'paused', error: null, startedAt: new Date().toISOString(), finishedAt: null, savedAs: null },
      controls: options.controls,
      speed: new SpeedWindow(),
      lastPush: 0,
    };
    this.entries.set(options.id, entry);
    this.push(entry, true);
  }

  /**
   * Sends `source` (a file this process opened) through `write`, counted into transfer `id` as
   * it is read. Failures travel both ways: a source that fails fails what the consumer reads, and
   * a consumer that stops early ends the source, so the file is closed at once (`pipe` alone
   * would leave it open). A write that fails before reading at all (a refused name, a folder
   * that is gone) closes it too: unlike a request body, which is drained so that the client gets
   * the answer, nobody else would. Pausing or cancelling the transfer fails the body with that
   * reason, so a write that waits on it (a paced body, a server that stopped reading) ends too.
   */
  async sendMetered<T>(id: string, source: Readable, write: (body: Readable) => Promise<T>): Promise<T> {
    const body = pipeline(source, this.meter(id), () => {});
    const signal = this.entries.get(id)?.controller?.signal;
    const stop = () => body.destroy(signal!.reason);
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    try {
      return await write(body);
    } catch (e) {
      body.destroy();
      throw signal?.aborted ? signal.reason : e;
    } finally {
      signal?.removeEventListener('abort', stop);
    }
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
    const e = this.entries.get(id);
    if (!e || !e.controller) return;
    e.transfer.bytesDone += bytes;
    this.push(e, false);
  }

  /** Sets the bytes already done (what a continued attempt kept) without counting them as speed. */
  setDone(id: string, bytes: number): void {
    const e = this.entries.get(id);
    if (!e || !e.controller) return;
    e.transfer.bytesDone = bytes;
    e.speed.reset();
    this.push(e, true);
  }

  /**
   * Ends the running attempt: done, failed, paused (aborted by `pause`) or cancelled. `savedAs`:
   * the name the result was saved under, shown when it is not the transfer's name.
   */
  finish(id: string, error?: unknown, savedAs?: string): void {
    const e = this.entries.get(id);
    if (!e?.controller) return;
    const signal = e.controller.signal;
    const t = e.transfer;
    e.controller = undefined;
    e.speed.reset();
    if (pausedBy(signal)) {
      t.state = 'paused';
    } else {
      // A cancel that came too late to stop the work (it completed) is no cancel: it is done.
      t.state = !error ? 'done' : signal.aborted ? 'cancelled' : 'failed';
      t.error = error && !signal.aborted ? (error instanceof Error ? error.message : String(error)) : null;
      t.finishedAt = new Date().toISOString();
      if (!error && savedAs !== undefined && savedAs !== t.name) t.savedAs = savedAs;
    }
    this.push(e, true);
  }

  /**
   * A pass-through stream that reports the bytes a web upload wrote to the backend as
   * `uploads.progress` of the page's transfer `id` (throttled like transfers.updated, and once
   * more at the end).
   */
  upstreamMeter(id: string): Transform {
    let bytes = 0;
    let last = 0;
    const report = (force: boolean) => {
      const now = Date.now();
      if (!force && now - last < PUSH_EVERY_MS) return;
      last = now;
      this.events.emit('uploads.progress', { transfer: id, bytes });
    };
    return new Transform({
      // Small buffers: a chunk is counted when the backend's writer takes it.
      highWaterMark: 1 << 16,
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        report(false);
        done(null, chunk);
      },
      flush(done) {
        report(true);
        done();
      },
    });
  }

  pause(id: string): void {
    const e = this.get(id);
    if (!e.controller || !e.controls?.pausable) throw new ServiceError('invalid_parameters', 'This transfer cannot be paused.');
    e.controller.abort(new TransferPaused());
  }

  /** Continues a paused transfer. */
  resume(id: string): void {
    const e = this.get(id);
    if (e.transfer.state !== 'paused' || !e.controls) throw new ServiceError('invalid_parameters', 'Only a paused transfer can be resumed.');
    e.controls.resume();
  }

  /** Runs a failed transfer again (continuing from what it kept, where it kept anything). */
  retry(id: string): void {
    const e = this.get(id);
    if (e.transfer.state !== 'failed' || !e.controls) throw new ServiceError('invalid_parameters', 'Only a failed upload or download can be retried.');
    e.controls.resume();
  }

  async cancel(id: string): Promise<void> {
    const e = this.get(id);
    if (e.controller) {
      e.controller.abort(new ServiceError('request_timeout', 'Cancelled by the user.'));
      return;
    }
    if (e.transfer.state !== 'paused') throw new ServiceError('invalid_parameters', `This transfer has already ended (${e.transfer.state}).`);
    await e.controls?.discard();
    e.transfer.state = 'cancelled';
    e.transfer.finishedAt = new Date().toISOString();
    this.push(e, true);
  }

  list(): Transfer[] {
    return [...this.entries.values()].map((e) => this.view(e));
  }

  /** Forgets ended transfers; a failed one's leftovers are dropped, as it can no longer be retried. */
  clearFinished(): void {
    for (const [id, e] of this.entries) {
      if (!e.transfer.finishedAt) continue;
      if (e.transfer.state === 'failed') void e.controls?.discard().catch(() => {});
      this.entries.delete(id);
    }
  }

  private get(id: string): Entry {
    const e = this.entries.get(id);
    if (!e) throw new ServiceError('not_found', 'No transfer has this id.');
    return e;
  }

  private view(e: Entry): Transfer {
    const actions = transferActions(e.transfer.state, { pausable: !!e.controls?.pausable, continuable: !!e.controls });
    return { ...e.transfer, actions, speed: e.controller ? e.speed.bytesPerSecond() : 0 };
  }

  private push(e: Entry, force: boolean): void {
    const now = Date.now();
    if (e.controller) e.speed.add(now, e.transfer.bytesDone);
    if (!force && now - e.lastPush < PUSH_EVERY_MS) return;
    e.lastPush = now;
    this.events.emit('transfers.updated', this.view(e));
  }
}
