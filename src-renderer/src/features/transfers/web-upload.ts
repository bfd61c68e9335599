/**
 * Web mode uploads, run by this page (the desktop app hands local paths to the main process's
 * uploader instead). Files up to 5 MB are one `POST /app/upload`. Bigger files go up as a
 * multipart session (contract `uploads.begin`, spec 1 "Multipart upload"): parts are sliced
 * from the File and PUT to `/app/upload/part`, several at a time where the backend accepts
 * parallel parts, each retried with backoff while Tributary or the account's server is away.
 * Pause aborts the parts in flight and keeps the session; resume and retry ask the session
 * which parts it holds (`uploads.parts`) and send only the others; cancel aborts the session.
 * A page reload loses the File, so a big upload continues only while the page is open.
 *
 * Progress is what reached the account's backend, not what the browser handed to Tributary:
 * the server reports the bytes it wrote upstream (`uploads.progress` of this upload's id) for a
 * whole-file upload and for the complete of a staged session (a backend without native parts,
 * whose parts wait in Tributary until then); native parts count once the backend confirmed them.
 */
import type { EventPayload, TransferAction } from '../../../../src-main/contract';
import { MULTIPART_MIN_SIZE } from '../../../../src-main/contract/limits';
import { retryDelay, SpeedWindow, transferActions } from '../../../../src-main/contract/transfers';
import { ApiError, type Api } from '../../api/client';
import { named } from '../../components/Name';
import { toastError, useUi, type LocalUpload } from '../../stores/ui';

/** Parts in flight per upload when the backend accepts parallel parts. */
const PARALLEL_PARTS = 4;
/** A part keeps being retried while the last success is at most this old. */
const RETRY_WINDOW_MS = 120_000;

export interface WebUploadTarget {
  account: number;
  folder: string;
}

const uploads = new Map<string, WebUpload>();
const listening = new WeakSet<Api>();

/** Routes the server's upstream byte counts to the uploads of this page. */
function listen(api: Api): void {
  if (listening.has(api)) return;
  listening.add(api);
  api.transport.subscribe((name, payload) => {
    if (name !== 'uploads.progress') return;
    const p = payload as EventPayload<'uploads.progress'>;
    uploads.get(p.transfer)?.upstreamProgress(p.bytes);
  });
}

/** Where an upload's row goes: the Transfers panel, or the row of the group it belongs to. */
export interface UploadSink {
  put(u: LocalUpload): void;
  patch(id: string, p: Partial<LocalUpload>): void;
}

const panel: UploadSink = {
  put: (u) => useUi.getState().putUpload(u),
  patch: (id, p) => useUi.getState().patchUpload(id, p),
};

/**
 * Adds the file to the Transfers panel (or to its group's row) and uploads it; resolves when it
 * ends or is paused.
 */
export function startWebUpload(api: Api, file: File, target: WebUploadTarget, conflict: 'rename' | 'overwrite', sink: UploadSink = panel): Promise<void> {
  listen(api);
  const u = new WebUpload(api, file, target, conflict, sink);
  uploads.set(u.id, u);
  return u.run();
}

/** Cancels a web upload (a group's member, whose row is the group's). */
export function cancelWebUpload(id: string): Promise<void> {
  return uploads.get(id)?.cancel() ?? Promise.resolve();
}

const groupActions = new Map<string, (action: TransferAction) => void>();

/** A row that stands for several uploads (a dropped folder); `act` answers its buttons. */
export function registerGroup(id: string, act: (action: TransferAction) => void): void {
  groupActions.set(id, act);
}

/** A Transfers panel button on a web upload's row. */
export function actOnWebUpload(id: string, action: TransferAction): void {
  const group = groupActions.get(id);
  if (group) return group(action);
  const u = uploads.get(id);
  if (!u) return;
  if (action === 'pause') u.pause();
  else if (action === 'cancel') void u.cancel();
  else void u.run();
}

/** Forgets the uploads the panel cleared. */
export function forgetFinishedWebUploads(): void {
  for (const [id, u] of uploads) if (u.finished) uploads.delete(id);
  const rows = new Set(useUi.getState().uploads.map((u) => u.id));
  for (const id of groupActions.keys()) if (!rows.has(id)) groupActions.delete(id);
}

class WebUpload {
  /** Also the server's name for it (uploads.progress): unique across the pages of this app. */
  readonly id = `web-${crypto.randomUUID()}`;
  private state: LocalUpload['state'] = 'running';
  private session: { id: number; partSize: number; parallel: boolean; staged: boolean } | null = null;
  /** Bytes the server wrote upstream in the current request (whole upload, or a staged complete). */
  private upstream = 0;
  /** `uploads.complete` is running: the server publishes the file, nothing is left to pause. */
  private completing = false;
  private readonly confirmed = new Set<number>();
  private readonly inflight = new Map<number, { abort(): void; loaded: number }>();
  private readonly speed = new SpeedWindow();
  private running: Promise<void> | null = null;

  constructor(
    private readonly api: Api,
    private readonly file: File,
    private readonly target: WebUploadTarget,
    private readonly conflict: 'rename' | 'overwrite',
    private readonly sink: UploadSink,
  ) {
    sink.put({
      id: this.id,
      name: file.name,
      account: target.account,
      target: target.folder,
      bytesDone: 0,
      bytesTotal: file.size,
      state: 'running',
      error: null,
      startedAt: Date.now(),
      finishedAt: null,
      speed: 0,
      actions: this.actions(),
      savedAs: null,
    });
  }

  get finished(): boolean {
    return this.state === 'done' || this.state === 'cancelled' || this.state === 'failed';
  }

  private get big(): boolean {
    return this.file.size > MULTIPART_MIN_SIZE;
  }

  /** Starts, resumes or retries; one run at a time. */
  run(): Promise<void> {
    if (this.running) return this.running;
    if (this.state === 'done' || this.state === 'cancelled') return Promise.resolve();
    this.state = 'running';
    this.speed.reset();
    this.patch({ state: 'running', error: null, finishedAt: null });
    this.running = (this.big ? this.runParts() : this.runWhole()).finally(() => (this.running = null));
    return this.running;
  }

  pause(): void {
    if (this.state !== 'running' || !this.big || this.completing) return;
    this.state = 'paused';
    for (const p of this.inflight.values()) p.abort();
    this.patch({ state: 'paused', speed: 0 });
  }

  async cancel(): Promise<void> {
    if (this.finished) return;
    this.state = 'cancelled';
    for (const p of this.inflight.values()) p.abort();
    this.patch({ state: 'cancelled', speed: 0, finishedAt: Date.now() });
    if (this.session) await this.api.call('uploads.abort', { account: this.target.account, session: this.session.id }).catch(() => {});
  }

  /** The server's count of bytes written upstream by the request running now. */
  upstreamProgress(bytes: number): void {
    if (this.state !== 'running') return;
    this.upstream = bytes;
    this.progress();
  }

  private async runWhole(): Promise<void> {
    this.upstream = 0;
    const req = this.api.upload(this.file, { account: this.target.account, parent: this.target.folder, conflict: this.conflict, transfer: this.id }, () => {});
    this.inflight.set(1, { abort: req.abort, loaded: 0 });
    try {
      const resource = await req.done;
      this.succeed(resource.name);
    } catch (e) {
      this.fail(e);
    } finally {
      this.inflight.delete(1);
    }
  }

  private async runParts(): Promise<void> {
    const account = this.target.account;
    try {
      if (!this.session) {
        const s = await this.api.call('uploads.begin', { account, parent: this.target.folder, name: this.file.name, size: this.file.size, conflict: this.conflict });
        this.session = { id: s.session, partSize: s.partSize, parallel: s.parallel, staged: s.staged };
      } else {
        // After a pause or failure: the session is the truth about which parts arrived.
        this.confirmed.clear();
        for (const n of await this.api.call('uploads.parts', { account, session: this.session.id })) this.confirmed.add(n);
      }
      const { partSize, parallel } = this.session;
      const count = Math.max(1, Math.ceil(this.file.size / partSize));
      const unsent = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !this.confirmed.has(n));
      this.progress();
      const lastSuccess = { at: Date.now() };
      const worker = async () => {
        for (let n = unsent.shift(); n !== undefined && this.state === 'running'; n = unsent.shift()) await this.sendPart(n, partSize, lastSuccess);
      };
      await Promise.all(Array.from({ length: parallel ? PARALLEL_PARTS : 1 }, worker));
      if (this.state !== 'running') return;
      this.upstream = 0;
      this.completing = true;
      this.patch({});
      const resource = await this.api.call('uploads.complete', { account, session: this.session.id, transfer: this.id }).finally(() => (this.completing = false));
      this.succeed(resource.name);
    } catch (e) {
      for (const p of this.inflight.values()) p.abort();
      this.fail(e);
    }
  }

  /** One part, retried with backoff through transient failures. */
  private async sendPart(n: number, partSize: number, lastSuccess: { at: number }): Promise<void> {
    const start = (n - 1) * partSize;
    const blob = this.file.slice(start, Math.min(this.file.size, start + partSize));
    for (let attempt = 0; this.state === 'running'; attempt++) {
      const req = this.api.uploadPart(this.target.account, this.session!.id, n, blob, (loaded) => {
        const p = this.inflight.get(n);
        if (p) p.loaded = loaded;
        this.progress();
      });
      this.inflight.set(n, { abort: req.abort, loaded: 0 });
      try {
        await req.done;
        this.confirmed.add(n);
        lastSuccess.at = Date.now();
        return;
      } catch (e) {
        if (this.state !== 'running') return; // paused or cancelled: the part is sent again on resume
        const transient = e instanceof ApiError && (e.status === 0 || e.status >= 500 || e.status === 429 || e.status === 408);
        if (!transient || Date.now() - lastSuccess.at > RETRY_WINDOW_MS) throw e;
        await new Promise((r) => setTimeout(r, retryDelay(attempt)));
      } finally {
        this.inflight.delete(n);
        this.progress();
      }
    }
  }

  private progress(): void {
    let done = this.upstream;
    if (this.session && !this.session.staged) {
      const { partSize } = this.session;
      for (const n of this.confirmed) done += Math.min(partSize, this.file.size - (n - 1) * partSize);
      for (const p of this.inflight.values()) done += p.loaded;
    }
    const now = Date.now();
    this.speed.add(now, done);
    this.patch({ bytesDone: Math.min(done, this.file.size), speed: this.speed.bytesPerSecond(now, done) });
  }

  private succeed(savedAs: string): void {
    if (this.state !== 'running') return;
    this.state = 'done';
    this.patch({ state: 'done', bytesDone: this.file.size, speed: 0, finishedAt: Date.now(), savedAs: savedAs === this.file.name ? null : savedAs });
  }

  private fail(e: unknown): void {
    if (this.state !== 'running') return; // a pause or cancel, not a failure
    const cancelled = e instanceof ApiError && e.code === 'cancelled';
    this.state = cancelled ? 'cancelled' : 'failed';
    this.patch({ state: this.state, error: cancelled ? null : (e as Error).message, speed: 0, finishedAt: Date.now() });
    if (!cancelled && this.sink === panel) toastError(named`Could not upload "${this.file.name}"`, e);
  }

  private actions(): TransferAction[] {
    // Pausing a small upload would keep nothing: it offers cancel only.
    return transferActions(this.state, { pausable: this.big && !this.completing, continuable: true });
  }

  private patch(p: Partial<LocalUpload>): void {
    this.sink.patch(this.id, { ...p, actions: this.actions() });
  }
}
