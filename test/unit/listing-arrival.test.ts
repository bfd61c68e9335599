// A listing taken in as its entries arrive (spec 1, "List a folder": children in a stable order):
// the same answer, whether the connector hands every entry over, some, none or others, as a
// comparison with the last listing and a sort done after the whole answer.
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src-main/connectors/types';
import { ArrivingListing, sameEntry, sameValue, sortListing } from '../../src-main/services/listing-arrival';

const entry = fc.record({
  name: fc.constantFrom('a', 'A', 'b', 'file2', 'file10', 'é', 'x y', '01', '1', 'Z'),
  kind: fc.constantFrom('file' as const, 'folder' as const),
  size: fc.constantFrom(null, 0, 1, 3),
  modified: fc.constantFrom(null, new Date(0), new Date(1000)),
  etag: fc.constantFrom(undefined, '"a"', '"b"'),
  raw: fc.constantFrom(undefined, { href: '/x', etag: null }, { href: '/x', etag: '"a"' }, { href: '/y', etag: null }),
});
const toEntry = (e: { name: string; kind: 'file' | 'folder'; size: number | null; modified: Date | null; etag?: string; raw?: Record<string, unknown> }): Entry => ({
  path: `/f/${e.name}`,
  name: e.name,
  kind: e.kind,
  size: e.size,
  modified: e.modified,
  created: null,
  ...(e.etag !== undefined ? { etag: e.etag } : {}),
  ...(e.raw !== undefined ? { raw: structuredClone(e.raw) } : {}),
});
const sameEntries = (a: Entry[], b: Entry[]) =>
  a.length === b.length &&
  a.every((x, i) => {
    const y = b[i]!;
    return x.path === y.path && x.name === y.name && x.kind === y.kind && x.size === y.size && x.modified?.getTime() === y.modified?.getTime() && x.etag === y.etag && isDeepStrictEqual(x.raw, y.raw);
  });

describe('a listing taken in as it arrives (spec 1, "List a folder")', () => {
  it('finds it unchanged exactly when every entry equals the last one, and else sorts it as sortListing does', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 40 }),
        fc.array(entry, { maxLength: 40 }),
        fc.boolean(),
        fc.constantFrom('all', 'some', 'none', 'others'),
        (lastRaw, nowRaw, reuse, how) => {
          const last = lastRaw.map(toEntry);
          // Often the same listing again (fresh objects), or the same with one entry changed.
          const now = reuse ? last.map((e) => structuredClone(e)) : nowRaw.map(toEntry);
          if (reuse && nowRaw.length && now.length) now[nowRaw.length % now.length] = toEntry(nowRaw[0]!);
          for (const previous of [last, undefined]) {
            const arriving = new ArrivingListing(previous);
            if (how === 'all') now.forEach(arriving.add);
            if (how === 'some') now.slice(0, now.length >> 1).forEach(arriving.add);
            if (how === 'others') now.slice(0, 3).map((e) => ({ ...e })).forEach(arriving.add);
            const got = arriving.finish(now);
            if (previous && sameEntries(previous, now)) expect(got).toBeNull();
            else {
              expect(got).not.toBeNull();
              const reference = sortListing(now.slice());
              expect(got!.length).toBe(reference.length);
              expect(got!.every((e, i) => e === reference[i])).toBe(true);
            }
          }
        },
      ),
      { numRuns: 3000, seed: 17 },
    );
  });

  it('compares entries and connector fields as isDeepStrictEqual does', () => {
    const value = fc.oneof(fc.anything(), fc.dictionary(fc.constantFrom('a', 'b', 'href'), fc.constantFrom(null, 0, -0, NaN, '', 'x', 1n, undefined)));
    fc.assert(
      fc.property(value, value, fc.boolean(), (a, b, copy) => {
        const y = copy ? structuredCloneOr(a) : b;
        expect(sameValue(a, y)).toBe(isDeepStrictEqual(a, y));
      }),
      { numRuns: 5000, seed: 17 },
    );
    const e = toEntry({ name: 'a', kind: 'file', size: 1, modified: new Date(5), etag: '"a"', raw: { href: '/a', etag: '"a"' } });
    expect(sameEntry(e, structuredClone(e))).toBe(true);
    expect(sameEntry(e, { ...e, raw: { href: '/a', etag: '"b"' } })).toBe(false);
    expect(sameEntry(e, { ...e, raw: { href: '/a', etag: '"a"', extra: 1 } })).toBe(false);
    expect(sameEntry(e, { ...e, raw: undefined })).toBe(false);
    expect(sameEntry(e, { ...e, hashes: { md5: 'x' } })).toBe(false);
    expect(sameEntry(e, { ...e, modified: new Date(6) })).toBe(false);
  });
});

function structuredCloneOr(v: unknown): unknown {
  try {
    return structuredClone(v);
  } catch {
    return v;
  }
}
