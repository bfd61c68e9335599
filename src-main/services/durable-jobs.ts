/**
 * What the uploader and the downloader share: a job is a SQLite row (`upload_jobs`,
 * `download_jobs`) shown as one transfer that keeps its id across attempts and restarts. This
 * runs each job at most once at a time, continues the running ones and lists the paused ones
 * at start, gives Transfers its pause / resume / discard controls, and records how an attempt
 * ended (done, paused, cancelled or failed).
 */
import type { Db } from '../cache/db';
import { nowIso } from '../cache/db';
import type { Transfer } from '../contract';
import { ServiceError, toServiceError } from '../errors';
import { pausedBy, type TransferControls, type TransfersService } from './transfers';

export type JobState = 'running' | 'paused' | 'done' | 'failed' | 'cancelled';

export interface JobRowBase {
  id: number;
  state: JobState;
  error: string | null;
}

export interface JobKind<Row extends JobRowBase, T> {
  table: 'upload_jobs' | 'download_jobs';
  /** "Upload", "Download": in messages. */
  noun: string;
  transferId(id: number): string;
  transferInit(row: Row): Pick<Transfer, 'direction' | 'name' | 'account' | 'target' | 'bytesTotal'>;
  /** One attempt of the job (it calls `start` and `settle`). */
  run(id: number): Promise<T>;
  /** Bytes a paused job keeps (shown in Transfers after a restart). */
  keptBytes(row: Row): Promise<number> | number;
  /** Drops what a cancelled job left behind (multipart session, partial file). */
  discard(row: Row): Promise<void>;
  /** After an attempt was paused, before the transfer ends. */
  onPaused?(row: Row, transferId: string): Promise<void>;
}

export class DurableJobs<Row extends JobRowBase, T> {
  private readonly running = new Map<number, Promise<T>>();

  constructor(
    private readonly deps: { db: Db; transfers: TransfersService },
    private readonly kind: JobKind<Row, T>,
  ) {}

  row(id: number): Row {
    const r = this.deps.db.prepare(`SELECT * FROM ${this.kind.table} WHERE id = ?`).get(id) as Row | undefined;
    if (!r) throw new ServiceError('not_found', `${this.kind.noun} ${id} was not found.`);
    return r;
  }

  rows(state: 'running' | 'paused'): Row[] {
    return this.deps.db.prepare(`SELECT * FROM ${this.kind.table} WHERE state = ? ORDER BY id`).all(state) as Row[];
  }

  setJob(id: number, patch: Partial<Omit<Row, 'id'>>): void {
    this.write(id, patch);
  }

  private setState(id: number, state: JobState, error: string | null): void {
    this.write(id, { state, error });
  }

  private write(id: number, patch: object): void {
    const keys = Object.keys(patch);
    this.deps.db.prepare(`UPDATE ${this.kind.table} SET ${keys.map((k) => `${k} = @${k}`).join(', ')}, updated = @updated WHERE id = @id`).run({ ...patch, updated: nowIso(), id });
  }

  /** Runs (or continues) a job to its end; a job already running is not started twice. */
  resume(id: number): Promise<T> {
    let p = this.running.get(id);
    if (!p) {
      p = this.kind.run(id).finally(() => this.running.delete(id));
      this.running.set(id, p);
    }
    return p;
  }

  /**
   * At startup: continues every job a previous process left running, and lists the paused
   * ones in Transfers (paused, as the user left them). Settles each resumed job, never throws.
   */
  async resumeAll(): Promise<PromiseSettledResult<T>[]> {
    for (const row of this.rows('paused')) {
      this.deps.transfers.addPaused(this.kind.transferInit(row), { id: this.kind.transferId(row.id), controls: this.controls(row.id), bytesDone: await this.kind.keptBytes(row) });
    }
    return Promise.allSettled(this.rows('running').map((r) => this.resume(r.id)));
  }

  /** Begins an attempt: the job's transfer, under its stable id, with its controls. */
  start(row: Row): { transferId: string; signal: AbortSignal } {
    const { transfer, signal } = this.deps.transfers.start(this.kind.transferInit(row), { id: this.kind.transferId(row.id), controls: this.controls(row.id) });
    return { transferId: transfer.id, signal };
  }

  /** Ends an attempt that succeeded; `savedAs`, the name the result got (transfers.finish). */
  done(id: number, transferId: string, patch: Partial<Omit<Row, 'id'>> = {}, savedAs?: string): void {
    this.write(id, { ...patch, state: 'done', error: null });
    this.deps.transfers.finish(transferId, undefined, savedAs);
  }

  /**
   * Ends an attempt that threw: paused keeps what the job has, cancelled drops it, anything else
   * fails the job (what it has stays for a retry). Returns the error to rethrow.
   */
  async settle(id: number, transferId: string, signal: AbortSignal, e: unknown): Promise<ServiceError> {
    const err = toServiceError(signal.aborted ? (signal.reason ?? e) : e);
    if (pausedBy(signal)) {
      await this.kind.onPaused?.(this.row(id), transferId);
      this.setState(id, 'paused', null);
    } else if (signal.aborted) {
      await this.kind.discard(this.row(id));
      this.setState(id, 'cancelled', 'Cancelled by the user.');
    } else {
      this.setState(id, 'failed', err.message);
    }
    this.deps.transfers.finish(transferId, err);
    return err;
  }

  /** Resume continues the job; discard (cancel of a paused or failed job) drops what it left. */
  private controls(id: number): TransferControls {
    return {
      pausable: true,
      resume: () => {
        this.setState(id, 'running', null);
        this.resume(id).catch(() => {});
      },
      discard: async () => {
        await this.kind.discard(this.row(id));
        this.setState(id, 'cancelled', 'Cancelled by the user.');
      },
    };
  }
}
