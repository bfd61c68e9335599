/**
 * spec 3 notification messages: the JSON webhook body (also the form fields of legacy
 * webhooks), the event-bus event, the publish/subscribe message and the message-bus topic
 * messages. They name the account and subscription; the activity itself, where a message
 * carries it, arrives already rendered as v1.
 */

/** spec 3, JSON webhook body; also the form fields of legacy webhooks. */
export function webhookBody(accountId: number, subscriptionId: number) {
  return { account: accountId, subscription: subscriptionId };
}

export interface EventBusTarget {
  /** Partner event source namespace, e.g. `aws.partner/tributary.app`. */
  namespace: string;
  partnerId: string;
  apiId: string;
  /** The receiving cloud account. */
  cloudAccount: string;
  region: string;
}

/** spec 3, Event-bus event. */
export function eventBusEvent(t: EventBusTarget, accountId: number, subscriptionId: number, v1: unknown[], time: Date) {
  return {
    'detail-type': 'eventbus_webhook_notification',
    source: `${t.namespace}/${t.partnerId}/${t.apiId}`,
    account: t.cloudAccount,
    time: time.toISOString(),
    region: t.region,
    detail: { account: accountId, subscription: subscriptionId, activity: { v1 } },
  };
}

/**
 * spec 3, Event-bus event, as an EventBridge PutEvents entry: `detail-type`, `source`, `time` and
 * `detail` are the entry's; EventBridge adds the outer `account` and `region` of the receiving
 * bus itself.
 */
export function eventBusEntry(t: { source: string; eventBusName: string }, accountId: number, subscriptionId: number, v1: unknown[], time: Date) {
  return {
    EventBusName: t.eventBusName,
    Source: t.source,
    DetailType: 'eventbus_webhook_notification',
    Time: time,
    Detail: JSON.stringify({ account: accountId, subscription: subscriptionId, activity: { v1 } }),
  };
}

/** spec 3, Publish/subscribe message. */
export function pubSubMessage(accountId: number, subscriptionId: number, v1: unknown[]) {
  return { account: accountId, subscription: subscriptionId, activity: { v1 } };
}

/**
 * spec 3, Message-bus topic message: the same JSON body, `SessionId` = subscription id, and the
 * filterable properties `accountId` and `v1ActivityType`. One message per activity so that the
 * type filter is exact; the session keeps them in order.
 */
export function messageBusMessages(accountId: number, subscriptionId: number, v1: { type: string }[]) {
  return v1.map((a) => ({
    body: pubSubMessage(accountId, subscriptionId, [a]),
    contentType: 'application/json',
    sessionId: String(subscriptionId),
    applicationProperties: { accountId, v1ActivityType: a.type },
  }));
}
