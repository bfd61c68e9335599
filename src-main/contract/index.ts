/**
 * The one typed contract between the renderer and the main process: every procedure
 * (`domain.verb`) with its zod input and output, and every pushed event (`domain.pastTense`).
 * Served over Electron IPC and over the headless WebSocket; implemented by rpc/handlers.ts
 * (the compiler checks it is complete). zod only: no node:, no electron.
 */
import { z } from 'zod';
import { activityEvents, activityProcedures } from './activity';
import { mailEvents, mailProcedures } from './mail';
import { isAllowListEntry } from './network';
import { syncEvents, syncProcedures } from './sync';

export { WS_MAX_MESSAGE_BYTES } from './limits';
export { SyncConflict, SyncFileState, SyncPair } from './sync';

const iso = z.string();
const id = z.string().min(1).max(8192);
const accountId = z.number().int().positive();

export const Account = z.object({
  id: accountId,
  service: z.string(),
  serviceName: z.string(),
  account: z.string(),
  active: z.boolean(),
  disableReason: z.string().nullable(),
  /** Accounts: what the server said when the account was deactivated automatically. */
  disableMessage: z.string().nullable(),
  /** Accounts: since when every attempt to reach it failed (null once reached). */
  unreachableSince: iso.nullable(),
  admin: z.boolean(),
  isDefault: z.boolean(),
  userId: z.string().nullable(),
  tokenExpiry: iso.nullable(),
  refreshTokenExpiry: iso.nullable(),
  created: iso,
  modified: iso,
  /** Non-secret connection settings (host, path, ...), for display and editing. */
  settings: z.record(z.string(), z.unknown()),
});
export type Account = z.infer<typeof Account>;

export const Ref = z.object({ id: z.string(), name: z.string() });

export const Resource = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['file', 'folder']),
  account: accountId,
  size: z.number().nullable(),
  created: iso.nullable(),
  modified: iso.nullable(),
  parent: Ref.nullable(),
  ancestors: z.array(Ref).nullable(),
  path: z.string().nullable(),
  mimeType: z.string().nullable(),
  downloadable: z.boolean(),
  canCreateFolders: z.boolean(),
  canUploadFiles: z.boolean(),
  canListRecursively: z.boolean(),
  rawId: z.string(),
  raw: z.record(z.string(), z.unknown()),
});
export type Resource = z.infer<typeof Resource>;

export const FolderPage = z.object({
  folder: Resource,
  items: z.array(Resource),
  page: z.number().int(),
  pageSize: z.number().int(),
  total: z.number().int(),
  hasNext: z.boolean(),
});
export type FolderPage = z.infer<typeof FolderPage>;

export const ConnectorInfo = z.object({
  id: z.string(),
  name: z.string(),
  group: z.string(),
  kind: z.string(),
  /** JSON Schema of the connector's options: the "connect account" form is generated from it. */
  form: z.record(z.string(), z.unknown()),
  /** Offered in the connect form (false: for tests and the REST API only). */
  offered: z.boolean(),
});
export type ConnectorInfo = z.infer<typeof ConnectorInfo>;

export const Settings = z.object({
  retrieveTokens: z.boolean(),
  trackingBaseUrl: z.string().nullable(),
  /** A transfer that ran at least this long is announced when it ends (null: never). */
  notifyAfterSeconds: z.number().int().nullable(),
  /** Upload from a URL and webhooks may reach private and loopback addresses (self-hosted servers). */
  allowPrivateNetwork: z.boolean(),
  /** Host names, addresses and CIDR ranges they may reach although private (e.g. a NAS). */
  allowedHosts: z.array(z.string()),
  /** Seconds between two listings of an open folder whose backend cannot push changes. */
  folderPollSeconds: z.number().int(),
});
export type Settings = z.infer<typeof Settings>;

export const TransferAction = z.enum(['pause', 'resume', 'cancel', 'retry']);
export type TransferAction = z.infer<typeof TransferAction>;

export const Transfer = z.object({
  id: z.string(),
  direction: z.enum(['upload', 'download', 'copy', 'move']),
  name: z.string(),
  account: accountId,
  /** Destination folder id (uploads, copies) or the file id (downloads). */
  target: z.string(),
  bytesDone: z.number(),
  bytesTotal: z.number().nullable(),
  state: z.enum(['queued', 'running', 'paused', 'done', 'failed', 'cancelled']),
  error: z.string().nullable(),
  startedAt: iso,
  finishedAt: iso.nullable(),
  /** Bytes per second over the last few seconds while running; 0 otherwise. */
  speed: z.number(),
  /** What the user can do with it now (the Transfers panel shows these buttons). */
  actions: z.array(TransferAction),
  /** The name the file or folder was saved under when it is not `name` (a conflict kept both). */
  savedAs: z.string().nullable(),
});
export type Transfer = z.infer<typeof Transfer>;

export const ApiKey = z.object({
  id: z.number().int(),
  name: z.string(),
  /** First characters of the key, enough to recognise it in a list; the key itself is shown once. */
  prefix: z.string(),
  active: z.boolean(),
  created: iso,
  modified: iso,
  lastUsed: iso.nullable(),
});
export type ApiKey = z.infer<typeof ApiKey>;

const conflict = z.enum(['rename', 'overwrite', 'fail']);
const locate = { account: accountId, id };

export const procedures = {
  'app.info': { input: z.object({}), output: z.object({ version: z.string(), mode: z.enum(['electron', 'headless']), dataDir: z.string(), apiUrl: z.string().nullable() }) },
  'connectors.list': { input: z.object({}), output: z.array(ConnectorInfo) },
  'accounts.list': { input: z.object({}), output: z.array(Account) },
  /** Accounts: with `account`, the options are changes to that account's saved ones (Reconnect's Test). */
  'accounts.test': { input: z.object({ service: z.string(), options: z.record(z.string(), z.unknown()), account: accountId.optional() }), output: z.object({ ok: z.literal(true) }) },
  'accounts.connect': {
    input: z.object({ service: z.string(), options: z.record(z.string(), z.unknown()), account: z.string().max(500).optional() }),
    output: Account,
  },
  'accounts.update': { input: z.object({ id: accountId, account: z.string().min(1).max(500).optional(), active: z.boolean().optional() }), output: Account },
  'accounts.delete': { input: z.object({ id: accountId }), output: z.object({}) },
  /** Accounts: Reconnect (new credentials) or Retry (none): they must connect; the account is active again. */
  /** Accounts: the server identity to confirm before connecting (an unknown SSH host key), or null. */
  'accounts.identity': {
    input: z.object({ service: z.string(), options: z.record(z.string(), z.unknown()) }),
    output: z.object({ fingerprint: z.string(), what: z.string(), option: z.string(), value: z.string() }).nullable(),
  },
  'accounts.reconnect': { input: z.object({ id: accountId, options: z.record(z.string(), z.unknown()).optional() }), output: Account },
  'accounts.quota': { input: z.object({ id: accountId }), output: z.object({ used: z.number().nullable(), total: z.number().nullable() }).nullable() },
  'files.list': {
    input: z.object({ account: accountId, folder: id, page: z.number().int().positive().default(1), pageSize: z.number().int().min(1).max(100000).default(1000) }),
    output: FolderPage,
  },
  /** The last listing seen, from the cache, without contacting the backend (instant browse). */
  'files.listCached': { input: z.object({ account: accountId, folder: id }), output: FolderPage.nullable() },
  'files.get': { input: z.object(locate), output: Resource },
  'files.mkdir': { input: z.object({ account: accountId, parent: id, name: z.string() }), output: Resource },
  'files.rename': { input: z.object({ ...locate, name: z.string(), conflict: conflict.optional() }), output: Resource },
  'files.move': { input: z.object({ ...locate, toAccount: accountId.optional(), parent: id, name: z.string().optional(), conflict: conflict.optional() }), output: Resource },
  'files.copy': { input: z.object({ ...locate, toAccount: accountId.optional(), parent: id, name: z.string().optional(), conflict: conflict.optional() }), output: Resource },
  /** `restore`: the token `files.restore` takes to undo a move to the trash, when the account can. */
  'files.delete': { input: z.object({ ...locate, permanent: z.boolean().default(false), recursive: z.boolean().default(false) }), output: z.object({ restore: z.string().optional() }) },
  // -- delete and undo: what deleting does per account, and putting a trashed item back
  'files.deleteInfo': { input: z.object({ account: accountId }), output: z.object({ trash: z.boolean(), undo: z.boolean() }) },
  'files.restore': { input: z.object({ account: accountId, token: z.string().min(1) }), output: Resource },
  // --
  'files.search': { input: z.object({ account: accountId, q: z.string().min(1).max(1000) }), output: z.array(Resource) },
  /**
   * The folder is open on screen: it is kept current (watched, or listed again every
   * `folderPollSeconds`) and `files.changed` names it when it changes. A lease: call again at
   * least every 30 s while it stays open.
   */
  'files.watch': { input: z.object({ account: accountId, folder: id }), output: z.object({}) },
  /**
   * Electron only: upload files the user dropped from the desktop, by their local paths. Runs in
   * the background (progress as transfers.updated); files over 5 MiB go through the resumable
   * multipart uploader; a folder goes up with everything in it as one transfer (saved as
   * "name (1)" when the name is taken). Answers how many uploads were started.
   */
  'files.uploadPaths': {
    input: z.object({ account: accountId, parent: id, paths: z.array(z.string()).min(1), conflict: conflict.default('rename') }),
    output: z.object({ started: z.number().int() }),
  },
  /**
   * Electron only: upload one file the user dropped or picked and wait for it, answering the new
   * file (compose attaches it by id: parent `ephemeral`). Progress shows as a transfer.
   */
  'files.uploadPath': { input: z.object({ account: accountId, parent: id, path: z.string().min(1), conflict: conflict.default('rename') }), output: Resource },
  /**
   * Web UI: a big file goes up as a multipart session (spec 1, Multipart upload) whose parts the
   * page PUTs to `/app/upload/part`, so it can be paused, resumed and retried part by part.
   */
  'uploads.begin': {
    input: z.object({ account: accountId, parent: id, name: z.string().min(1).max(1024), size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), conflict: z.enum(['rename', 'overwrite']).default('rename') }),
    /** `staged`: parts are kept by Tributary and go to the backend on complete (no native multipart). */
    output: z.object({ session: z.number().int(), partSize: z.number().int(), parallel: z.boolean(), staged: z.boolean() }),
  },
  /** Which parts the session already holds (to continue after a pause or failure). */
  'uploads.parts': { input: z.object({ account: accountId, session: z.number().int().positive() }), output: z.array(z.number().int()) },
  'uploads.complete': { input: z.object({ account: accountId, session: z.number().int().positive(), transfer: z.string().max(100).optional() }), output: Resource },
  'uploads.abort': { input: z.object({ account: accountId, session: z.number().int().positive() }), output: z.object({}) },
  /**
   * Web UI: a one-use URL (`/app/download/<ticket>`) that downloads this file as an attachment;
   * redeemed once within 60 s, then only the browser's own resume of it (Range + If-Range).
   */
  'files.downloadTicket': { input: z.object(locate), output: z.object({ url: z.string() }) },
  /**
   * Web UI: a one-use URL (`/app/zip/<ticket>`, within 60 s) that downloads these files and
   * folders (recursively) of one account as one zip stream.
   */
  'files.zipTicket': { input: z.object({ account: accountId, ids: z.array(id).min(1).max(10_000) }), output: z.object({ url: z.string() }) },
  /** Electron only: save a file to a local path chosen by the user (a save dialog when omitted). */
  'files.download': { input: z.object({ ...locate, to: z.string().optional() }), output: z.object({ path: z.string().nullable() }) },
  /**
   * Electron only: download files and folders (recursively) into a local folder chosen by the
   * user (a folder dialog when `to` is omitted), as download jobs in Transfers. Answers the
   * folder (null when the dialog was cancelled) and how many files were started.
   */
  'files.downloadInto': { input: z.object({ account: accountId, ids: z.array(id).min(1).max(10_000), to: z.string().optional() }), output: z.object({ path: z.string().nullable(), started: z.number().int() }) },
  'apiKeys.list': { input: z.object({}), output: z.array(ApiKey) },
  /** A new key for scripts; the returned `key` is the only time its secret is shown. */
  'apiKeys.create': { input: z.object({ name: z.string().min(1).max(200) }), output: z.object({ apiKey: ApiKey, key: z.string() }) },
  'apiKeys.revoke': { input: z.object({ id: z.number().int() }), output: ApiKey },
  /**
   * A new web UI token: the old one is refused from now on (open pages must use the new link).
   * `url` opens the web UI with it, when the local server runs.
   */
  'uiToken.rotate': { input: z.object({}), output: z.object({ token: z.string(), url: z.string().nullable() }) },
  'settings.get': { input: z.object({}), output: Settings },
  'settings.set': {
    input: z.object({
      retrieveTokens: z.boolean().optional(),
      trackingBaseUrl: z.url({ protocol: /^https?$/ }).nullable().optional(),
      notifyAfterSeconds: z.number().int().min(0).max(86_400).nullable().optional(),
      allowPrivateNetwork: z.boolean().optional(),
      allowedHosts: z
        .array(z.string().trim().max(300).refine(isAllowListEntry, 'a host name, an IP address or a CIDR range such as 192.168.1.0/24'))
        .max(200)
        .optional(),
      folderPollSeconds: z.number().int().min(1).max(3600).optional(),
    }),
    output: Settings,
  },
  'transfers.list': { input: z.object({}), output: z.array(Transfer) },
  'transfers.cancel': { input: z.object({ id: z.string() }), output: z.object({}) },
  /** Pauses a running upload or download; what it did so far is kept. */
  'transfers.pause': { input: z.object({ id: z.string() }), output: z.object({}) },
  'transfers.resume': { input: z.object({ id: z.string() }), output: z.object({}) },
  /** Runs a failed upload or download again, from what it kept (confirmed parts, bytes on disk). */
  'transfers.retry': { input: z.object({ id: z.string() }), output: z.object({}) },
  'transfers.clearFinished': { input: z.object({}), output: z.object({}) },
  ...mailProcedures,
  ...activityProcedures,
  ...syncProcedures,
} as const;

export const events = {
  'accounts.changed': z.object({}),
  'files.changed': z.object({ account: accountId, folder: z.string() }),
  'transfers.updated': Transfer,
  /**
   * A web upload's bytes written to the account's backend so far (the page's own transfer
   * `transfer`, given to `/app/upload` or `uploads.complete`): what its row shows, rather than
   * the bytes the browser handed to Tributary.
   */
  'uploads.progress': z.object({ transfer: z.string(), bytes: z.number() }),
  ...mailEvents,
  ...activityEvents,
  ...syncEvents,
} as const;

export type Procedures = typeof procedures;
export type ProcedureName = keyof Procedures;
export type ProcedureInput<P extends ProcedureName> = z.input<Procedures[P]['input']>;
export type ProcedureOutput<P extends ProcedureName> = z.output<Procedures[P]['output']>;
export type EventName = keyof typeof events;
export type EventPayload<E extends EventName> = z.output<(typeof events)[E]>;

/** What every transport returns for a call. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: { code: string; message: string; status: number } };

/** The implementation side: one async function per procedure, taking parsed input. */
export type Handlers = { [P in ProcedureName]: (input: z.output<Procedures[P]['input']>) => Promise<ProcedureOutput<P>> };

/** Wire shapes of the WebSocket transport (the IPC transport uses the same bodies). */
export const WsClientMessage = z.object({ type: z.literal('call'), id: z.number(), procedure: z.string(), input: z.unknown() });
export type WsServerMessage =
  | { type: 'result'; id: number; result: RpcResult<unknown> }
  | { type: 'event'; name: EventName; payload: unknown };
