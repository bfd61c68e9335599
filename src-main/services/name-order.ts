/**
 * The order of names in a listing: the user's locale, case-insensitive, numbers by value
 * ("file2" before "file10"), as `Intl.Collator(undefined, { numeric: true, sensitivity: 'base' })`.
 *
 * The collator with `numeric` on sorted a 20,000-entry folder in 150-450 ms, as long as reading
 * that folder over SFTP. A name of printable ASCII (nearly every name) gets a sort key once
 * instead: each character as its rank in the collator's own order of those characters, each
 * digit run as its value; keys compare as plain strings. Only in locales that give ASCII no
 * rules of their own (no "ch" after "h", no "aa" after "z"); other names and locales go to the
 * collator. test/unit/name-order.test.ts checks both agree on random names.
 */

/** Languages whose collation orders ASCII like the root (checked in the unit test). */
const PLAIN_ASCII_LANGUAGES = new Set(['und', 'en', 'de', 'fr', 'it', 'pt', 'nl', 'es']);
/** Sort keys start above the control characters, for readability when debugging. */
const KEY_BASE = 0x20;

export interface NameOrder {
  /** The sort key of a name, or null when only the collator can place it. */
  key(name: string): string | null;
  /** -1, 0 or 1: `a` before, with or after `b`. */
  compare(a: string, b: string): number;
  /** Sorts `items` in place: by `group` first (a small whole number, lower first), then by name. */
  sort<T>(items: T[], nameOf: (item: T) => string, group?: (item: T) => number): T[];
  /**
   * The same sort, taking the items one at a time (a listing while its answer arrives): most of
   * the work is done as they come, and `done()` returns them in exactly the order `sort` gives.
   */
  sorter<T>(nameOf: (item: T) => string, group?: (item: T) => number): Sorter<T>;
}

export interface Sorter<T> {
  add(item: T): void;
  /** Every item added, in order; the sorter is not used again. */
  done(): T[];
}

/** Items sorted together before a run is merged with the ones before it. */
const RUN = 2048;

/** The collator's rank of each printable ASCII character (case pairs share one); null: none. */
function ranksOf(c: Intl.Collator): Int16Array | null {
  if (!PLAIN_ASCII_LANGUAGES.has(new Intl.Locale(c.resolvedOptions().locale).language)) return null;
  const chars: string[] = [];
  for (let code = 0x20; code < 0x7f; code++) chars.push(String.fromCharCode(code));
  chars.sort(c.compare);
  const rank = new Int16Array(0x7f).fill(-1);
  let r = 0;
  chars.forEach((ch, i) => {
    if (i > 0 && c.compare(chars[i - 1]!, ch) !== 0) r++;
    rank[ch.charCodeAt(0)] = r;
  });
  return rank;
}

const isDigit = (code: number) => code >= 48 && code <= 57;
const sign = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function nameOrder(c: Intl.Collator): NameOrder {
  const rank = ranksOf(c);
  // A digit run: the rank digits share as a group, then its length, then its digits.
  const number = rank ? String.fromCharCode(KEY_BASE + rank[48]!) : '';
  const key = (name: string): string | null => {
    if (!rank) return null;
    let out = '';
    for (let i = 0; i < name.length; ) {
      const code = name.charCodeAt(i);
      if (code < 0x20 || code >= 0x7f) return null;
      if (!isDigit(code)) {
        out += String.fromCharCode(KEY_BASE + rank[code]!);
        i++;
        continue;
      }
      while (name.charCodeAt(i) === 48) i++; // leading zeros do not count
      const start = i;
      while (isDigit(name.charCodeAt(i))) i++;
      // The collator cuts numbers longer than 254 digits; such names are left to it.
      if (i - start > 200) return null;
      out += number + String.fromCharCode(KEY_BASE + i - start) + name.slice(start, i);
    }
    return out;
  };
  const compare = (a: string, b: string) => {
    const ka = key(a);
    const kb = key(b);
    return ka !== null && kb !== null ? sign(ka, kb) : Math.sign(c.compare(a, b));
  };
  interface Placed<T> {
    item: T;
    name: string;
    group: number;
    /** The group's character, then the name's key; null when only the collator can place the name. */
    key: string | null;
  }
  // Stable runs merged pairwise as they fill (as a binary counter), earlier run first on ties: the
  // result is the stable sort of everything added by this one comparison.
  const before = <T>(x: Placed<T>, y: Placed<T>) =>
    x.key !== null && y.key !== null ? x.key < y.key : x.group < y.group || (x.group === y.group && c.compare(x.name, y.name) < 0);
  const merge = <T>(a: Placed<T>[], b: Placed<T>[]): Placed<T>[] => {
    if (!before(b[0]!, a[a.length - 1]!)) return a.concat(b); // already in order (a sorted answer)
    const out: Placed<T>[] = [];
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) out.push(before(b[j]!, a[i]!) ? b[j++]! : a[i++]!);
    while (i < a.length) out.push(a[i++]!);
    while (j < b.length) out.push(b[j++]!);
    return out;
  };
  const sorter = <T>(nameOf: (item: T) => string, group: (item: T) => number = () => 0): Sorter<T> => {
    const runs: Placed<T>[][] = [];
    let block: Placed<T>[] = [];
    const close = () => {
      if (!block.length) return;
      block.sort((x, y) => (before(x, y) ? -1 : before(y, x) ? 1 : 0));
      runs.push(block);
      block = [];
    };
    return {
      add(item) {
        const name = nameOf(item);
        const g = group(item);
        const k = key(name);
        block.push({ item, name, group: g, key: k === null ? null : String.fromCharCode(KEY_BASE + g) + k });
        if (block.length < RUN) return;
        close();
        while (runs.length > 1 && runs[runs.length - 1]!.length >= runs[runs.length - 2]!.length) {
          const b = runs.pop()!;
          runs.push(merge(runs.pop()!, b));
        }
      },
      done() {
        close();
        while (runs.length > 1) {
          const b = runs.pop()!;
          runs.push(merge(runs.pop()!, b));
        }
        return (runs[0] ?? []).map((p) => p.item);
      },
    };
  };
  const sort = <T>(items: T[], nameOf: (item: T) => string, group?: (item: T) => number): T[] => {
    const s = sorter(nameOf, group);
    for (const item of items) s.add(item);
    s.done().forEach((item, i) => (items[i] = item));
    return items;
  };
  return { key, compare, sort, sorter };
}

/** Names in the user's locale order (see the top of this file). */
export const listingOrder = nameOrder(new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' }));
