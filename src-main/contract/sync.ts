/**
 * Two-way sync procedures and events (docs/sync.md), spread into the procedures and events of
 * contract/index.ts. zod only. Handlers: rpc/sync.ts, one call each into SyncEngine.
 */
import { z } from 'zod';

const iso = z.string();
const pairId = z.number().int().positive();

export const SyncPair = z.object({
  id: pairId,
  localPath: z.string(),
  account: z.number().int().positive(),
  remotePath: z.string(),
  /** Folders (relative to the pair) left out: selective sync. */
  excluded: z.array(z.string()),
  paused: z.boolean(),
  /** idle: up to date; syncing; error; held: deletes wait for confirmation; refused: a side looks missing or empty. */
  state: z.enum(['idle', 'syncing', 'error', 'held', 'refused']),
  error: z.string().nullable(),
  lastSync: iso.nullable(),
  /** Operations left in the batch being run. */
  pending: z.number().int(),
  conflicts: z.number().int(),
});
export type SyncPair = z.infer<typeof SyncPair>;

export const SyncConflict = z.object({
  id: z.number().int(),
  pair: pairId,
  /** Holds the remote version ("theirs"). */
  path: z.string(),
  /** The local version ("mine"), kept under the conflict name. */
  copyPath: z.string(),
  created: iso,
});
export type SyncConflict = z.infer<typeof SyncConflict>;

export const SyncFileState = z.enum(['synced', 'pending', 'conflict']);
export type SyncFileState = z.infer<typeof SyncFileState>;

const folder = z.string().min(1).max(4096);

export const syncProcedures = {
  'sync.pairs.list': { input: z.object({}), output: z.array(SyncPair) },
  /** Desktop app only: asks for a folder of this computer with the system's dialog (null: cancelled). */
  'sync.localFolder.choose': { input: z.object({}), output: z.object({ path: z.string().nullable() }) },
  /** A new pair: an existing local folder and an existing folder of a storage account. */
  'sync.pairs.create': {
    input: z.object({ localPath: folder, account: z.number().int().positive(), remotePath: folder, excluded: z.array(z.string().max(4096)).max(1000).default([]) }),
    output: SyncPair,
  },
  /**
   * Changes the excluded folders (paths inside the pair). A newly excluded folder stops syncing
   * and its copies on both sides are left in place; one taken off the list syncs again.
   */
  'sync.pairs.update': { input: z.object({ id: pairId, excluded: z.array(z.string().max(4096)).max(1000) }), output: SyncPair },
  /** The pair's folders to tick in or out: those the last scans saw, and the excluded ones. */
  'sync.pairs.folders': { input: z.object({ id: pairId }), output: z.array(z.string()) },
  /** Stops syncing the pair; no file on either side is touched. */
  'sync.pairs.remove': { input: z.object({ id: pairId }), output: z.object({}) },
  'sync.pairs.pause': { input: z.object({ id: pairId }), output: SyncPair },
  'sync.pairs.resume': { input: z.object({ id: pairId }), output: SyncPair },
  /** A full rescan of both sides and a run now. */
  'sync.pairs.rescan': { input: z.object({ id: pairId }), output: SyncPair },
  /** The user confirms held deletes (or that a side really is empty): the run goes ahead. */
  'sync.pairs.confirm': { input: z.object({ id: pairId }), output: SyncPair },
  /** Seconds between two walks of a remote folder whose account cannot push changes (default 5). */
  'sync.settings.get': { input: z.object({}), output: z.object({ remotePollSeconds: z.number().int() }) },
  'sync.settings.set': { input: z.object({ remotePollSeconds: z.number().int().min(1).max(3600) }), output: z.object({ remotePollSeconds: z.number().int() }) },
  'sync.conflicts.list': { input: z.object({ pair: pairId.optional() }), output: z.array(SyncConflict) },
  /** mine: the local version takes the name; theirs: the remote one stays; both: keep the two files. */
  'sync.conflicts.resolve': { input: z.object({ id: z.number().int(), keep: z.enum(['mine', 'theirs', 'both']) }), output: z.object({}) },
  /**
   * Badges of a listed folder: the sync state of its entries by name (synced, pending, conflict)
   * when the folder is inside a pair (its remote folder, or for a local account its local
   * folder). Read from the stored trees; names the engine has not seen are left out.
   */
  'sync.files.states': {
    input: z.object({ account: z.number().int().positive(), folder: z.string().min(1).max(8192) }),
    output: z.record(z.string(), SyncFileState),
  },
} as const;

export const syncEvents = {
  /** A pair's state, counts or conflicts changed. */
  'sync.changed': z.object({ pair: z.number().int() }),
} as const;
