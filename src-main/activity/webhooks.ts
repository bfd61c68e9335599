/**
 * Webhook notifications (spec 3, JSON webhook and Legacy webhooks).
 *
 * Creation tests the receiver with a POST of `{}` that must be answered 200 with exactly the
 * application id; otherwise nothing is saved. Afterwards every committed batch of activity queues
 * one notification per (webhook, subscription): a POST of `{account, subscription}` (JSON, or
 * URL-encoded for legacy webhooks), signed with `X-Service-Signature` = Base64(HMAC-SHA256(oldest
 * active API key, exact body)). A delivery succeeds on any status below 500 within 3.05 s connect
 * + 27 s read; failures are retried with exponential back-off from 1 s up to 15 min; after 24 h
 * of continuous failure the webhook is paused until new activity arrives. Every attempt is
 * persisted. Receivers are reached only where the outbound rules allow (services/outbound.ts) and
 * at most MAX_ANSWER_BYTES of an answer are read. The clock and timers are injectable so tests can
 * run the schedule on a fake clock.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Agent } from 'undici';
import type { Db } from '../cache/db';
import type { SettingsStore } from '../cache/queries/settings';
import { ServiceError } from '../errors';
import { guardedAgent, outboundPolicy, readCapped, refusedReason, undici, UNREACHABLE } from '../services/outbound';
import { DeliveryQueue, NEVER, type DeliveryOptions, type QueueRowBase } from './delivery-queue';
import type { AppendedInfo, ActivityLog } from './log';
import { webhookBody } from './notifications';
import type { Clock } from './types';

export const APPLICATION_ID = 'activity.applicationId';
export const USER_AGENT = 'service-webhook/2.0';
export const TIMEOUTS = { connectMs: 3050, readMs: 27_000 };
/** Bytes of a receiver's answer read (the test needs only the application id); the rest is never read. */
export const MAX_ANSWER_BYTES = 4096;

export interface Webhook {
  id: number;
  url: string;
  format: 'json' | 'form';
  /** Only this account's activity; null = every account. */
  account: number | null;
  failingSince: string | null;
  paused: boolean;
  created: string;
}

export interface DeliveryAttempt {
  id: number;
  webhook: number;
  account: number | null;
  subscription: number | null;
  kind: 'test' | 'notify';
  at: string;
  status: number | null;
  error: string | null;
  ok: boolean;
  durationMs: number;
  nextAttemptAt: string | null;
}

export function sign(key: string, body: string): string {
  return createHmac('sha256', key).update(body, 'utf8').digest('base64');
}

interface HookRow {
  id: number;
  url: string;
  format: 'json' | 'form';
  account_id: number | null;
  failing_since: string | null;
  paused: number;
  created: string;
}
interface QueueRow extends QueueRowBase {
  webhook_id: number;
}

export class WebhooksService {
  /** Made with the first request: receivers are reached only where Settings → Network allows (private addresses are not by default). */
  private agent?: Promise<Agent>;
  private readonly queue: DeliveryQueue<QueueRow>;
  private readonly off: () => void;

  constructor(
    private readonly db: Db,
    log: ActivityLog,
    private readonly settings: SettingsStore,
    /** The oldest active API key (src-main/services/api-keys.ts), null when there is none. */
    private readonly signingKey: () => string | null,
    options: DeliveryOptions = {},
  ) {
    this.queue = new DeliveryQueue(db, 'activity_webhook_queue', 'webhook_id', (q) => this.deliver(q), options);
    this.off = log.onAppended((info) => this.enqueue(info));
    this.queue.arm();
  }

  private get clock(): Clock {
    return this.queue.clock;
  }

  /** The application id receivers must echo on the creation test (a setting, made once). */
  applicationId(): string {
    let id = this.settings.get<string | null>(APPLICATION_ID, null);
    if (!id) {
      id = `tributary-${randomUUID()}`;
      this.settings.set(APPLICATION_ID, id);
    }
    return id;
  }

  list(): Webhook[] {
    return (this.db.prepare('SELECT * FROM activity_webhooks ORDER BY id').all() as HookRow[]).map(toHook);
  }

  get(id: number): Webhook {
    const row = this.db.prepare('SELECT * FROM activity_webhooks WHERE id = ?').get(id) as HookRow | undefined;
    if (!row) throw new ServiceError('not_found', `Webhook ${id} was not found.`);
    return toHook(row);
  }

  /** Tests the receiver, then saves the webhook; throws (and saves nothing) when the test fails. */
  async create(input: { url: string; format?: 'json' | 'form'; account?: number | null }): Promise<Webhook> {
    const url = receiverUrl(input.url);
    const format = input.format ?? 'json';
    if (format !== 'json' && format !== 'form') throw new ServiceError('invalid_parameters', '`format` must be `json` or `form`.');
    const body = format === 'json' ? '{}' : '';
    const r = await this.post(url.href, format, body);
    const expected = this.applicationId();
    if (r.status !== 200 || r.body.trim() !== expected) {
      const got = r.error ?? `status ${r.status}${r.status === 200 ? ' with a body other than the application id' : ''}`;
      throw new ServiceError('invalid_parameters', `The webhook test failed (${got}); the receiver must answer the test POST of {} with status 200 and the application id "${expected}" as the body. The webhook was not saved.`);
    }
    const now = new Date(this.clock()).toISOString();
    const id = this.db.transaction(() => {
      const row = this.db.prepare('INSERT INTO activity_webhooks (url, format, account_id, created) VALUES (?, ?, ?, ?)').run(url.href, format, input.account ?? null, now);
      const hid = Number(row.lastInsertRowid);
      this.record(hid, null, null, 'test', r, null);
      return hid;
    })();
    return this.get(id);
  }

  delete(id: number): void {
    this.get(id);
    this.db.prepare('DELETE FROM activity_webhooks WHERE id = ?').run(id);
  }

  attempts(webhookId: number, limit = 100): DeliveryAttempt[] {
    const rows = this.db.prepare('SELECT * FROM activity_webhook_attempts WHERE webhook_id = ? ORDER BY id DESC LIMIT ?').all(webhookId, limit) as {
      id: number; webhook_id: number; account_id: number | null; subscription_id: number | null; kind: 'test' | 'notify'; at: string; status: number | null; error: string | null; ok: number; duration_ms: number; next_attempt_at: string | null;
    }[];
    return rows.map((r) => ({ id: r.id, webhook: r.webhook_id, account: r.account_id, subscription: r.subscription_id, kind: r.kind, at: r.at, status: r.status, error: r.error, ok: r.ok === 1, durationMs: r.duration_ms, nextAttemptAt: r.next_attempt_at }));
  }

  /** Pending notifications with their next try (epoch ms), for the dashboard. */
  pending(): { webhook: number; account: number; subscription: number; attempts: number; nextAttemptAt: number | null }[] {
    return (this.db.prepare('SELECT * FROM activity_webhook_queue ORDER BY next_attempt_at').all() as QueueRow[]).map((q) => ({
      webhook: q.webhook_id, account: q.account_id, subscription: q.subscription_id, attempts: q.attempts, nextAttemptAt: q.next_attempt_at === NEVER ? null : q.next_attempt_at,
    }));
  }

  /** New activity: queue a notification for each matching webhook; re-arms paused ones. */
  private enqueue(info: AppendedInfo): void {
    this.queue.enqueueActivity('activity_webhooks', info, (hook) => {
      this.db.prepare('UPDATE activity_webhooks SET paused = 0, failing_since = CASE WHEN paused = 1 THEN NULL ELSE failing_since END WHERE id = ?').run(hook);
    });
  }

  /** Delivers every notification due by the clock now; resolves when they are all attempted. */
  runDue(): Promise<void> {
    return this.queue.runDue();
  }

  private async deliver(q: QueueRow): Promise<void> {
    const hook = this.db.prepare('SELECT * FROM activity_webhooks WHERE id = ?').get(q.webhook_id) as HookRow | undefined;
    if (!hook) return;
    const payload = webhookBody(q.account_id, q.subscription_id);
    const body = hook.format === 'json' ? JSON.stringify(payload) : new URLSearchParams({ account: String(payload.account), subscription: String(payload.subscription) }).toString();
    const r = await this.post(hook.url, hook.format, body);
    this.db.transaction(() => {
      if (r.ok) {
        this.db.prepare('DELETE FROM activity_webhook_queue WHERE webhook_id = ? AND subscription_id = ? AND next_attempt_at <= ?').run(q.webhook_id, q.subscription_id, q.next_attempt_at);
        this.db.prepare('UPDATE activity_webhooks SET failing_since = NULL, paused = 0 WHERE id = ?').run(hook.id);
        this.record(hook.id, q.account_id, q.subscription_id, 'notify', r, null);
        return;
      }
      const { failingSince, giveUp, next } = this.queue.failed(hook.id, q, hook.failing_since);
      this.db.prepare('UPDATE activity_webhooks SET failing_since = ?, paused = ? WHERE id = ?').run(failingSince, giveUp ? 1 : 0, hook.id);
      this.record(hook.id, q.account_id, q.subscription_id, 'notify', r, giveUp ? null : new Date(next).toISOString());
    })();
  }

  private record(hook: number, account: number | null, sub: number | null, kind: 'test' | 'notify', r: PostResult, next: string | null): void {
    this.db
      .prepare('INSERT INTO activity_webhook_attempts (webhook_id, account_id, subscription_id, kind, at, status, error, ok, duration_ms, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(hook, account, sub, kind, new Date(r.at).toISOString(), r.status, r.error, r.ok ? 1 : 0, r.durationMs, next);
  }

  private async post(url: string, format: 'json' | 'form', body: string): Promise<PostResult> {
    const at = this.clock();
    const started = performance.now();
    const headers: Record<string, string> = {
      'content-type': format === 'json' ? 'application/json' : 'application/x-www-form-urlencoded',
      'user-agent': USER_AGENT,
    };
    const key = this.signingKey();
    if (key) headers['x-service-signature'] = sign(key, body);
    try {
      this.agent ??= guardedAgent(() => outboundPolicy(this.settings), { connectTimeoutMs: TIMEOUTS.connectMs, headersTimeoutMs: TIMEOUTS.readMs, bodyTimeoutMs: TIMEOUTS.readMs });
      const res = await (await undici()).request(url, { method: 'POST', headers, body, dispatcher: await this.agent });
      const text = await readCapped(res.body, MAX_ANSWER_BYTES);
      return { at, status: res.statusCode, body: text, error: null, ok: res.statusCode < 500, durationMs: Math.round(performance.now() - started) };
    } catch (e) {
      // A refused target says why; every other failure reads the same (no open/closed port oracle).
      const refused = refusedReason(e);
      return { at, status: null, body: '', error: refused ? `refused: ${refused}` : UNREACHABLE, ok: false, durationMs: Math.round(performance.now() - started) };
    }
  }

  async close(): Promise<void> {
    this.off();
    await this.queue.close();
    await (await this.agent)?.close();
  }
}

interface PostResult {
  at: number;
  status: number | null;
  body: string;
  error: string | null;
  ok: boolean;
  durationMs: number;
}

/** The longest webhook URL taken (docs/rest.md, Webhooks): what browsers and servers commonly accept. */
const MAX_WEBHOOK_URL = 2048;

/**
 * A receiver's URL: absolute http(s), at most MAX_WEBHOOK_URL characters as given and as stored,
 * and without credentials, since webhook URLs are listed to every API key holder and in the app
 * (a receiver authenticates Tributary by the `X-Service-Signature` of each notification).
 */
function receiverUrl(value: string): URL {
  const url = value.length <= MAX_WEBHOOK_URL && URL.canParse(value) ? new URL(value) : undefined;
  if (!url || url.href.length > MAX_WEBHOOK_URL || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ServiceError('invalid_parameters', `\`url\` must be an absolute http(s) URL of at most ${MAX_WEBHOOK_URL} characters.`);
  }
  if (url.username || url.password) {
    throw new ServiceError(
      'invalid_parameters',
      '`url` must not contain a user name or password: webhook URLs are listed in clear. Verify the `X-Service-Signature` header (Base64 HMAC-SHA256 of the body with your oldest active API key) to know a notification comes from Tributary.',
    );
  }
  return url;
}

function toHook(r: HookRow): Webhook {
  return { id: r.id, url: r.url, format: r.format, account: r.account_id, failingSince: r.failing_since, paused: r.paused === 1, created: r.created };
}
