/**
 * The outbox (table mail_outbox, migration 0580): every message leaves through it. A row waits
 * until its time (the undo-send delay, or a time chosen for "send later"), is handed to SMTP,
 * and is retried with backoff while the server cannot be reached; a refusal that retrying cannot
 * fix (authentication, a 5xx reply) fails it. A message SMTP accepted is "sent" from then on;
 * its copy to Sent is a second step with its own retries. Rows survive a restart: a row left
 * "sending" by a crash is sent again (SMTP may then deliver it twice; it is never lost).
 */
import type { Db } from '../cache/db';
import { nowIso } from '../cache/db';
import { ServiceError, invalid, notFound, toServiceError } from '../errors';
import type { EventBus } from '../services/events';
import type { MailEngine } from './engine';
import type { MessageKey } from './ids';
import type { MailSync } from './sync';
import type { MessageRow } from './store';

export type OutboxState = 'queued' | 'sending' | 'sent' | 'failed' | 'cancelled';

export interface OutboxRow {
  id: number;
  account_id: number;
  state: OutboxState;
  send_at_ms: number;
  next_attempt_ms: number;
  attempts: number;
  error: string | null;
  message_id: string;
  subject: string;
  sender: string;
  recipients: string;
  wire: Buffer;
  copy: Buffer | null;
  answers: string | null;
  copy_state: 'pending' | 'done' | 'failed';
  copy_attempts: number;
  copy_error: string | null;
  copy_folder: string | null;
  copy_uidvalidity: number | null;
  copy_uid: number | null;
  created: string;
  updated: string;
  sent_at: string | null;
}

/** What the outbox shows (the `mail.outbox` procedure). */
export interface OutboxItem {
  id: number;
  account: number;
  state: OutboxState;
  subject: string;
  recipients: string[];
  sendAt: string;
  /** When the next attempt runs (a queued row), else null. */
  nextAttemptAt: string | null;
  attempts: number;
  error: string | null;
  sentAt: string | null;
  /** The copy in Sent: pending (retried), done, or failed (given up). */
  copy: 'pending' | 'done' | 'failed';
  messageId: string;
}

/** A composed message as it enters the outbox. */
export interface Outgoing {
  messageId: string;
  subject: string;
  sender: string;
  recipients: string[];
  wire: Buffer;
  copy: Buffer;
  answers?: MessageKey;
}

export interface OutboxDeps {
  db: Db;
  engine: MailEngine;
  events: EventBus;
  /** Files a sent message in Sent (arrival time `date`); resolves to its cached row (undefined: not read back). */
  fileSent(account: number, sync: MailSync, raw: Buffer, messageId: string, date: Date): Promise<MessageRow | undefined>;
  /** Marks the answered message \Answered. */
  markAnswered(account: number, key: MessageKey): Promise<void>;
  now?: () => number;
}

/** Backoff of retries: 5 s, 10 s, 20 s ... at most 15 minutes. */
export const retryDelayMs = (attempt: number) => Math.min(5000 * 2 ** Math.max(0, attempt - 1), 15 * 60_000);
/** Copies to Sent are given up after this many attempts (the message itself was sent). */
const COPY_ATTEMPTS = 8;

/** A refusal retrying cannot fix: bad credentials, a 5xx SMTP reply, an invalid message. */
function permanent(e: ServiceError): boolean {
  if (e.code === 'upstream_auth_failed' || e.code === 'invalid_parameters' || e.code === 'not_found') return true;
  const cause = e.cause as { responseCode?: number } | undefined;
  return e.code === 'upstream_error' && typeof cause?.responseCode === 'number' && cause.responseCode >= 500;
}

export class MailOutbox {
  private timer: NodeJS.Timeout | null = null;
  private working: Promise<void> | null = null;
  private closed = false;
  /** Callers waiting for the first attempt of a row (REST send answers after it). */
  private readonly waiters = new Map<number, { resolve: (e: ServiceError | null) => void }[]>();
  private readonly now: () => number;

  constructor(private readonly deps: OutboxDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** At startup: a row a previous process left "sending" is sent again; timers are set. */
  start(): void {
    this.deps.db.prepare("UPDATE mail_outbox SET state = 'queued', updated = ? WHERE state = 'sending'").run(nowIso());
    this.kick();
  }

  row(id: number): OutboxRow | undefined {
    return this.deps.db.prepare('SELECT * FROM mail_outbox WHERE id = ?').get(id) as OutboxRow | undefined;
  }

  /** Queues a composed message to leave at `sendAtMs`; answers its outbox id. */
  enqueue(account: number, m: Outgoing, sendAtMs: number): number {
    const at = nowIso();
    const r = this.deps.db
      .prepare(
        `INSERT INTO mail_outbox (account_id, state, send_at_ms, next_attempt_ms, message_id, subject, sender, recipients, wire, copy, answers, created, updated)
         VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(account, sendAtMs, sendAtMs, m.messageId, m.subject, m.sender, JSON.stringify(m.recipients), m.wire, m.copy.equals(m.wire) ? null : m.copy, m.answers ? JSON.stringify(m.answers) : null, at, at);
    this.changed(account);
    this.kick();
    return Number(r.lastInsertRowid);
  }

  /** Resolves after the first attempt of row `id`: null when it was sent, else the error. */
  attempted(id: number): Promise<ServiceError | null> {
    return new Promise((resolve) => {
      const list = this.waiters.get(id) ?? [];
      list.push({ resolve });
      this.waiters.set(id, list);
    });
  }

  /** The outbox of an account: what waits, is being sent, failed, or whose copy to Sent is pending. */
  list(account: number): OutboxItem[] {
    const rows = this.deps.db
      .prepare(`SELECT * FROM mail_outbox WHERE account_id = ? AND (state IN ('queued', 'sending', 'failed') OR (state = 'sent' AND copy_state != 'done')) ORDER BY send_at_ms, id`)
      .all(account) as OutboxRow[];
    return rows.map(toItem);
  }

  item(account: number, id: number): OutboxItem {
    const r = this.row(id);
    if (!r || r.account_id !== account) throw notFound('The outbox message');
    return toItem(r);
  }

  /** Undo send / cancel a scheduled message: only while it waits. */
  cancel(account: number, id: number): OutboxItem {
    const r = this.item(account, id);
    const n = this.deps.db.prepare("UPDATE mail_outbox SET state = 'cancelled', updated = ? WHERE id = ? AND state IN ('queued', 'failed')").run(nowIso(), id).changes;
    if (!n) throw new ServiceError('conflict', r.state === 'sending' ? 'The message is being sent; it can no longer be cancelled.' : `The message is ${r.state}; only a waiting message can be cancelled.`);
    this.changed(account);
    this.kick();
    return this.item(account, id);
  }

  /** Sends a waiting (or failed) message now instead of at its time. */
  sendNow(account: number, id: number): OutboxItem {
    const r = this.item(account, id);
    const now = this.now();
    const n = this.deps.db
      .prepare("UPDATE mail_outbox SET state = 'queued', send_at_ms = min(send_at_ms, ?), next_attempt_ms = ?, error = NULL, updated = ? WHERE id = ? AND state IN ('queued', 'failed')")
      .run(now, now, nowIso(), id).changes;
    if (!n) throw new ServiceError('conflict', `The message is ${r.state}; only a waiting or failed message can be sent now.`);
    this.changed(account);
    this.kick();
    return this.item(account, id);
  }

  /** Sets the timer to the next due row (a send or a copy to Sent). */
  kick(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.working) return; // the running pass re-arms when it ends
    const next = this.deps.db
      .prepare("SELECT min(next_attempt_ms) FROM mail_outbox WHERE state = 'queued' OR (state = 'sent' AND copy_state = 'pending')")
      .pluck()
      .get() as number | null;
    if (next === null) return;
    const wait = Math.max(0, Math.min(next - this.now(), 2 ** 31 - 1));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.working = this.pass().finally(() => {
        this.working = null;
        this.kick();
      });
    }, wait);
  }

  /** Works through every due row, one at a time. */
  private async pass(): Promise<void> {
    const due = this.deps.db.prepare("SELECT id FROM mail_outbox WHERE (state = 'queued' OR (state = 'sent' AND copy_state = 'pending')) AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id").pluck();
    for (let ids = due.all(this.now()) as number[]; ids.length && !this.closed; ids = due.all(this.now()) as number[]) {
      for (const id of ids) {
        if (this.closed) return;
        const r = this.row(id);
        if (!r) continue;
        if (r.state === 'queued') await this.deliver(r);
        else if (r.state === 'sent' && r.copy_state === 'pending') await this.copy(r);
      }
    }
  }

  private set(id: number, patch: Record<string, unknown>): void {
    const keys = Object.keys(patch);
    this.deps.db.prepare(`UPDATE mail_outbox SET ${keys.map((k) => `${k} = @${k}`).join(', ')}, updated = @updated WHERE id = @id`).run({ ...patch, updated: nowIso(), id });
  }

  private async deliver(r: OutboxRow): Promise<void> {
    // Claimed only if still queued (a cancel may have come in since the row was read).
    if (!this.deps.db.prepare("UPDATE mail_outbox SET state = 'sending', attempts = attempts + 1, updated = ? WHERE id = ? AND state = 'queued'").run(nowIso(), r.id).changes) return;
    this.changed(r.account_id);
    let error: ServiceError | null = null;
    try {
      const connector = await this.deps.engine.connector(r.account_id);
      await connector.send(r.wire, { from: r.sender, to: JSON.parse(r.recipients) as string[] });
      this.set(r.id, { state: 'sent', error: null, sent_at: nowIso(), next_attempt_ms: this.now() });
    } catch (e) {
      error = toServiceError(e);
      const attempts = r.attempts + 1;
      if (permanent(error)) this.set(r.id, { state: 'failed', error: error.message });
      else this.set(r.id, { state: 'queued', error: error.message, next_attempt_ms: this.now() + retryDelayMs(attempts) });
    }
    this.changed(r.account_id);
    if (!error) await this.copy(this.row(r.id)!);
    const waiting = this.waiters.get(r.id);
    this.waiters.delete(r.id);
    for (const w of waiting ?? []) w.resolve(error);
  }

  /** Files the copy of a sent message in Sent; a failure is retried, the message stays sent. */
  private async copy(r: OutboxRow): Promise<void> {
    try {
      const sync = await this.deps.engine.ready(r.account_id);
      const row = await this.deps.fileSent(r.account_id, sync, r.copy ?? r.wire, r.message_id, new Date(r.sent_at ?? r.created));
      this.set(r.id, {
        copy_state: 'done',
        copy_error: null,
        copy_folder: row?.folder ?? null,
        copy_uidvalidity: row?.uidvalidity ?? null,
        copy_uid: row?.uid ?? null,
        // The message bytes are not kept once the copy is in Sent.
        wire: Buffer.alloc(0),
        copy: null,
      });
      if (r.answers) await this.deps.markAnswered(r.account_id, JSON.parse(r.answers) as MessageKey).catch(() => {});
    } catch (e) {
      const attempts = r.copy_attempts + 1;
      const message = toServiceError(e).message;
      if (attempts >= COPY_ATTEMPTS) this.set(r.id, { copy_state: 'failed', copy_attempts: attempts, copy_error: message });
      else this.set(r.id, { copy_attempts: attempts, copy_error: message, next_attempt_ms: this.now() + retryDelayMs(attempts) });
    }
    this.changed(r.account_id);
  }

  private changed(account: number): void {
    this.deps.events.emit('mail.outboxChanged', { account });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.working;
  }
}

function toItem(r: OutboxRow): OutboxItem {
  return {
    id: r.id,
    account: r.account_id,
    state: r.state,
    subject: r.subject,
    recipients: JSON.parse(r.recipients) as string[],
    sendAt: new Date(r.send_at_ms).toISOString(),
    nextAttemptAt: r.state === 'queued' ? new Date(r.next_attempt_ms).toISOString() : null,
    attempts: r.attempts,
    error: r.error ?? (r.state === 'sent' ? r.copy_error : null),
    sentAt: r.sent_at,
    copy: r.copy_state,
    messageId: r.message_id,
  };
}

/** Checks a "send later" time: an ISO 8601 time, at most a year ahead. */
export function parseSendAt(v: unknown, now: number): number {
  if (v === undefined || v === null) return now;
  const ms = typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw invalid('send_at must be an ISO 8601 time.');
  if (ms > now + 366 * 86_400_000) throw invalid('send_at is at most a year ahead.');
  return Math.max(ms, now);
}
