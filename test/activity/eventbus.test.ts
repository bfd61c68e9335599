/**
 * spec 3, Event-bus event: activity is delivered to AWS EventBridge (PutEvents) as events of
 * detail-type `eventbus_webhook_notification` whose `detail` is `{account, subscription,
 * activity: {v1: [...]}}`, against moto_server's EventBridge with a rule whose target is an SQS
 * queue that records what arrives, and a rule whose pattern filters on `detail` (moto 5.2 does
 * not match inside the `detail.activity.v1` array, so the spec's example pattern on `type` cannot
 * be checked here). A delivery that fails resumes, in order, where it stopped.
 */
import { CreateEventBusCommand, DeleteEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand, RemoveTargetsCommand, DeleteRuleCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generated, until } from './helpers';
import { importLocal, startRest, type RestServer } from '../rest/harness';
import { startMoto, type S3Server } from '../servers/s3';
import { scratchDir } from '../servers/util';

let moto: S3Server;
let s: RestServer;
let eb: EventBridgeClient;
let sqs: SQSClient;
const BUS = 'tributary-activity';

async function queue(name: string): Promise<{ url: string; arn: string }> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url, arn };
}

async function bus(targets: { all: string; mine: string }, account: number): Promise<void> {
  await eb.send(new CreateEventBusCommand({ Name: BUS }));
  await eb.send(new PutRuleCommand({ Name: 'all', EventBusName: BUS, EventPattern: JSON.stringify({ 'detail-type': ['eventbus_webhook_notification'] }) }));
  await eb.send(new PutTargetsCommand({ Rule: 'all', EventBusName: BUS, Targets: [{ Id: 'q', Arn: targets.all }] }));
  await eb.send(new PutRuleCommand({ Name: 'mine', EventBusName: BUS, EventPattern: JSON.stringify({ detail: { account: [account] } }) }));
  await eb.send(new PutTargetsCommand({ Rule: 'mine', EventBusName: BUS, Targets: [{ Id: 'q', Arn: targets.mine }] }));
}

async function dropBus(): Promise<void> {
  for (const rule of ['all', 'mine']) {
    await eb.send(new RemoveTargetsCommand({ Rule: rule, EventBusName: BUS, Ids: ['q'] }));
    await eb.send(new DeleteRuleCommand({ Name: rule, EventBusName: BUS }));
  }
  await eb.send(new DeleteEventBusCommand({ Name: BUS }));
}

/** Every event body waiting in the queue (SQS targets receive the whole EventBridge event as JSON). */
async function drain(url: string): Promise<any[]> {
  const out: any[] = [];
  for (;;) {
    const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    if (!r.Messages?.length) return out;
    for (const m of r.Messages) {
      out.push(JSON.parse(m.Body!));
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

beforeAll(async () => {
  moto = await startMoto();
  const config = { endpoint: moto.endpoint, region: 'us-east-1', credentials: { accessKeyId: moto.accessKeyId, secretAccessKey: moto.secretAccessKey } };
  eb = new EventBridgeClient(config);
  sqs = new SQSClient(config);
  s = await startRest();
}, 60_000);

afterAll(async () => {
  eb?.destroy();
  sqs?.destroy();
  await s?.stop();
  await moto?.stop();
});

describe('spec 3 Event-bus event: delivery to EventBridge (moto)', () => {
  it('delivers every activity in order to a rule target; a detail pattern filters; a failed delivery resumes where it stopped', async () => {
    const all = await queue('all');
    const mine = await queue('mine');
    const acc = await importLocal(s, 'bus');
    await bus({ all: all.arn, mine: mine.arn }, acc.id);
    const sub = await s.call('POST', `/v1/accounts/${acc.id}/subscriptions`, { body: { subscription_type: 'changes' } });
    expect(sub.status, sub.text).toBe(201);
    const target = { region: 'us-east-1', endpoint: moto.endpoint, access_key_id: moto.accessKeyId, secret_access_key: moto.secretAccessKey, account: acc.id };

    // A bus that does not exist is refused and nothing is saved.
    const wrong = await s.call('POST', '/v2/event_buses', { body: { ...target, event_bus_name: 'no-such-bus' } });
    expect(wrong.status, wrong.text).toBe(400);
    expect(wrong.json.error_code).toBe('invalid_parameters');
    expect((await s.call('GET', '/v2/event_buses')).json.count).toBe(0);
    const created = await s.call('POST', '/v2/event_buses', { body: { ...target, event_bus_name: BUS, source: 'tributary.test/p1/activity' } });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ event_bus_name: BUS, source: 'tributary.test/p1/activity', has_credentials: true, type: 'event_bus', api: 'activity' });
    expect(JSON.stringify(created.json)).not.toContain(moto.secretAccessKey);

    // 30 changes: more than one event carries (25 each), so two events, in order.
    s.app.activity.log.append(sub.json.id, acc.id, generated(30));
    const got: any[] = [];
    await until(async () => (got.push(...(await drain(all.url))), got.flatMap((e) => e.detail.activity.v1).length >= 30 || undefined), 20_000, 'the first 30 activities');
    expect(got.every((e) => e['detail-type'] === 'eventbus_webhook_notification' && e.source === 'tributary.test/p1/activity')).toBe(true);
    expect(got.every((e) => e.detail.account === acc.id && e.detail.subscription === sub.json.id)).toBe(true);
    expect(got[0]).toMatchObject({ region: 'us-east-1', version: '0' });
    const v1 = got.flatMap((e) => e.detail.activity.v1);
    expect(v1.map((a: any) => a.metadata.name)).toEqual(Array.from({ length: 30 }, (_, k) => `file-${k}.txt`));
    expect(v1[0]).toMatchObject({ account: acc.id, subscription: sub.json.id, type: 'add', metadata: { type: 'file', path: '/gen/file-0.txt' } });
    // The v1 objects are the activity API's own (same ids as GET .../activity).
    const listed = await s.call('GET', `/v1/accounts/${acc.id}/subscriptions/${sub.json.id}/activity`);
    expect(v1.map((a: any) => a.id)).toEqual((listed.json.objects as any[]).map((a) => a.id));
    // The rule filtering on `detail.account` received the same events.
    const filtered: any[] = [];
    await until(async () => (filtered.push(...(await drain(mine.url))), filtered.length >= got.length || undefined), 20_000, 'the filtered rule');
    expect(filtered.map((e) => e.id).sort()).toEqual(got.map((e) => e.id).sort());

    // The bus disappears: the delivery fails and says why; once it is back, the missed activity
    // arrives, in order, and nothing delivered before comes again.
    await dropBus();
    s.app.activity.log.append(sub.json.id, acc.id, generated(3, 30));
    const failing = await until(async () => {
      const r = await s.call('GET', `/v2/event_buses/${created.json.id}`);
      return r.json.last_error ? r.json : undefined;
    }, 20_000, 'a failed delivery');
    expect(failing.failing_since).not.toBeNull();
    expect(failing.pending[0]).toMatchObject({ account: acc.id, subscription: sub.json.id });
    expect(failing.pending[0].attempts).toBeGreaterThan(0);
    await bus({ all: all.arn, mine: mine.arn }, acc.id);
    const later: any[] = [];
    await until(async () => (later.push(...(await drain(all.url))), later.flatMap((e) => e.detail.activity.v1).length >= 3 || undefined), 30_000, 'the resumed delivery');
    expect(later.flatMap((e) => e.detail.activity.v1).map((a: any) => a.metadata.name)).toEqual(['file-30.txt', 'file-31.txt', 'file-32.txt']);
    // Recorded just after PutEvents answers, which may be after the queue already holds the events.
    const healed = await until(async () => {
      const r = await s.call('GET', `/v2/event_buses/${created.json.id}`);
      return r.json.last_error === null ? r.json : undefined;
    }, 10_000, 'the recovery to be recorded');
    expect(healed).toMatchObject({ last_error: null, failing_since: null });
    expect(healed.pending[0]).toMatchObject({ attempts: 0, next_attempt_at: null });

    expect((await s.call('DELETE', `/v2/event_buses/${created.json.id}`)).status).toBe(204);
    expect((await s.call('GET', `/v2/event_buses/${created.json.id}`)).status).toBe(404);
  }, 90_000);
  it('a delivery still failing when Tributary stops resumes after a restart, in order, from the same data', async () => {
    await dropBus();
    const all = await queue('restart-all');
    const mine = await queue('restart-mine');
    const dataDir = scratchDir('eventbus-restart');
    let first: RestServer | undefined = await startRest({ dataDir });
    let second: RestServer | undefined;
    try {
      const acc = await importLocal(first, 'restart');
      await bus({ all: all.arn, mine: mine.arn }, acc.id);
      const sub = (await first.call('POST', `/v1/accounts/${acc.id}/subscriptions`, { body: {} })).json.id as number;
      const target = { region: 'us-east-1', endpoint: moto.endpoint, access_key_id: moto.accessKeyId, secret_access_key: moto.secretAccessKey, event_bus_name: BUS };
      const busId = (await first.call('POST', '/v2/event_buses', { body: target })).json.id as number;
      await dropBus();
      first.app.activity.log.append(sub, acc.id, generated(4, 100));
      await until(async () => (await first!.call('GET', `/v2/event_buses/${busId}`)).json.last_error || undefined, 20_000, 'a failed delivery');
      await first.stop();
      first = undefined;

      await bus({ all: all.arn, mine: mine.arn }, acc.id);
      second = await startRest({ dataDir });
      const got: any[] = [];
      await until(async () => (got.push(...(await drain(all.url))), got.flatMap((e) => e.detail.activity.v1).length >= 4 || undefined), 30_000, 'the delivery after the restart');
      expect(got.flatMap((e) => e.detail.activity.v1).map((a: any) => a.metadata.name)).toEqual(['file-100.txt', 'file-101.txt', 'file-102.txt', 'file-103.txt']);
      // The default source: a namespace, then partner (application) id and api id (spec 3).
      expect(got[0].source).toMatch(/^tributary\.app\/tributary-[0-9a-f-]+\/activity$/);
    } finally {
      await first?.stop();
      await second?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
