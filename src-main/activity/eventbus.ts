/**
 * Event-bus delivery (spec 3, Event-bus event) to AWS EventBridge: after each committed batch of
 * activity, every configured bus whose account filter matches gets the new activity of that
 * subscription as events of detail-type `eventbus_webhook_notification` whose `detail` is
 * `{account, subscription, activity: {v1: [...]}}` (PutEvents; EventBridge itself fills in the
 * outer `account`, `region` and `id`). Unlike a webhook, the message carries the activity, so
 * what was delivered is tracked per (bus, subscription) as the last activity seq sent: a failed
 * or interrupted delivery resumes there, in order (a partly accepted PutEvents may repeat the
 * events after the first refused one — the spec allows duplicates, not gaps). Failures are
 * retried with the webhooks' back-off (1 s doubling to 15 min); after 24 h of continuous failure
 * a bus waits for new activity. Activity purged by retention before it could be sent is gone.
 */
import type { EventBridgeClient, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { Db } from '../cache/db';
import { ServiceError } from '../errors';
import type { Keyring } from '../secrets';
import type { ActivityLog, AppendedInfo } from './log';
import { eventBusEntry } from './notifications';
import { DeliveryQueue, NEVER, type DeliveryOptions, type QueueRowBase } from './delivery-queue';
import type { ActivityRecord, Clock } from './types';

export interface EventBus {
  id: number;
  /** Only this account's activity; null = every account. */
  account: number | null;
  region: string;
  eventBusName: string;
  source: string;
  endpoint: string | null;
  /** Whether own credentials are stored (they are never read back). */
  hasCredentials: boolean;
  failingSince: string | null;
  lastError: string | null;
  created: string;
}

export interface EventBusInput {
  account?: number | null;
  region: string;
  eventBusName?: string;
  source?: string;
  endpoint?: string | null;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** Activities per event, and the most bytes of one event's `detail` (PutEvents takes 256 KB per entry). */
export const MAX_PER_EVENT = 25;
export const MAX_DETAIL_BYTES = 200_000;
/** PutEvents takes at most 10 entries per call. */
const ENTRIES_PER_CALL = 10;

interface BusRow {
  id: number;
  account_id: number | null;
  region: string;
  event_bus_name: string;
  source: string;
  endpoint: string | null;
  credentials: Buffer | null;
  failing_since: string | null;
  last_error: string | null;
  created: string;
}
interface QueueRow extends QueueRowBase {
  bus_id: number;
  delivered_seq: number;
}

/** The AWS SDK's EventBridge client, loaded when a bus is first added or delivered to. */
const eventBridge = () => import('@aws-sdk/client-eventbridge');

const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

export class EventBusDelivery {
  private readonly clients = new Map<number, EventBridgeClient>();
  private readonly queue: DeliveryQueue<QueueRow>;
  private readonly off: () => void;

  constructor(
    private readonly db: Db,
    private readonly log: ActivityLog,
    private readonly keyring: Keyring,
    /** v1 activity as the REST API renders it (spec 3, Activity v1). */
    private readonly renderV1: (r: ActivityRecord) => Record<string, unknown>,
    /** The default `source`: a namespace, then partner id and api id (spec 3). */
    private readonly defaultSource: () => string,
    options: DeliveryOptions = {},
  ) {
    this.queue = new DeliveryQueue(db, 'activity_event_bus_queue', 'bus_id', (q) => this.deliver(q), options);
    this.off = log.onAppended((info) => this.enqueue(info));
    this.queue.arm();
  }

  private get clock(): Clock {
    return this.queue.clock;
  }

  list(): EventBus[] {
    return (this.db.prepare('SELECT * FROM activity_event_buses ORDER BY id').all() as BusRow[]).map(toBus);
  }

  get(id: number): EventBus {
    return toBus(this.row(id));
  }

  private row(id: number): BusRow {
    const row = this.db.prepare('SELECT * FROM activity_event_buses WHERE id = ?').get(id) as BusRow | undefined;
    if (!row) throw new ServiceError('not_found', `Event bus ${id} was not found.`);
    return row;
  }

  /**
   * Checks that the bus exists and the credentials may see it (DescribeEventBus), then saves it;
   * nothing is saved when the check fails.
   */
  async create(input: EventBusInput): Promise<EventBus> {
    if (typeof input.region !== 'string' || !REGION.test(input.region)) throw new ServiceError('invalid_parameters', '`region` must be an AWS region such as eu-west-1.');
    const eventBusName = input.eventBusName ?? 'default';
    if (typeof eventBusName !== 'string' || !/^[\w.\-/:]{1,1600}$/.test(eventBusName)) throw new ServiceError('invalid_parameters', '`event_bus_name` must be an event bus name or ARN.');
    const source = input.source ?? this.defaultSource();
    if (typeof source !== 'string' || source.length < 1 || source.length > 256 || source.startsWith('aws.')) {
      throw new ServiceError('invalid_parameters', '`source` must be 1-256 characters and not start with `aws.` (reserved by AWS for its own events).');
    }
    let endpoint: string | null = null;
    if (input.endpoint !== undefined && input.endpoint !== null) {
      let url: URL;
      try {
        url = new URL(input.endpoint);
      } catch {
        throw new ServiceError('invalid_parameters', '`endpoint` must be an http(s) URL.');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ServiceError('invalid_parameters', '`endpoint` must be an http(s) URL.');
      endpoint = url.origin;
    }
    const hasKey = input.accessKeyId !== undefined || input.secretAccessKey !== undefined;
    if (hasKey && (typeof input.accessKeyId !== 'string' || !input.accessKeyId || typeof input.secretAccessKey !== 'string' || !input.secretAccessKey)) {
      throw new ServiceError('invalid_parameters', '`access_key_id` and `secret_access_key` go together.');
    }
    const credentials = hasKey ? this.keyring.seal('credentials', Buffer.from(JSON.stringify({ accessKeyId: input.accessKeyId, secretAccessKey: input.secretAccessKey }))) : null;
    const probe = await this.client({ id: 0, account_id: null, region: input.region, event_bus_name: eventBusName, source, endpoint, credentials, failing_since: null, last_error: null, created: '' });
    try {
      const { DescribeEventBusCommand } = await eventBridge();
      await probe.send(new DescribeEventBusCommand({ Name: eventBusName }));
    } catch (e) {
      throw new ServiceError('invalid_parameters', `The event bus could not be reached with these settings (${awsMessage(e)}); it was not saved.`);
    } finally {
      probe.destroy();
    }
    const now = new Date(this.clock()).toISOString();
    const row = this.db
      .prepare('INSERT INTO activity_event_buses (account_id, region, event_bus_name, source, endpoint, credentials, created) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(input.account ?? null, input.region, eventBusName, source, endpoint, credentials, now);
    return this.get(Number(row.lastInsertRowid));
  }

  delete(id: number): void {
    this.row(id);
    this.db.prepare('DELETE FROM activity_event_buses WHERE id = ?').run(id);
    this.clients.get(id)?.destroy();
    this.clients.delete(id);
  }

  /** New activity: each matching bus gets it from where its delivery of that subscription stands. */
  private enqueue(info: AppendedInfo): void {
    const prepare = (bus: number) => {
      // A bus that gave up (nothing pending) starts counting its failures afresh.
      if (!this.queue.hasPending(bus)) this.db.prepare('UPDATE activity_event_buses SET failing_since = NULL WHERE id = ?').run(bus);
    };
    this.queue.enqueueActivity('activity_event_buses', info, prepare, { delivered_seq: info.firstSeq - 1 });
  }

  /** Delivers everything due by the clock now; resolves when it has all been attempted. */
  runDue(): Promise<void> {
    return this.queue.runDue();
  }

  private async deliver(q: QueueRow): Promise<void> {
    const bus = this.db.prepare('SELECT * FROM activity_event_buses WHERE id = ?').get(q.bus_id) as BusRow | undefined;
    if (!bus) return;
    let delivered = q.delivered_seq;
    let error: string | null = null;
    try {
      for (;;) {
        const records = this.log.after(q.subscription_id, delivered, MAX_PER_EVENT * ENTRIES_PER_CALL);
        if (!records.length) break;
        const events = this.events(bus, q, records);
        const { PutEventsCommand } = await eventBridge();
        const out = await (await this.client(bus)).send(new PutEventsCommand({ Entries: events.map((e) => e.entry) }));
        // Entries are answered in order; everything before the first refused one is delivered.
        const firstFailed = (out.Entries ?? []).findIndex((e) => e.ErrorCode);
        const accepted = firstFailed === -1 ? events.length : firstFailed;
        if (accepted > 0) delivered = events[accepted - 1]!.lastSeq;
        this.db.prepare('UPDATE activity_event_bus_queue SET delivered_seq = ? WHERE bus_id = ? AND subscription_id = ?').run(delivered, q.bus_id, q.subscription_id);
        if (firstFailed !== -1) {
          const failed = out.Entries![firstFailed]!;
          throw new Error(`${failed.ErrorCode}: ${failed.ErrorMessage ?? 'the event was refused'}`);
        }
      }
    } catch (e) {
      error = awsMessage(e);
    }
    this.db.transaction(() => {
      if (error === null) {
        // Done unless new activity arrived meanwhile (enqueue only moves a row that is waiting).
        this.db.prepare(`UPDATE activity_event_bus_queue SET attempts = 0, next_attempt_at = ${NEVER} WHERE bus_id = ? AND subscription_id = ?`).run(q.bus_id, q.subscription_id);
        this.db.prepare('UPDATE activity_event_buses SET failing_since = NULL, last_error = NULL WHERE id = ?').run(bus.id);
        return;
      }
      const { failingSince } = this.queue.failed(bus.id, q, bus.failing_since);
      this.db.prepare('UPDATE activity_event_buses SET failing_since = ?, last_error = ? WHERE id = ?').run(failingSince, error, bus.id);
    })();
  }

  /** The records as PutEvents entries of at most MAX_PER_EVENT activities and MAX_DETAIL_BYTES each. */
  private events(bus: BusRow, q: QueueRow, records: ActivityRecord[]): { entry: PutEventsRequestEntry; lastSeq: number }[] {
    const out: { entry: PutEventsRequestEntry; lastSeq: number }[] = [];
    let batch: { v1: Record<string, unknown>; seq: number }[] = [];
    let bytes = 0;
    const flush = () => {
      if (!batch.length) return;
      const entry = eventBusEntry({ source: bus.source, eventBusName: bus.event_bus_name }, q.account_id, q.subscription_id, batch.map((b) => b.v1), new Date(this.clock()));
      out.push({ entry, lastSeq: batch[batch.length - 1]!.seq });
      batch = [];
      bytes = 0;
    };
    for (const r of records) {
      const v1 = this.renderV1(r);
      const size = Buffer.byteLength(JSON.stringify(v1));
      if (batch.length && (batch.length >= MAX_PER_EVENT || bytes + size > MAX_DETAIL_BYTES)) flush();
      if (out.length === ENTRIES_PER_CALL) break;
      batch.push({ v1, seq: r.seq });
      bytes += size;
    }
    if (out.length < ENTRIES_PER_CALL) flush();
    return out;
  }

  private async client(bus: BusRow): Promise<EventBridgeClient> {
    // Loaded first: from here on nothing waits, so two deliveries to a bus share one client.
    const { EventBridgeClient } = await eventBridge();
    const cached = bus.id ? this.clients.get(bus.id) : undefined;
    if (cached) return cached;
    const credentials = bus.credentials ? (JSON.parse(this.keyring.open('credentials', bus.credentials).toString('utf8')) as { accessKeyId: string; secretAccessKey: string }) : undefined;
    const client = new EventBridgeClient({ region: bus.region, ...(bus.endpoint ? { endpoint: bus.endpoint } : {}), ...(credentials ? { credentials } : {}), maxAttempts: 1 });
    if (bus.id) this.clients.set(bus.id, client);
    return client;
  }

  /** Pending deliveries, for the dashboard and the API. */
  pending(busId: number): { account: number; subscription: number; deliveredSeq: number; attempts: number; nextAttemptAt: number | null }[] {
    return (this.db.prepare('SELECT * FROM activity_event_bus_queue WHERE bus_id = ? ORDER BY subscription_id').all(busId) as QueueRow[]).map((q) => ({
      account: q.account_id,
      subscription: q.subscription_id,
      deliveredSeq: q.delivered_seq,
      attempts: q.attempts,
      nextAttemptAt: q.next_attempt_at === NEVER ? null : q.next_attempt_at,
    }));
  }

  async close(): Promise<void> {
    this.off();
    await this.queue.close();
    for (const c of this.clients.values()) c.destroy();
    this.clients.clear();
  }
}

function awsMessage(e: unknown): string {
  const err = e as { name?: string; message?: string; code?: string };
  const text = [err.name && err.name !== 'Error' ? err.name : err.code, err.message].filter(Boolean).join(': ');
  return (text || String(e)).slice(0, 500);
}

function toBus(r: BusRow): EventBus {
  return {
    id: r.id,
    account: r.account_id,
    region: r.region,
    eventBusName: r.event_bus_name,
    source: r.source,
    endpoint: r.endpoint,
    hasCredentials: r.credentials !== null,
    failingSince: r.failing_since,
    lastError: r.last_error,
    created: r.created,
  };
}
