/**
 * A folder listing taken in as its entries arrive (connectors that read their answer piece by
 * piece hand each entry over as it is made): compared with the folder's last listing and, once it
 * differs, sorted for the page while the rest of the answer is on its way. What is left when the
 * answer ends is a merge of sorted runs, not a comparison or a sort of 100,000 entries.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Entry } from '../connectors/types';
import { listingOrder, type Sorter } from './name-order';

/** Folders first, then by name as people read numbers ("file 2" before "file 10"). */
export function sortListing(children: Entry[]): Entry[] {
  return listingOrder.sort(children, (e) => e.name, listingGroup);
}

const listingGroup = (e: Entry) => (e.kind === 'folder' ? 0 : 1);

export class ArrivingListing {
  private readonly got: Entry[] = [];
  /** Whether every entry so far equals the last listing's entry at the same place. */
  private same: boolean;
  /** Made once the listing differs from the last one; until then sorting may not be needed. */
  private sorter: Sorter<Entry> | undefined;

  /** `last`: the folder's last listing as it came, when there is one. */
  constructor(private readonly last: Entry[] | undefined) {
    this.same = last !== undefined;
  }

  /** Takes the next entry, in the order of the listing. */
  readonly add = (entry: Entry): void => {
    const i = this.got.length;
    this.got.push(entry);
    if (this.same && (i >= this.last!.length || !sameEntry(this.last![i]!, entry))) this.same = false;
    if (this.same) return;
    if (!this.sorter) {
      this.sorter = listingOrder.sorter(({ name }: Entry) => name, listingGroup);
      for (let j = 0; j < i; j++) this.sorter.add(this.got[j]!);
    }
    this.sorter.add(entry);
  };

  /**
   * The whole listing as the connector returned it: null when it equals the last one (every
   * field, in the same order), else its entries sorted. Entries the connector did not hand over
   * (or handed over otherwise than it returned them) are taken from `upstream` here.
   */
  finish(upstream: Entry[]): Entry[] | null {
    const got = this.got;
    let handed = got.length <= upstream.length;
    for (let i = 0; handed && i < got.length; i++) handed = got[i] === upstream[i];
    const taken = handed ? this.got.length : 0;
    if (!handed) {
      // Start over from what was returned.
      got.length = 0;
      this.same = this.last !== undefined;
      this.sorter = undefined;
    }
    for (let i = taken; i < upstream.length; i++) this.add(upstream[i]!);
    if (this.same && upstream.length === this.last!.length) return null;
    if (!this.sorter) {
      // Equal so far but shorter than the last listing: nothing was sorted yet.
      this.same = false;
      this.sorter = listingOrder.sorter(({ name }: Entry) => name, listingGroup);
      for (const e of got) this.sorter.add(e);
    }
    return this.sorter.done();
  }
}

/** Whether two upstream entries are the same (every field compared). */
export function sameEntry(x: Entry, y: Entry): boolean {
  return (
    x.path === y.path &&
    x.name === y.name &&
    x.kind === y.kind &&
    x.size === y.size &&
    x.modified?.getTime() === y.modified?.getTime() &&
    x.created?.getTime() === y.created?.getTime() &&
    x.etag === y.etag &&
    x.mimeType === y.mimeType &&
    ((x.raw === undefined && y.raw === undefined) || sameValue(x.raw, y.raw)) &&
    ((x.hashes === undefined && y.hashes === undefined) || sameValue(x.hashes, y.hashes))
  );
}

/**
 * `isDeepStrictEqual`, answered without it for the common case: two plain objects whose own
 * values are the same primitives (a connector's raw fields), which the generic walk takes
 * several times as long to compare.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && Object.getPrototypeOf(a) === Object.prototype && Object.getPrototypeOf(b) === Object.prototype) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    let flat = ka.length === kb.length && Object.getOwnPropertySymbols(a).length === 0 && Object.getOwnPropertySymbols(b).length === 0;
    for (let i = 0; flat && i < ka.length; i++) {
      const k = ka[i]!;
      const va = (a as Record<string, unknown>)[k];
      flat = Object.prototype.hasOwnProperty.call(b, k) && (va === null || typeof va !== 'object') && typeof va !== 'function' && Object.is(va, (b as Record<string, unknown>)[k]);
    }
    if (flat) return true;
  }
  return isDeepStrictEqual(a, b);
}
