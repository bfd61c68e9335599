/**
 * The free-name rule (spec 1, upload rules: a taken name becomes "name (n).ext") and its
 * in-process reservations: the one place uploads, moves, copies and multipart sessions choose
 * the name they write under.
 *
 * Choosing a name and publishing a file under it must be one step per folder. A name handed out
 * here stays reserved for its (account, folder) until the writer releases it, so concurrent
 * writers in this process never pick the same name, while their bytes still go up in parallel
 * (only the choice is exclusive, not the write). Writers outside Tributary are kept out by the
 * connectors' no-replace publish (`WriteOptions.noReplace`); when that finds the name taken,
 * `NameClaim.next` hands out the next free one.
 */
import { numberedName } from '../connectors/shared/paths';
import type { Entry, StorageConnector } from '../connectors/types';
import { ServiceError } from '../errors';

export type ConflictMode = 'rename' | 'overwrite' | 'fail';

const MAX_RENAME_ATTEMPTS = 10_000;

export interface NameClaim {
  readonly name: string;
  /** The file the write replaces (overwrite mode, name taken by a file). */
  readonly replaces?: Entry;
  /**
   * The publish found `name` taken after all (a writer outside Tributary): in rename mode, the
   * next free name (this claim is released); otherwise naming_conflict.
   */
  next(): Promise<NameClaim>;
  /** Ends the reservation; `published` when a file now exists under the name. */
  release(published: boolean): void;
}

export interface ClaimRequest {
  account: number;
  connector: StorageConnector;
  folder: string;
  name: string;
  mode: ConflictMode;
  /** Names that count as taken besides the listing and the live reservations (open multipart sessions). */
  alsoTaken?: Iterable<string>;
  /** The id reported as `conflictingResourceId` on naming_conflict. */
  idOf?: (path: string) => string;
}

interface FolderState {
  /** Reserved names (by key) and how many claims hold each. */
  held: Map<string, number>;
  /** Names published since `seq` was this value; kept while some claim's listing may predate them. */
  published: Map<string, number>;
  seq: number;
  /** Claims between their listing and their choice. */
  listing: number;
}

export class NameReservations {
  private readonly folders = new Map<string, FolderState>();
  /** Claims that outlive the call that made them (a multipart session's name), by owner. */
  private readonly kept = new Map<string, NameClaim>();

  /** Keeps `claim` for `owner` (replacing what it kept) until `drop`. */
  keep(owner: string, claim: NameClaim): void {
    const before = this.kept.get(owner);
    if (before && before !== claim) before.release(false);
    this.kept.set(owner, claim);
  }

  keptBy(owner: string): NameClaim | undefined {
    return this.kept.get(owner);
  }

  /** Ends the claim `owner` kept; `published` when its file now exists. */
  drop(owner: string, published: boolean): void {
    this.kept.get(owner)?.release(published);
    this.kept.delete(owner);
  }

  /** Lists the folder and reserves a name for `name` by the conflict mode. */
  async claim(req: ClaimRequest, exclude: ReadonlySet<string> = new Set()): Promise<NameClaim> {
    const { connector: c } = req;
    const key = (n: string) => (c.features.caseSensitive ? n : n.toLocaleLowerCase());
    const folderKey = `${req.account}:${req.folder}`;
    const state = this.state(folderKey);
    const listedAt = state.seq;
    state.listing++;
    let siblings: Entry[];
    try {
      siblings = await c.list(req.folder);
    } finally {
      state.listing--;
    }
    // From here to the reservation nothing awaits: the choice and the reservation are one step.
    const onDisk = new Map(siblings.map((e) => [key(e.name), e]));
    const excluded = new Set([...exclude, ...[...(req.alsoTaken ?? [])].map(key)]);
    const taken = (n: string) => {
      const k = key(n);
      const at = state.published.get(k);
      // A name published after our listing started may be missing from it.
      return onDisk.has(k) || state.held.has(k) || (at !== undefined && at > listedAt) || excluded.has(k);
    };
    const conflict = (existing: Entry | undefined) =>
      new ServiceError('naming_conflict', `"${req.name}" already exists in this folder.`, existing && req.idOf ? { conflictingResourceId: req.idOf(existing.path) } : {});

    let chosen: { name: string; replaces?: Entry } | undefined;
    const existing = onDisk.get(key(req.name));
    if (req.mode === 'overwrite' && !excluded.has(key(req.name))) {
      // Overwriting writers may share a name: the last one to publish wins, as with any overwrite.
      // A folder is never replaced by a file.
      if (existing?.kind === 'folder') throw conflict(existing);
      chosen = { name: req.name, replaces: existing };
    } else if (!taken(req.name)) {
      chosen = { name: req.name };
    } else if (req.mode !== 'rename') {
      throw conflict(existing);
    } else {
      for (let n = 1; n < MAX_RENAME_ATTEMPTS && !chosen; n++) {
        const candidate = numberedName(req.name, n);
        if (!taken(candidate)) chosen = { name: candidate };
      }
      if (!chosen) throw new ServiceError('naming_conflict', `No free name was found for "${req.name}".`);
    }
    if (state.listing === 0) state.published.clear();

    const k = key(chosen.name);
    state.held.set(k, (state.held.get(k) ?? 0) + 1);
    let released = false;
    const release = (published: boolean) => {
      if (released) return;
      released = true;
      const count = (state.held.get(k) ?? 1) - 1;
      if (count > 0) state.held.set(k, count);
      else state.held.delete(k);
      if (published) state.published.set(k, ++state.seq);
      if (state.held.size === 0 && state.listing === 0) this.folders.delete(folderKey);
    };
    return {
      ...chosen,
      release,
      next: async () => {
        release(false);
        if (req.mode !== 'rename') {
          throw new ServiceError('naming_conflict', `"${chosen.name}" already exists in this folder.`);
        }
        // The name is taken upstream although our listing did not show it: skip it even if the
        // new listing still does not (eventually consistent listings).
        return this.claim(req, new Set([...exclude, k]));
      },
    };
  }

  private state(folderKey: string): FolderState {
    let s = this.folders.get(folderKey);
    if (!s) {
      s = { held: new Map(), published: new Map(), seq: 0, listing: 0 };
      this.folders.set(folderKey, s);
    }
    return s;
  }
}
