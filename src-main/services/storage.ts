/**
 * The storage service: spec 1's file and folder semantics over any StorageConnector.
 * Ids in and out are encrypted resource ids (ids/); paths never leave the main process except
 * as the human-readable `path`. Every mutation refreshes the listing cache and publishes
 * `files.changed` for the folders it touched.
 */
import { randomBytes } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { lookup as mimeLookup } from 'mime-types';
import { EntriesTable } from '../cache/queries/entries';
import type { Db } from '../cache/db';
import { baseName, checkName, isInside, joinPath, parentOf, ROOT, ancestorsOf, tempName } from '../connectors/shared/paths';
import type { Entry, NoReplace, Permission, PermissionChanges, PermissionsFeature, StorageConnector } from '../connectors/types';
import type { FolderPage, Resource } from '../contract';
import { ServiceError } from '../errors';
import { isSpecialId, type IdCodec } from '../ids';
import { handMemoryBackSoon, withStreamingHeadroom } from '../memory';
import type { AccountsService } from './accounts';
import type { EventBus } from './events';
import type { FileProvider } from './file-provider';
import { NameReservations, type ConflictMode, type NameClaim } from './names';
import { ArrivingListing, sortListing } from './listing-arrival';

export type { ConflictMode } from './names';
export { standaloneFile, type FileProvider } from './file-provider';

/** Where a resource lives: its account, live connector and upstream path. */
export interface Location {
  account: number;
  connector: StorageConnector;
  path: string;
  /** Set when the id was the reserved `trash`. */
  trash?: boolean;
}

/**
 * Upstream ids of entries in an account's trash: the entry's path inside the trash behind this
 * prefix, so a trashed `/a.txt` and a live `/a.txt` in the root never share an id. Such ids never
 * start with '/', like provider ids, and no provider owns this prefix.
 */
const TRASHED = 'trash\n';

/**
 * Later pages of a listing come from the sorted snapshot page 1 took (kept in memory for this
 * long, for this many folders), so paging is consistent and cheap for 100,000-entry folders.
 */
const SNAPSHOT_MS = 5 * 60_000;
const MAX_SNAPSHOTS = 16;
/** Pages kept per snapshot (distinct page / page size pairs asked for). */
const MAX_PAGES = 8;
/** Entries from which reading a folder asks for the memory to be handed back afterwards (memory.ts). */
const LARGE_LISTING = 10_000;

/**
 * A folder as last listed: the upstream answer as it came (compared with the next one), sorted,
 * and the pages made from it. A re-listing that finds the same entries reuses all of it, so a
 * folder that did not change costs its upstream listing and a comparison, not a page of
 * resources (nor their JSON: callers may key their own work on the `items` array).
 */
interface Snapshot {
  at: number;
  upstream: Entry[];
  children: Entry[];
  pages: Map<string, Resource[]>;
}

/**
 * What a long move or copy reports and obeys: `signal` cancels it (nothing changes: the source
 * stays, no target is left), `progress` receives the bytes as they stream across accounts.
 */
export interface TransferOptions {
  signal?: AbortSignal;
  progress?: (bytes: number) => void;
}

export class StorageService {
  readonly entries: EntriesTable;
  private readonly snapshots = new Map<string, Snapshot>();

  private readonly providers: FileProvider[] = [];
  /** The one free-name rule, with its reservations (uploads, moves, copies, multipart sessions). */
  readonly names = new NameReservations();

  constructor(
    db: Db,
    private readonly accounts: AccountsService,
    private readonly ids: IdCodec,
    private readonly events: EventBus,
  ) {
    this.entries = new EntriesTable(db);
  }

  addProvider(provider: FileProvider): void {
    this.providers.push(provider);
  }

  /** The provider serving `id`, when it is not a connector's path. */
  private provider(accountId: number, id: string): FileProvider | undefined {
    if (isSpecialId(id)) return undefined;
    const upstream = this.ids.decode(accountId, id);
    if (upstream.startsWith('/') || upstream.startsWith(TRASHED)) return undefined;
    const provider = this.providers.find((p) => p.owns(upstream));
    if (!provider) throw new ServiceError('not_found', 'No file or folder has this id in this account.');
    return provider;
  }

  // ---- ids and locations -------------------------------------------------------------------

  async locate(accountId: number, id: string): Promise<Location> {
    const connector = await this.accounts.storage(accountId);
    if (id === 'root') return { account: accountId, connector, path: ROOT };
    if (id === 'trash') {
      if (!connector.features.trash) throw new ServiceError('not_found', 'This account has no trash.');
      return { account: accountId, connector, path: ROOT, trash: true };
    }
    if (isSpecialId(id)) throw new ServiceError('not_found', `"${id}" is not available for this account.`);
    const path = this.ids.decode(accountId, id);
    if (path.startsWith(TRASHED)) throw new ServiceError('forbidden', 'This item is in the trash: its metadata can be read, nothing else; restore it outside Tributary first.');
    if (!path.startsWith('/')) throw new ServiceError('forbidden', 'This file cannot be changed or listed; it can only be downloaded.');
    return { account: accountId, connector, path };
  }

  /** The path inside the trash that `id` names, or undefined when it names no trashed entry. */
  private trashedPath(accountId: number, id: string): string | undefined {
    if (isSpecialId(id)) return undefined;
    const upstream = this.ids.decode(accountId, id);
    return upstream.startsWith(TRASHED) ? upstream.slice(TRASHED.length) : undefined;
  }

  /** A trashed entry as a Resource: its own id, parent `trash`, and no path (it is not in the tree). */
  private trashedResource(accountId: number, e: Entry): Resource {
    return {
      ...this.toResource(accountId, e),
      id: this.ids.encode(accountId, `${TRASHED}${e.path}`),
      parent: { id: 'trash', name: 'Trash' },
      ancestors: null,
      path: null,
      canCreateFolders: false,
      canUploadFiles: false,
    };
  }

  idOf(accountId: number, path: string): string {
    return path === ROOT ? 'root' : this.ids.encode(accountId, path);
  }

  /** Converts an upstream id (a path here) into ours (spec 1, Convert a raw id). */
  async convertId(accountId: number, rawId: string, type: 'file' | 'folder', withMetadata: boolean): Promise<{ id: string; resource?: Resource }> {
    if (typeof rawId !== 'string' || rawId.length === 0) throw new ServiceError('invalid_parameters', '`raw_id` is required.');
    const path = rawId.startsWith('/') ? rawId.replace(/\/+$/, '') || ROOT : `/${rawId.replace(/\/+$/, '')}`;
    const id = this.idOf(accountId, path);
    if (!withMetadata) return { id };
    const resource = await this.get(accountId, id);
    if (resource.kind !== type) throw new ServiceError('not_found', `No ${type} has this raw id.`);
    return { id, resource };
  }

  toResource(accountId: number, e: Entry, options: { ancestors?: boolean } = {}): Resource {
    const isRoot = e.path === ROOT;
    const parentPath = parentOf(e.path);
    return {
      id: this.idOf(accountId, e.path),
      name: isRoot ? '' : e.name,
      kind: e.kind,
      account: accountId,
      size: e.kind === 'file' ? e.size : null,
      created: e.created?.toISOString() ?? null,
      modified: e.modified?.toISOString() ?? null,
      parent: isRoot ? null : { id: this.idOf(accountId, parentPath), name: baseName(parentPath) },
      ancestors: options.ancestors ? ancestorsOf(e.path).map((p) => ({ id: this.idOf(accountId, p), name: baseName(p) })) : null,
      path: e.path,
      mimeType: e.kind === 'file' ? e.mimeType || mimeLookup(e.name) || 'application/octet-stream' : null,
      downloadable: e.kind === 'file',
      canCreateFolders: e.kind === 'folder',
      canUploadFiles: e.kind === 'folder',
      canListRecursively: e.kind === 'folder',
      rawId: e.path,
      raw: e.raw ?? {},
    };
  }

  private trashFolder(accountId: number): Resource {
    return {
      ...this.toResource(accountId, { path: ROOT, name: 'Trash', kind: 'folder', size: null, modified: null, created: null }),
      id: 'trash',
      name: 'Trash',
      // Not a folder of the account's tree: no path that a live folder could also have.
      path: null,
      ancestors: null,
      rawId: 'trash',
      canCreateFolders: false,
      canUploadFiles: false,
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  /** Whether `name` is taken in a folder (a hint before a long transfer; writes still claim names atomically). */
  async nameTaken(accountId: number, parentId: string, name: string): Promise<boolean> {
    const parent = await this.locate(accountId, parentId);
    const entry = await parent.connector.stat(joinPath(parent.path, checkName(name))).catch((e) => (e instanceof ServiceError && e.code === 'not_found' ? undefined : Promise.reject(e)));
    return entry !== undefined;
  }

  async get(accountId: number, id: string): Promise<Resource> {
    this.accounts.row(accountId);
    const provider = this.provider(accountId, id);
    if (provider) return provider.get(accountId, id);
    const trashed = this.trashedPath(accountId, id);
    if (trashed !== undefined) {
      const connector = await this.accounts.storage(accountId);
      const entry = (await connector.features.trash?.list())?.find((e) => e.path === trashed);
      if (!entry) throw new ServiceError('not_found', 'No file or folder has this id in this account.');
      return this.trashedResource(accountId, entry);
    }
    const loc = await this.locate(accountId, id);
    if (loc.trash) return this.trashFolder(accountId);
    return this.toResource(accountId, await loc.connector.stat(loc.path), { ancestors: true });
  }

  /**
   * One page of a folder's children, folders first then by name. Page 1 lists upstream and
   * refreshes the cache; later pages read the same snapshot so paging is consistent and cheap
   * even for 100,000-entry folders.
   */
  async list(accountId: number, folderId: string, page = 1, pageSize = 1000): Promise<FolderPage> {
    if (!Number.isInteger(page) || page < 1) throw new ServiceError('invalid_parameters', '`page` must be a whole number greater than 0.');
    if (!Number.isInteger(pageSize) || pageSize < 1) throw new ServiceError('invalid_parameters', '`page_size` must be a whole number greater than 0.');
    const loc = await this.locate(accountId, folderId);
    const start = (page - 1) * pageSize;
    if (loc.trash) {
      const children = sortListing(await loc.connector.features.trash!.list());
      const items = children.slice(start, start + pageSize).map((e) => this.trashedResource(accountId, e));
      return { folder: this.trashFolder(accountId), items, page, pageSize, total: children.length, hasNext: start + pageSize < children.length };
    }
    const key = `${accountId}:${loc.path}`;
    let snapshot = page > 1 ? this.snapshots.get(key) : undefined;
    // The folder's own metadata is asked for alongside its listing (one round trip, not two);
    // the listing's failure, when both fail, is the one reported.
    const selfP = loc.path === ROOT ? Promise.resolve(rootEntry()) : loc.connector.stat(loc.path).catch((e: unknown) => e as Error);
    if (!snapshot || Date.now() - snapshot.at >= SNAPSHOT_MS) {
      const last = this.snapshots.get(key);
      // Compared with the last listing and sorted as the entries arrive (listing-arrival.ts).
      const arriving = new ArrivingListing(last?.upstream);
      const upstream = await loc.connector.list(loc.path, arriving.add);
      const children = arriving.finish(upstream);
      snapshot = last && !children ? { ...last, at: Date.now() } : { at: Date.now(), upstream, children: children!, pages: new Map() };
      this.snapshots.delete(key);
      this.snapshots.set(key, snapshot);
      if (this.snapshots.size > MAX_SNAPSHOTS) this.snapshots.delete(this.snapshots.keys().next().value!);
      // Written once this answer is on its way (entries.ts), so queued after the last await;
      // an unchanged listing is the array already written, which costs nothing there.
      this.entries.replaceListing(accountId, loc.path, snapshot.children);
    }
    const self = await selfP;
    if (self instanceof Error) throw self;
    const { children, pages } = snapshot;
    // Reading a big folder page by page is a burst of garbage that V8 leaves in place once idle.
    if (children.length >= LARGE_LISTING) handMemoryBackSoon();
    const pageKey = `${page}:${pageSize}`;
    let items = pages.get(pageKey);
    if (!items) {
      // Shared by every answer made from this snapshot: frozen, so no caller can change another's.
      items = Object.freeze(children.slice(start, start + pageSize).map((e) => Object.freeze(this.toResource(accountId, e)))) as Resource[];
      if (pages.size >= MAX_PAGES) pages.clear();
      pages.set(pageKey, items);
    }
    return { folder: this.toResource(accountId, self, { ancestors: true }), items, page, pageSize, total: children.length, hasNext: start + pageSize < children.length };
  }

  /**
   * The listing as Tributary last saw it, from the cache, without contacting the backend (null
   * when the folder was never listed): the UI paints it at once, also right after a restart,
   * while the live listing loads.
   */
  listCached(accountId: number, folderId: string): FolderPage | null {
    this.accounts.row(accountId);
    if (folderId === 'trash' || folderId === 'ephemeral') return null;
    const path = folderId === 'root' ? ROOT : this.ids.decode(accountId, folderId);
    const cached = this.entries.listing(accountId, path);
    if (!cached) return null;
    const self = path === ROOT ? rootEntry() : (this.entries.get(accountId, path) ?? { ...rootEntry(), path, name: baseName(path) });
    const items = sortListing(cached.entries).map((e) => this.toResource(accountId, e));
    return { folder: this.toResource(accountId, self, { ancestors: true }), items, page: 1, pageSize: Math.max(1, items.length), total: items.length, hasNext: false };
  }

  async download(accountId: number, fileId: string, range?: { start?: number; end?: number }): Promise<{ resource: Resource; stream: Readable }> {
    this.accounts.row(accountId);
    const provider = this.provider(accountId, fileId);
    if (provider) return provider.open(accountId, fileId, range);
    const loc = await this.locate(accountId, fileId);
    const entry = loc.trash ? undefined : await loc.connector.stat(loc.path);
    if (!entry || entry.kind !== 'file') throw new ServiceError('invalid_parameters', 'Only files can be downloaded.');
    const stream = await loc.connector.read(loc.path, { ...range, size: entry.size ?? undefined });
    return { resource: this.toResource(accountId, entry), stream };
  }

  /**
   * Case-insensitive name search within one account: a breadth-first walk from the root
   * (bounded), filling the listing cache as it goes.
   */
  async search(accountId: number, q: string, limits = { maxResults: 1000, maxFolders: 5000, maxMs: 30_000 }): Promise<Resource[]> {
    const needle = q.trim().toLocaleLowerCase();
    if (!needle) throw new ServiceError('invalid_parameters', '`q` is required.');
    const connector = await this.accounts.storage(accountId);
    const results: Resource[] = [];
    const queue = [ROOT];
    const deadline = Date.now() + limits.maxMs;
    for (let visited = 0; queue.length && visited < limits.maxFolders && Date.now() < deadline; visited++) {
      const folder = queue.shift()!;
      // A folder we may not read is skipped; a server that is down or refuses us is an error,
      // not "no results".
      const children = await connector.list(folder).catch((e) => {
        if (e instanceof ServiceError && ['forbidden', 'not_found', 'invalid_parent_folder'].includes(e.code)) return [] as Entry[];
        throw e;
      });
      this.entries.replaceListing(accountId, folder, children);
      for (const e of children) {
        if (e.name.toLocaleLowerCase().includes(needle)) results.push(this.toResource(accountId, e));
        if (e.kind === 'folder') queue.push(e.path);
        if (results.length >= limits.maxResults) return results;
      }
    }
    return results;
  }

  // ---- writes ------------------------------------------------------------------------------

  private async requireFolder(loc: Location): Promise<void> {
    if (loc.trash) throw new ServiceError('invalid_parent_folder', 'Nothing can be created in the trash.');
    const e = loc.path === ROOT ? rootEntry() : await loc.connector.stat(loc.path);
    if (e.kind !== 'folder') throw new ServiceError('invalid_parent_folder', 'The parent is not a folder.');
  }

  private forbidReserved(id: string, verb: string): void {
    if (id === 'root' || id === 'trash') throw new ServiceError('forbidden', `The ${id} folder cannot be ${verb}.`);
  }

  /** Reserves the name to write `name` under in `folder` by conflict mode (services/names.ts). */
  claimName(accountId: number, c: StorageConnector, folder: string, name: string, mode: ConflictMode, alsoTaken?: Iterable<string>): Promise<NameClaim> {
    return this.names.claim({ account: accountId, connector: c, folder, name, mode, alsoTaken, idOf: (path) => this.idOf(accountId, path) });
  }

  /**
   * The no-replace publish of a claimed name: unless overwriting, the backend refuses to replace
   * what appeared meanwhile, and a taken name moves the claim on to the next free one.
   */
  private noReplace(claim: { current: NameClaim }, folder: string, mode: ConflictMode): NoReplace | undefined {
    if (mode === 'overwrite') return undefined;
    return {
      next: async () => {
        claim.current = await claim.current.next();
        return joinPath(folder, claim.current.name);
      },
    };
  }

  /**
   * Writes so that a failure never leaves a partial file under the final name: backends that
   * cannot promise that get a hidden temporary name and a rename once every byte is in. The body
   * streams with room for its chunks in the heap's limit (memory.ts).
   */
  private writeSafely(c: StorageConnector, path: string, body: Readable, opts: { size?: number; replaces?: Entry; noReplace?: NoReplace; signal?: AbortSignal }): Promise<Entry> {
    return withStreamingHeadroom(async () => {
      if (c.features.atomicWrites || !c.features.move) {
        return c.write(path, body, { size: opts.size, mimeType: mimeLookup(baseName(path)) || undefined, noReplace: opts.noReplace, signal: opts.signal });
      }
      const temp = joinPath(parentOf(path), tempName());
      try {
        await c.write(temp, body, { size: opts.size, signal: opts.signal });
      } catch (e) {
        await c.remove(temp, { recursive: false }).catch(() => {});
        throw e;
      }
      if (opts.replaces) await c.remove(path, { recursive: false });
      return c.features.move(temp, path);
    });
  }

  async mkdir(accountId: number, parentId: string, rawName: string, options: { conflictIfExists?: boolean } = {}): Promise<Resource> {
    const name = checkName(rawName);
    const parent = await this.locate(accountId, parentId);
    await this.requireFolder(parent);
    const path = joinPath(parent.path, name);
    const existing = await parent.connector.stat(path).catch((e) => (e instanceof ServiceError && e.code === 'not_found' ? undefined : Promise.reject(e)));
    if (existing) {
      if (existing.kind === 'folder' && !options.conflictIfExists) return this.toResource(accountId, existing);
      throw new ServiceError('naming_conflict', `"${name}" already exists in this folder.`, { conflictingResourceId: this.idOf(accountId, existing.path) });
    }
    const entry = await parent.connector.mkdir(path);
    this.touched(accountId, parent.path, entry);
    return this.toResource(accountId, entry);
  }

  /** A new file from a streamed body; `signal` stops the write, which then publishes nothing. */
  async upload(
    accountId: number,
    parentId: string,
    rawName: string,
    body: Readable,
    options: { conflict?: ConflictMode; size?: number; signal?: AbortSignal } = {},
  ): Promise<Resource> {
    const name = checkName(rawName);
    const area = this.providers.find((p) => p.area === parentId);
    if (area?.upload) {
      this.accounts.row(accountId);
      return area.upload(accountId, name, body);
    }
    const parent = await this.locate(accountId, parentId);
    return this.create(accountId, parent, name, options.conflict ?? 'rename', (path, replaces, noReplace) =>
      this.writeSafely(parent.connector, path, body, { size: options.size, replaces, noReplace, signal: options.signal }),
    );
  }

  /**
   * The upload of a file on this computer (the desktop app's), read by the backend's own means
   * (`writeFile`): copied by the file system where the account's folder is on this computer too
   * (copy_file_range or a reflink on one disk), sent by smbclient's `put` to an SMB share, or
   * from reused buffers into a WebDAV PUT's socket.
   * `onBytes` counts the bytes as they go where the backend can tell, `signal` stops it.
   * Undefined where the account cannot do that: the caller streams the file instead.
   */
  async uploadFile(
    accountId: number,
    parentId: string,
    rawName: string,
    file: string,
    options: { conflict?: ConflictMode; signal?: AbortSignal; onBytes?(n: number): void } = {},
  ): Promise<Resource | undefined> {
    const name = checkName(rawName);
    if (this.providers.some((p) => p.area === parentId)) return undefined;
    const parent = await this.locate(accountId, parentId);
    const { writeFile } = parent.connector.features;
    if (!writeFile) return undefined;
    return this.create(accountId, parent, name, options.conflict ?? 'rename', (path, _replaces, noReplace) =>
      writeFile(path, file, { noReplace, signal: options.signal, onBytes: options.onBytes }),
    );
  }

  /** A new file `name` in `parent`, written by `write` under the name claimed by `mode`. */
  private async create(
    accountId: number,
    parent: Location,
    name: string,
    mode: ConflictMode,
    write: (path: string, replaces: Entry | undefined, noReplace: NoReplace | undefined) => Promise<Entry>,
  ): Promise<Resource> {
    await this.requireFolder(parent);
    const claim = { current: await this.claimName(accountId, parent.connector, parent.path, name, mode) };
    let entry: Entry;
    try {
      entry = await write(joinPath(parent.path, claim.current.name), claim.current.replaces, this.noReplace(claim, parent.path, mode));
    } catch (e) {
      claim.current.release(false);
      throw e;
    }
    claim.current.release(true);
    this.touched(accountId, parent.path, entry);
    return this.toResource(accountId, entry);
  }

  /** Replaces the content of an existing file (spec 1, Replace content). */
  async replace(accountId: number, fileId: string, body: Readable, options: { size?: number } = {}): Promise<Resource> {
    this.forbidReserved(fileId, 'overwritten');
    const loc = await this.locate(accountId, fileId);
    const existing = await loc.connector.stat(loc.path);
    if (existing.kind !== 'file') throw new ServiceError('invalid_parameters', 'Only a file\'s content can be replaced.');
    const entry = await this.writeSafely(loc.connector, loc.path, body, { size: options.size, replaces: existing });
    this.touched(accountId, parentOf(loc.path), entry);
    return this.toResource(accountId, entry);
  }

  /**
   * Rename and/or move, within one account or across accounts (streamed: copy, then remove from
   * the source what was copied; what was not is reported as folder_not_empty, see
   * `removeCopied`). A taken name at the destination is settled by
   * `to.conflict`: "name (n)" (rename, the default and spec 1's behaviour), replaced
   * (overwrite) or naming_conflict (fail).
   */
  async move(accountId: number, id: string, to: { parentId?: string; name?: string; account?: number; conflict?: ConflictMode }, options: TransferOptions = {}): Promise<Resource> {
    this.forbidReserved(id, to.parentId ? 'moved' : 'renamed');
    const src = await this.locate(accountId, id);
    if (src.trash) throw new ServiceError('forbidden', 'The trash folder cannot be moved.');
    const entry = await src.connector.stat(src.path);
    const destAccount = to.account ?? accountId;
    if (to.account !== undefined && to.parentId === undefined) throw new ServiceError('invalid_parameters', '`parent_id` is required when `account` is given.');
    const dest = to.parentId !== undefined ? await this.locate(destAccount, to.parentId) : { ...src, path: parentOf(src.path) };
    await this.requireFolder(dest);
    const name = to.name !== undefined ? checkName(to.name) : entry.name;
    const sameAccount = destAccount === accountId;
    if (sameAccount && joinPath(dest.path, name) === src.path) return this.toResource(accountId, entry);
    if (sameAccount && entry.kind === 'folder' && (dest.path === src.path || isInside(dest.path, src.path))) {
      throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    }
    options.signal?.throwIfAborted();
    const caseOnly = sameAccount && isCaseOnlyRename(src.path, dest.path, name);
    const mode = to.conflict ?? 'rename';
    if (sameAccount && mode === 'overwrite' && isInside(src.path, joinPath(dest.path, name))) {
      throw new ServiceError('invalid_parameters', 'A folder cannot replace a folder that contains it.');
    }
    const aside = mode === 'overwrite' && !caseOnly ? await this.setAside(dest.connector, joinPath(dest.path, name), entry.kind) : undefined;
    const claim = { current: await this.claimName(destAccount, dest.connector, dest.path, name, caseOnly ? 'overwrite' : aside ? 'fail' : mode).catch(async (e) => Promise.reject(await settle(aside, e))) };
    let moved: Entry;
    let left: Left[] = [];
    try {
      if (sameAccount && src.connector.features.move) {
        moved = await src.connector.features.move(src.path, joinPath(dest.path, claim.current.name));
      } else {
        const copied = new Map<string, Entry[]>();
        moved = await this.copyTree(src.connector, entry, dest.connector, dest.path, claim, options, copied);
        // Past this point the move cannot be cancelled: a cancel that arrived during the copy
        // takes the copy back and leaves the source as it was.
        if (options.signal?.aborted) {
          await dest.connector.remove(moved.path, { recursive: true }).catch(() => {});
          options.signal.throwIfAborted();
        }
        left = await this.removeCopied(src.connector, entry, copied);
      }
    } catch (e) {
      claim.current.release(false);
      throw await settle(aside, e);
    }
    claim.current.release(true);
    await settle(aside);
    // What could not be removed goes to the source account's trash where it has one: the
    // source is gone from where it was, as after any move, and nothing is lost.
    const trashed = left.length > 0 && src.connector.features.trash ? await src.connector.features.trash.put(src.path).then(() => true, () => false) : false;
    this.entries.forget(accountId, src.path);
    this.touched(accountId, parentOf(src.path));
    this.touched(destAccount, dest.path, moved);
    if (left.length > 0) throw leftBehind(entry, moved, destAccount, left, trashed);
    return this.toResource(destAccount, moved);
  }

  /**
   * Removes the source of a streamed move. Where the files are on this computer's disk (the
   * local connector, `localFile`) only what was copied is removed, so what its listing leaves
   * out (a name that is not valid UTF-8, a link leading out, a socket) is never destroyed
   * unseen: each folder is first removed as it is, so a link goes by itself and never what it
   * leads to; a folder that is not empty loses its copied contents, then goes if it is empty.
   * Elsewhere the source goes in one recursive removal: object stores list every key, and SFTP,
   * WebDAV and SMB leave out only Tributary's own temporary files and dangling links, while
   * their servers follow links, so removing item by item could delete what a link leads to.
   * Resolves with what could not be removed.
   */
  private async removeCopied(c: StorageConnector, entry: Entry, copied: Map<string, Entry[]>): Promise<Left[]> {
    if (!c.features.localFile) {
      await c.remove(entry.path, { recursive: true });
      return [];
    }
    const left: Left[] = [];
    const removed = (e: Entry) =>
      c.remove(e.path, { recursive: false }).then(
        () => true,
        (err: unknown) => {
          if (err instanceof ServiceError && err.code === 'not_found') return true;
          if (err instanceof ServiceError && err.code === 'folder_not_empty') return false;
          left.push({ path: e.path, unlisted: false, reason: err instanceof Error ? err.message : String(err) });
          return undefined;
        },
      );
    const remove = async (e: Entry): Promise<void> => {
      const first = await removed(e);
      if (first !== false) return;
      for (const child of copied.get(e.path) ?? []) await remove(child);
      if ((await removed(e)) === false) left.push({ path: e.path, unlisted: true, reason: 'not empty' });
    };
    await remove(entry);
    return left;
  }

  /** Copies a file or folder tree; a taken name is settled by `to.conflict` as in `move`. */
  async copy(accountId: number, id: string, to: { parentId: string; name?: string; account?: number; conflict?: ConflictMode }, options: TransferOptions = {}): Promise<Resource> {
    if (id === 'trash') throw new ServiceError('forbidden', 'The trash folder cannot be copied.');
    const src = await this.locate(accountId, id);
    const entry = src.path === ROOT ? rootEntry() : await src.connector.stat(src.path);
    const destAccount = to.account ?? accountId;
    const dest = await this.locate(destAccount, to.parentId);
    await this.requireFolder(dest);
    if (destAccount === accountId && entry.kind === 'folder' && (dest.path === src.path || isInside(dest.path, src.path))) {
      throw new ServiceError('invalid_parameters', 'A folder cannot be copied into itself.');
    }
    const name = to.name !== undefined ? checkName(to.name) : entry.name || 'Root';
    options.signal?.throwIfAborted();
    const mode = to.conflict ?? 'rename';
    const target = joinPath(dest.path, name);
    if (destAccount === accountId && mode === 'overwrite' && (target === src.path || isInside(src.path, target))) {
      throw new ServiceError('invalid_parameters', 'A copy cannot replace its own source.');
    }
    const aside = mode === 'overwrite' ? await this.setAside(dest.connector, target, entry.kind) : undefined;
    const claim = { current: await this.claimName(destAccount, dest.connector, dest.path, name, aside ? 'fail' : mode).catch(async (e) => Promise.reject(await settle(aside, e))) };
    let copied: Entry;
    try {
      const { copy, copyFilesOnly } = src.connector.features;
      copied =
        destAccount === accountId && copy && (entry.kind === 'file' || !copyFilesOnly)
          ? await copy(src.path, joinPath(dest.path, claim.current.name))
          : await this.copyTree(src.connector, entry, dest.connector, dest.path, claim, options);
    } catch (e) {
      claim.current.release(false);
      throw await settle(aside, e);
    }
    claim.current.release(true);
    await settle(aside);
    this.touched(destAccount, dest.path, copied);
    return this.toResource(destAccount, copied);
  }

  /**
   * Replace for moves and copies: what has the name is moved aside (restored when the write
   * fails, removed once it is in), so a failed replace loses nothing. The aside name is a
   * dotfile every backend lists like any other (not a hidden temporary name, which some
   * backends cannot stat or remove once written), so even a crash leaves the old entry findable.
   * Only like replaces like: a file never replaces a folder, nor a folder a file. A backend
   * without a server-side move cannot set aside; there the old entry is removed first.
   */
  private async setAside(c: StorageConnector, path: string, kind: Entry['kind']): Promise<Aside | undefined> {
    const existing = await c.stat(path).catch((e) => (e instanceof ServiceError && e.code === 'not_found' ? undefined : Promise.reject(e)));
    if (!existing) return undefined;
    if (existing.kind !== kind) {
      throw new ServiceError('naming_conflict', `"${existing.name}" is a ${existing.kind} and cannot be replaced by a ${kind}.`);
    }
    if (!c.features.move) {
      await c.remove(path, { recursive: true });
      return undefined;
    }
    const temp = await c.features.move(path, joinPath(parentOf(path), `.tributary-${randomBytes(6).toString('hex')}.replaced`));
    return {
      commit: () => c.remove(temp.path, { recursive: true }).catch(() => {}),
      rollback: async () => {
        await c.features.move!(temp.path, path).catch(() => {});
      },
    };
  }

  /**
   * Streams a file or a whole folder tree from one connector into `folder` of another, under
   * the claimed name (the next free one when the publish finds it taken). Cancelled or failed,
   * it leaves no target: a file is published only once complete, a folder tree that was begun
   * is removed again.
   */
  private async copyTree(from: StorageConnector, entry: Entry, to: StorageConnector, folder: string, claim: { current: NameClaim }, options: TransferOptions, copied?: Map<string, Entry[]>): Promise<Entry> {
    if (entry.kind === 'file') return this.copyFile(from, entry, to, joinPath(folder, claim.current.name), { ...options, noReplace: this.noReplace(claim, folder, 'rename') });
    let root: Entry | undefined;
    while (!root) {
      root = await to.mkdir(joinPath(folder, claim.current.name)).catch(async (e) => {
        // Taken by a writer outside Tributary since the name was chosen: take the next one.
        if (!(e instanceof ServiceError && e.code === 'naming_conflict')) throw e;
        claim.current = await claim.current.next();
        return undefined;
      });
    }
    try {
      await this.copyChildren(from, entry.path, to, root.path, options, copied);
    } catch (e) {
      await to.remove(root.path, { recursive: true }).catch(() => {});
      throw e;
    }
    return root;
  }

  /** `copied` receives, for each source folder, its children once each is copied. */
  private async copyChildren(from: StorageConnector, source: string, to: StorageConnector, target: string, options: TransferOptions, copied?: Map<string, Entry[]>): Promise<void> {
    const done: Entry[] = [];
    copied?.set(source, done);
    for (const child of await from.list(source)) {
      options.signal?.throwIfAborted();
      const path = joinPath(target, child.name);
      if (child.kind === 'file') {
        // Within one account a file is copied on the server where the backend can.
        if (from === to && from.features.copy) await from.features.copy(child.path, path);
        else await this.copyFile(from, child, to, path, options);
      } else {
        await to.mkdir(path);
        await this.copyChildren(from, child.path, to, path, options, copied);
      }
      done.push(child);
    }
  }

  /**
   * Streams one file across connectors, stopped by `signal`. `progress` counts the bytes as the
   * writer takes them (not as they are read: the 1 MiB read-ahead would run ahead of the bytes
   * that reached the destination).
   */
  private async copyFile(from: StorageConnector, entry: Entry, to: StorageConnector, target: string, options: TransferOptions & { noReplace?: NoReplace }): Promise<Entry> {
    const { signal, progress } = options;
    signal?.throwIfAborted();
    const { localFile } = from.features;
    const { writeFile } = to.features;
    if (localFile && writeFile) {
      // From a file on this computer: the target reads it by its own means (the file system's
      // copy into another local folder, smbclient's put to SMB), counting as it goes where it can.
      let counted = 0;
      const onBytes = (n: number) => {
        counted += n;
        progress?.(n);
      };
      const written = await writeFile(target, await localFile(entry.path), { noReplace: options.noReplace, signal, onBytes });
      if ((written.size ?? 0) > counted) progress?.((written.size ?? 0) - counted);
      return written;
    }
    const source = await from.read(entry.path, { signal });
    // Read-ahead on the writable side; counted when a chunk moves to the small readable side,
    // which is when the writer asks for it.
    const pass = new Transform({
      writableHighWaterMark: 1 << 20,
      readableHighWaterMark: 1 << 16,
      transform(chunk: Buffer, _enc, done) {
        progress?.(chunk.length);
        done(null, chunk);
      },
    });
    try {
      const [written] = await Promise.all([
        this.writeSafely(to, target, pass, { size: entry.size ?? undefined, noReplace: options.noReplace, signal }),
        pipeline(source, pass, { signal }),
      ]);
      return written;
    } catch (e) {
      // Whichever side failed, release the other: a failed write must not leave the source
      // connection open, nor a failed read a writer waiting for bytes.
      source.destroy();
      pass.destroy();
      throw signal?.aborted ? signal.reason : e;
    }
  }

  /**
   * Deletes to the trash when the backend has one (unless `permanent`), else permanently. A move
   * to a trash that can give it back resolves with `restore`, the token `restore()` takes.
   */
  async delete(accountId: number, id: string, options: { permanent?: boolean; recursive?: boolean } = {}): Promise<{ restore?: string }> {
    this.forbidReserved(id, 'deleted');
    this.accounts.row(accountId);
    const provider = this.provider(accountId, id);
    if (provider?.delete) return (await provider.delete(accountId, id), {});
    const loc = await this.locate(accountId, id);
    const entry = await loc.connector.stat(loc.path);
    if (entry.kind === 'folder' && !options.recursive && (await loc.connector.list(loc.path)).length > 0) {
      throw new ServiceError('folder_not_empty', `The folder "${entry.name}" is not empty; delete it with recursive=true.`);
    }
    const trash = options.permanent ? undefined : loc.connector.features.trash;
    let trashed: string | undefined;
    if (trash) trashed = await trash.put(loc.path);
    else await loc.connector.remove(loc.path, { recursive: true });
    this.entries.forget(accountId, loc.path);
    this.touched(accountId, parentOf(loc.path));
    // Undo takes the trashed item's own id (sealed, bound to the account).
    return trash?.restore && trashed ? { restore: this.ids.encode(accountId, `${TRASHED}${trashed}`) } : {};
  }

  /** What deleting does on this account: to its trash (and whether Undo can bring it back) or permanently. */
  async deleteInfo(accountId: number): Promise<{ trash: boolean; undo: boolean }> {
    const { trash } = (await this.accounts.storage(accountId)).features;
    return { trash: !!trash, undo: !!trash?.restore };
  }

  /** Undoes a trash move: puts the trashed item (the id `delete` returned) back. */
  async restore(accountId: number, trashedId: string): Promise<Resource> {
    const upstream = this.ids.decode(accountId, trashedId);
    if (!upstream.startsWith(TRASHED)) throw new ServiceError('not_found', 'Nothing in the trash has this id.');
    const { restore } = (await this.accounts.storage(accountId)).features.trash ?? {};
    if (!restore) throw new ServiceError('not_implemented', 'This account cannot restore from its trash.');
    const entry = await restore(upstream.slice(TRASHED.length));
    this.touched(accountId, parentOf(entry.path), entry);
    return this.toResource(accountId, entry);
  }

  /**
   * Sharing permissions of a file or folder (spec 1 legacy permissions, spec 3 list-based
   * updates), where the backend has them; not_implemented (501) elsewhere.
   */
  async permissions(accountId: number, id: string): Promise<Permission[]> {
    const { feature, path } = await this.permissionsOf(accountId, id);
    return feature.list(path);
  }

  async updatePermissions(accountId: number, id: string, changes: PermissionChanges, options: { replace: boolean }): Promise<Permission[]> {
    const { feature, path } = await this.permissionsOf(accountId, id);
    return feature.update(path, changes, options);
  }

  private async permissionsOf(accountId: number, id: string): Promise<{ feature: PermissionsFeature; path: string }> {
    this.accounts.row(accountId);
    if (this.provider(accountId, id) || id === 'trash') throw new ServiceError('not_implemented', 'This item has no sharing permissions.');
    const loc = await this.locate(accountId, id);
    const feature = loc.connector.features.permissions;
    if (!feature) throw new ServiceError('not_implemented', `${this.accounts.get(accountId).serviceName} accounts have no sharing permissions.`);
    return { feature, path: loc.path };
  }

  /** Files seen most recently modified (spec 1, Recent files), from the listing cache. */
  recent(accountId: number, options: { after?: string; page: number; pageSize: number }): { total: number; items: Resource[] } {
    this.accounts.row(accountId);
    const { rows, total } = this.entries.recent(accountId, options.after ?? null, options.pageSize, (options.page - 1) * options.pageSize);
    return { total, items: rows.map((e) => this.toResource(accountId, e)) };
  }

  /**
   * What every write does once it is in: the listing cache, the snapshot of later pages and
   * `files.changed` for the folder. Public for the writes that finish outside this service's own
   * methods (a multipart session's complete).
   */
  touched(accountId: number, folder: string, entry?: Entry): void {
    if (entry) this.entries.upsert(accountId, parentOf(entry.path), entry);
    this.snapshots.delete(`${accountId}:${folder}`);
    this.events.emit('files.changed', { account: accountId, folder: this.idOf(accountId, folder) });
  }
}

interface Aside {
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** Something a streamed move copied but could not remove from the source. */
interface Left {
  path: string;
  /** A folder still holding entries the listing did not show (so they were never copied). */
  unlisted: boolean;
  reason: string;
}

/**
 * The answer of a move that left part of its source behind: folder_not_empty (409), naming how
 * many items and where, and where they are now. The copy at the destination stands.
 */
function leftBehind(entry: Entry, moved: Entry, destAccount: number, left: Left[], trashed: boolean): ServiceError {
  const n = left.length;
  const names = (ls: Left[]) => ls.slice(0, 5).map((l) => `"${l.path}"`).join(', ') + (ls.length > 5 ? ` and ${ls.length - 5} more` : '');
  const unlisted = left.filter((l) => l.unlisted);
  const failed = left.filter((l) => !l.unlisted);
  const why = [
    unlisted.length ? `${names(unlisted)} still ${unlisted.length === 1 ? 'holds' : 'hold'} entries Tributary does not list (names that are not valid UTF-8, links leading out of the folder, pipes, sockets or devices)` : '',
    failed.length ? `${names(failed)} could not be removed (${failed[0]!.reason})` : '',
  ].filter(Boolean);
  const where = trashed ? 'put in the trash of the source account, with what it holds' : 'left where it was';
  return new ServiceError(
    'folder_not_empty',
    `"${entry.name}" was moved to "${moved.path}" in account ${destAccount}, but ${n} ${n === 1 ? 'item was' : 'items were'} left in the source: ${why.join('; ')}. "${entry.path}" was ${where}.`,
  );
}

/** Ends a replace: without `error` the set-aside entry goes; with it, it comes back (and `error` is returned). */
async function settle(aside: Aside | undefined, error?: unknown): Promise<unknown> {
  if (error === undefined) await aside?.commit();
  else await aside?.rollback();
  return error;
}

function rootEntry(): Entry {
  return { path: ROOT, name: '', kind: 'folder', size: null, modified: null, created: null };
}

/** "a.txt" → "A.txt" in the same folder: on a case-insensitive backend the name is "taken" by itself. */
function isCaseOnlyRename(srcPath: string, destFolder: string, name: string): boolean {
  return parentOf(srcPath) === destFolder && baseName(srcPath).toLocaleLowerCase() === name.toLocaleLowerCase();
}
