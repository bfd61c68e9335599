/**
 * Typed emitters for the mail events of contract/mail.ts. The bus is typed by contract/index.ts,
 * which does not list them until the lead merges `mailEvents`; this is the one cast.
 */
import type { z } from 'zod';
import type { mailEvents } from '../contract/mail';
import type { EventBus } from '../services/events';

export type MailEventName = keyof typeof mailEvents;
export type MailEventPayload<E extends MailEventName> = z.output<(typeof mailEvents)[E]>;

export function emitMail<E extends MailEventName>(bus: EventBus, name: E, payload: MailEventPayload<E>): void {
  (bus as unknown as { emit(name: string, payload: unknown): void }).emit(name, payload);
}

export function onMail<E extends MailEventName>(bus: EventBus, name: E, listener: (payload: MailEventPayload<E>) => void): () => void {
  return (bus as unknown as { on(name: string, l: (p: unknown) => void): () => void }).on(name, listener as (p: unknown) => void);
}
