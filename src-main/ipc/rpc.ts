/**
 * The contract over Electron IPC: one `rpc` channel (invoke → RpcResult) and one `event`
 * channel (main → renderer). A call is answered only when it comes from our own page in the
 * top frame; its input is parsed with the contract's zod schema before any handler runs.
 */
import type { BrowserWindow, IpcMain, IpcMainInvokeEvent } from 'electron';
import { procedures, type Handlers, type RpcResult } from '../contract';
import type { EventBus } from '../services/events';
import { dispatch } from '../rpc/dispatch';

export const RPC_CHANNEL = 'rpc';
export const EVENT_CHANNEL = 'event';

const refuse = (message: string): RpcResult<never> => ({ ok: false, error: { code: 'forbidden', message, status: 403 } });

export function registerRpc(ipcMain: IpcMain, handlers: Handlers, isTrustedUrl: (url: string) => boolean): () => void {
  ipcMain.handle(RPC_CHANNEL, async (event: IpcMainInvokeEvent, procedure: unknown, input: unknown): Promise<RpcResult<unknown>> => {
    const frame = event.senderFrame;
    // Only our page, in its top frame: never an iframe or anything that navigated elsewhere.
    if (!frame || frame.parent !== null || !isTrustedUrl(frame.url)) return refuse('Calls are only accepted from Tributary’s own window.');
    if (typeof procedure !== 'string' || !Object.hasOwn(procedures, procedure)) {
      return { ok: false, error: { code: 'not_found', message: `Unknown procedure "${String(procedure)}".`, status: 404 } };
    }
    return dispatch(handlers, procedure, input);
  });
  return () => ipcMain.removeHandler(RPC_CHANNEL);
}

/** Forwards every event of the contract to every window showing our page. */
export function forwardEvents(events: EventBus, windows: () => BrowserWindow[], isTrustedUrl: (url: string) => boolean): () => void {
  return events.onAny((name, payload) => {
    for (const win of windows()) {
      const wc = win.webContents;
      if (!wc.isDestroyed() && isTrustedUrl(wc.getURL())) wc.send(EVENT_CHANNEL, name, payload);
    }
  });
}
