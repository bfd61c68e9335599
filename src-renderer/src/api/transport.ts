/**
 * The two ways the renderer reaches the main process. Both carry the same contract bodies:
 * a call is (procedure, input) → RpcResult; events are (name, payload).
 *
 * - IPC (inside Electron): the preload's `window.tributary.{invoke, subscribe}`.
 * - WebSocket (any browser against `tributary serve`): `/ws?token=T` on the page's own origin.
 */
import type { EventName, RpcResult, WsServerMessage } from '../../../src-main/contract';
import { WS_MAX_MESSAGE_BYTES } from '../../../src-main/contract/limits';

export type EventListener = (name: EventName, payload: unknown) => void;

export interface Transport {
  readonly kind: 'ipc' | 'ws';
  call(procedure: string, input: unknown): Promise<RpcResult<unknown>>;
  /** Every pushed event; returns the unsubscribe function. */
  subscribe(listener: EventListener): () => void;
  /** Called after the connection came back: events may have been missed meanwhile. */
  onReconnect(listener: () => void): () => void;
}

/** What the preload exposes, and nothing more. */
export interface TributaryBridge {
  invoke(procedure: string, input: unknown): Promise<RpcResult<unknown>>;
  subscribe(event: EventName, listener: (payload: unknown) => void): () => void;
}

declare global {
  interface Window {
    tributary?: TributaryBridge;
  }
}

const EVENT_NAMES: EventName[] = [
  'accounts.changed',
  'files.changed',
  'transfers.updated',
  'mail.changed',
  'mail.messages',
  'mail.outboxChanged',
  'activity.appended',
  'activity.subscriptionsChanged',
  'activity.followersChanged',
];

export class IpcTransport implements Transport {
  readonly kind = 'ipc' as const;
  constructor(private readonly bridge: TributaryBridge) {}

  call(procedure: string, input: unknown): Promise<RpcResult<unknown>> {
    return this.bridge.invoke(procedure, input);
  }

  subscribe(listener: EventListener): () => void {
    const offs = EVENT_NAMES.map((name) => this.bridge.subscribe(name, (payload) => listener(name, payload)));
    return () => offs.forEach((off) => off());
  }

  onReconnect(): () => void {
    // IPC never disconnects while the window lives.
    return () => {};
  }
}

interface Pending {
  resolve(result: RpcResult<unknown>): void;
}

/**
 * One WebSocket, opened lazily and reopened with backoff when it drops. Calls made while it is
 * (re)connecting wait in a queue; calls in flight when it drops fail with
 * service_not_available rather than hanging.
 */
export class WsTransport implements Transport {
  readonly kind = 'ws' as const;
  private socket: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private queue: string[] = [];
  private readonly listeners = new Set<EventListener>();
  private readonly reconnectListeners = new Set<() => void>();
  private backoff = 250;
  private everOpened = false;
  private closed = false;
  /** Why this transport will not connect again (its token was rotated away). */
  private deadReason: string | null = null;

  constructor(private readonly url: string) {}

  private connect(): void {
    if (this.socket || this.closed) return;
    const ws = new WebSocket(this.url);
    this.socket = ws;
    ws.onopen = () => {
      this.backoff = 250;
      for (const msg of this.queue) ws.send(msg);
      this.queue = [];
      if (this.everOpened) this.reconnectListeners.forEach((l) => l());
      this.everOpened = true;
    };
    ws.onmessage = (e) => {
      let msg: WsServerMessage;
      try {
        msg = JSON.parse(String(e.data)) as WsServerMessage;
      } catch {
        return;
      }
      if (msg.type === 'result') {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        p?.resolve(msg.result);
      } else if (msg.type === 'event') {
        this.listeners.forEach((l) => l(msg.name, msg.payload));
      }
    };
    ws.onclose = (e) => {
      this.socket = null;
      // Whatever was waiting fails now and is not re-sent later: a mutation the user was told
      // had failed must not happen behind their back after a reconnect.
      this.queue = [];
      // 4001: the UI token was rotated (Settings or `serve ui-token rotate`); this page's token is dead.
      if (e.code === 4001) {
        this.closed = true;
        this.deadReason = 'This link to Tributary is no longer valid (a new web UI link was made). Open Tributary with the new link.';
      }
      const message =
        this.deadReason ??
        (e.code === 1009
          ? 'That request was too large for Tributary (over 1 MiB); the connection was reset.'
          : this.everOpened
            ? 'The connection to Tributary was lost. Reconnecting…'
            : 'Cannot reach Tributary. Is `tributary serve` still running, and was this page opened with the link it printed?');
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.resolve({ ok: false, error: { code: 'service_not_available', message, status: 503 } });
      }
      if (this.closed) return;
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, 5000);
    };
  }

  call(procedure: string, input: unknown): Promise<RpcResult<unknown>> {
    const id = this.nextId++;
    const body = JSON.stringify({ type: 'call', id, procedure, input });
    if (this.deadReason) return Promise.resolve({ ok: false, error: { code: 'service_not_available', message: this.deadReason, status: 503 } });
    // The server would drop the connection (1009) on a message over its limit: say why instead.
    if (body.length > WS_MAX_MESSAGE_BYTES / 3 && new TextEncoder().encode(body).length > WS_MAX_MESSAGE_BYTES) {
      const message = `This request is too large to send (${Math.ceil(body.length / 1024)} KiB, at most ${WS_MAX_MESSAGE_BYTES / 1024} KiB): attach big images and files instead of pasting them.`;
      return Promise.resolve({ ok: false, error: { code: 'payload_too_large', message, status: 413 } });
    }
    return new Promise((resolve) => {
      this.pending.set(id, { resolve });
      this.connect();
      if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(body);
      else this.queue.push(body);
    });
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    this.connect();
    return () => this.listeners.delete(listener);
  }

  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    this.socket?.close();
  }
}
