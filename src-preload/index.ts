/**
 * The preload: the only bridge between the sandboxed renderer and the main process. It exposes
 * exactly `window.tributary = { invoke, subscribe }` and nothing else.
 *
 * Local paths of dropped or picked files: Electron no longer puts `path` on File objects and the
 * renderer cannot read it. Rather than exposing a third member, `invoke` resolves them: any
 * File object found in the input of `files.uploadPaths` (in `paths`) or `files.uploadPath` (in
 * `path`) is replaced by its path
 * from `webUtils.getPathForFile` before the call crosses to the main process. The renderer
 * never sees the path; a File without one (e.g. built in script) fails with a clear error, and
 * plain path strings are refused.
 */
import { contextBridge, ipcRenderer, webUtils, type IpcRendererEvent } from 'electron';

type Listener = (payload: unknown) => void;

function resolveFiles(procedure: string, input: unknown): unknown {
  // Where a download lands is the user's choice in the save dialog, never the page's: a
  // compromised page must not be able to write ~/.bashrc.
  if (procedure === 'files.download' && input && typeof input === 'object' && 'to' in input) {
    throw new Error('The page cannot choose where a download is saved.');
  }
  if (procedure === 'files.uploadPath') {
    const body = (input ?? {}) as { path?: unknown };
    return { ...body, path: pathOf(body.path, procedure) };
  }
  if (procedure !== 'files.uploadPaths') return input;
  const body = (input ?? {}) as { paths?: unknown };
  if (!Array.isArray(body.paths)) throw new Error('files.uploadPaths takes the dropped or picked File objects.');
  // File objects only: they exist only after the user dropped or picked them. A path string
  // from the page is refused, so a compromised page cannot make us upload ~/.ssh/id_rsa.
  return { ...body, paths: body.paths.map((p: unknown) => pathOf(p, procedure)) };
}

/** The local path of a File the user dropped or picked; anything else is refused. */
function pathOf(file: unknown, procedure: string): string {
  if (!(file instanceof File)) throw new Error(`${procedure} takes the dropped or picked File objects, not paths.`);
  const path = webUtils.getPathForFile(file);
  if (!path) throw new Error(`"${file.name}" is not a file on this computer.`);
  return path;
}

const api = {
  async invoke(procedure: string, input: unknown): Promise<unknown> {
    if (typeof procedure !== 'string') throw new TypeError('procedure must be a string');
    let resolved: unknown;
    try {
      resolved = resolveFiles(procedure, input);
    } catch (e) {
      return { ok: false, error: { code: 'invalid_parameters', message: (e as Error).message, status: 400 } };
    }
    return ipcRenderer.invoke('rpc', procedure, resolved);
  },
  subscribe(event: string, listener: Listener): () => void {
    if (typeof event !== 'string' || typeof listener !== 'function') throw new TypeError('subscribe(event, listener)');
    // The IpcRendererEvent (with its sender) is never handed to the page.
    const handler = (_e: IpcRendererEvent, name: string, payload: unknown) => {
      if (name === event) listener(payload);
    };
    ipcRenderer.on('event', handler);
    return () => {
      ipcRenderer.removeListener('event', handler);
    };
  },
};

contextBridge.exposeInMainWorld('tributary', api);
