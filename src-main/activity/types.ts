/**
 * Shapes shared by the activity modules: what a follower records, what the log stores, what a
 * subscription shows, and what rendering an activity needs from the app.
 */
import type { Entry } from '../connectors/types';
import type { Resource } from '../contract';

export const V1_TYPES = ['add', 'delete', 'update', 'rename', 'move', 'copy', 'restore'] as const;
export type V1Type = (typeof V1_TYPES)[number];

/** A metadata snapshot of a storage entry or a message, JSON-safe (dates as ISO strings). */
export interface EntrySnapshot {
  path: string;
  name: string;
  kind: 'file' | 'folder' | 'message';
  size: number | null;
  modified: string | null;
  created: string | null;
  mimeType?: string;
  etag?: string;
}

/** One change as a follower hands it to the log. */
export interface ActivityChange {
  type: V1Type;
  api?: 'storage' | 'email';
  kind: 'file' | 'folder' | 'message';
  path: string;
  previousPath?: string;
  metadata?: EntrySnapshot | null;
  previousMetadata?: EntrySnapshot | null;
  /** The upstream's own id for this event, when it has one (served as the v1 `id` string). */
  upstreamId?: string;
  /** Email tracking (spec 3): the v2 subtype, and for clicks the Hyperlink clicked. */
  subtype?: 'email_open' | 'email_click';
  link?: HyperlinkInfo;
}

/** spec 3, Hyperlink (clicked email link): the anchor tag, its URL and its text. */
export interface HyperlinkInfo {
  tag: string;
  link: string;
  text: string | null;
}

/** One stored activity record: v1 and v2 are both rendered from this. */
export interface ActivityRecord {
  seq: number;
  accountId: number;
  subscriptionId: number;
  type: V1Type;
  api: 'storage' | 'email';
  kind: 'file' | 'folder' | 'message';
  path: string;
  previousPath: string | null;
  metadata: EntrySnapshot | null;
  previousMetadata: EntrySnapshot | null;
  upstreamId: string | null;
  subtype: 'email_open' | 'email_click' | null;
  link: HyperlinkInfo | null;
  /** When Tributary learned of the change: the activity's time in every API (spec 3). */
  recordedAt: string;
}

/** A subscription as it is shown: the contract ActivitySubscription and the REST subscription object. */
export interface SubscriptionView {
  id: number;
  account: number;
  subscriptionType: 'changes' | 'crawl' | 'analytics';
  crawlType: string;
  monitoredResources: { resource: string; user?: string }[];
  active: boolean;
  disableReason: string | null;
  isDefault: boolean;
  expiry: string;
  lastCursor: string | null;
  lastCursorUpdatedAt: string | null;
  upstreamCheckpoint: string | null;
  created: string;
  modified: string;
  api: 'storage' | 'email';
}

/** Builds the contract Resource of an entry: `app.storage.toResource` in the app. */
export type ToResource = (accountId: number, entry: Entry) => Resource;

/** What rendering an activity needs from the app (ActivityService.serializeContext). */
export interface SerializeContext {
  toResource: ToResource;
  /** The account as an actor (v2): its display name and upstream user id. */
  actor?: (accountId: number) => { name: string | null; id: string | null; email: string | null };
}

export type Clock = () => number;
export const systemClock: Clock = () => Date.now();
