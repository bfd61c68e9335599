/**
 * The typed client: `api.call('files.list', {...})` is checked against the contract at compile
 * time and rejects with an ApiError carrying the service's error code and message.
 * Web mode also gets the two plain-HTTP endpoints (upload with progress, download as a link).
 */
import type { ProcedureInput, ProcedureName, ProcedureOutput, Resource } from '../../../src-main/contract';
import { IpcTransport, WsTransport, type Transport } from './transport';

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const TOKEN_KEY = 'tributary.token';

/**
 * The UI token of headless mode arrives once in the address (`/?token=T`). It is kept in
 * sessionStorage (this tab only, gone when it closes) and removed from the address bar so it
 * does not end up in history, bookmarks or screenshots.
 *
 * The web UI installed as an app is the exception: its start URL carries no token, so every
 * later launch needs one kept. Installing (`appinstalled`) and running as the installed app
 * copy the token to localStorage too; from then on this browser profile remembers it, and a new
 * link (a rotation) replaces it. docs/ui.md, "Install the web UI as an app".
 */
const INSTALLED_MODES = ['(display-mode: standalone)', '(display-mode: window-controls-overlay)'];
const runsInstalled = () => INSTALLED_MODES.some((q) => window.matchMedia(q).matches) || (navigator as { standalone?: boolean }).standalone === true;

/** Keeps a new UI token (from the link, or after a rotation) for this tab, and for the installed app. */
export function rememberToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
  if (runsInstalled() || localStorage.getItem(TOKEN_KEY) !== null) localStorage.setItem(TOKEN_KEY, token);
}

export function takeToken(): string | null {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl) {
    rememberToken(fromUrl);
    url.searchParams.delete('token');
    window.history.replaceState(null, '', url.pathname + url.search + url.hash);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(TOKEN_KEY);
}

/**
 * Installing the web UI from this tab, or moving this tab into the installed app's window
 * ("Open in app"), keeps its token for the installed app's later launches.
 */
function keepTokenWhenInstalled(): void {
  const keep = () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) localStorage.setItem(TOKEN_KEY, token);
  };
  window.addEventListener('appinstalled', keep);
  for (const q of INSTALLED_MODES) window.matchMedia(q).addEventListener('change', (e) => e.matches && keep());
  if (runsInstalled()) keep();
}

export class Api {
  readonly transport: Transport;
  readonly mode: 'ipc' | 'ws';

  constructor(
    transport: Transport,
    /** Headless UI token; null inside Electron. */
    readonly token: string | null,
  ) {
    this.transport = transport;
    this.mode = transport.kind;
  }

  async call<P extends ProcedureName>(procedure: P, input: ProcedureInput<P>): Promise<ProcedureOutput<P>> {
    const result = await this.transport.call(procedure, input);
    if (!result.ok) throw new ApiError(result.error.code, result.error.message, result.error.status);
    return result.value as ProcedureOutput<P>;
  }

  /**
   * Web mode: the browser downloads a file as an attachment by a one-use link (no UI token in
   * it, so the browser's download history holds nothing reusable).
   */
  async download(file: Pick<Resource, 'account' | 'id' | 'name'>): Promise<void> {
    const { url } = await this.call('files.downloadTicket', { account: file.account, id: file.id });
    const a = document.createElement('a');
    a.href = url;
    a.download = file.name;
    a.rel = 'noopener';
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  /** Web mode: files and folders of one account as one zip, downloaded by a one-use link. */
  async downloadZip(account: number, ids: string[]): Promise<void> {
    const { url } = await this.call('files.zipTicket', { account, ids });
    const a = document.createElement('a');
    a.href = url;
    a.rel = 'noopener';
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  /**
   * Web mode: uploads one file over HTTP with progress. Returns the created resource; `abort`
   * cancels it.
   */
  upload(
    file: File,
    target: { account: number; parent: string; conflict: 'rename' | 'overwrite' | 'fail'; transfer?: string },
    onProgress: (loaded: number, total: number) => void,
  ): { done: Promise<Resource>; abort(): void } {
    const q = new URLSearchParams({ account: String(target.account), parent: target.parent, name: file.name, conflict: target.conflict });
    // The server reports the bytes it wrote to the backend as uploads.progress of this id.
    if (target.transfer) q.set('transfer', target.transfer);
    return this.send<Resource>('POST', `/app/upload?${q}`, file, onProgress);
  }

  /** Web mode: one part of a multipart session (contract `uploads.begin`), with progress. */
  uploadPart(account: number, session: number, part: number, bytes: Blob, onProgress: (loaded: number) => void): { done: Promise<unknown>; abort(): void } {
    const q = new URLSearchParams({ account: String(account), session: String(session), part: String(part) });
    return this.send('PUT', `/app/upload/part?${q}`, bytes, (loaded) => onProgress(loaded));
  }

  /** An XHR (fetch has no upload progress) with the UI token; errors in the documented shape. */
  private send<T>(method: string, url: string, body: Blob, onProgress: (loaded: number, total: number) => void): { done: Promise<T>; abort(): void } {
    const xhr = new XMLHttpRequest();
    const done = new Promise<T>((resolve, reject) => {
      xhr.open(method, url);
      xhr.setRequestHeader('X-Tributary-Token', this.token ?? '');
      xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : body.size);
      xhr.onload = () => {
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(xhr.responseText || '{}');
        } catch {
          /* not JSON: reported below by status */
        }
        if (xhr.status >= 200 && xhr.status < 300) resolve(parsed as T);
        else reject(new ApiError(String(parsed.error_code ?? 'upload_failed'), String(parsed.message ?? `Upload failed (HTTP ${xhr.status}).`), xhr.status));
      };
      xhr.onerror = () => reject(new ApiError('service_not_available', 'The upload could not reach Tributary.', 0));
      xhr.onabort = () => reject(new ApiError('cancelled', 'Upload cancelled.', 0));
      xhr.send(body);
    });
    return { done, abort: () => xhr.abort() };
  }
}

export function createApi(): Api | { error: string } {
  if (window.tributary) return new Api(new IpcTransport(window.tributary), null);
  const token = takeToken();
  if (!token && runsInstalled()) {
    return { error: 'This installed app has no access token yet: open the link printed by `tributary serve` in this browser, then choose “Open in app” in the address bar.' };
  }
  if (!token) return { error: 'Open Tributary with the link printed by `tributary serve` (it carries the access token).' };
  keepTokenWhenInstalled();
  const proto = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
  return new Api(new WsTransport(`${proto}//${window.location.host}/ws?token=${encodeURIComponent(token)}`), token);
}

export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
