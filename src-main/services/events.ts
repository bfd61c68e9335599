/**
 * The in-process event bus. Services publish here after each committed change; the transports
 * (IPC, WebSocket) forward every event of the contract to the renderer.
 */
import { EventEmitter } from 'node:events';
import type { EventName, EventPayload } from '../contract';

export class EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  emit<E extends EventName>(name: E, payload: EventPayload<E>): void {
    this.emitter.emit(name, payload);
    this.emitter.emit('*', name, payload);
  }

  on<E extends EventName>(name: E, listener: (payload: EventPayload<E>) => void): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /** Every event, for transports that forward them all. */
  onAny(listener: (name: EventName, payload: unknown) => void): () => void {
    this.emitter.on('*', listener);
    return () => this.emitter.off('*', listener);
  }
}
