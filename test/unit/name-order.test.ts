// The order of a folder listing (spec 1, "List a folder": children in a stable order): the
// ASCII fast path must order every pair of names exactly as the locale's collator does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nameOrder } from '../../src-main/services/name-order';

const sign = (n: number) => Math.sign(n);
const options = { numeric: true, sensitivity: 'base' } as const;

/** Names built from the characters where the two could disagree: digits, zeros, case, punctuation, marks. */
const piece = fc.constantFrom(
  'a', 'A', 'b', 'z', 'Z', 'h', 'c', 'ch', 'aa', 'y', 'i', 'v', 'w', 'cs',
  '0', '00', '1', '2', '9', '10', '007', ' ', '-', '_', '.', ',', '~', '$', '(', ')', '!', "'",
  'é', '\u0301', '\u0308', '٢', '١٠', '文', '\u00a0', '\t', 'ß', 'ﬁ',
);
const name = fc.array(piece, { maxLength: 8 }).map((p) => p.join(''));
const asciiName = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 12 });

describe('listing name order (spec 1, List a folder)', () => {
  for (const locale of ['en-US', 'de', 'fr', 'es', 'und', 'cs', 'da']) {
    it(`agrees with Intl.Collator('${locale}', numeric, base) on every pair of names`, () => {
      const collator = new Intl.Collator(locale, options);
      const order = nameOrder(collator);
      fc.assert(
        fc.property(fc.oneof(name, asciiName), fc.oneof(name, asciiName), (a, b) => {
          expect(order.compare(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(sign(collator.compare(a, b)));
        }),
        { numRuns: 20_000, seed: 17 },
      );
      // A whole listing: sorted by keys and by the collator, the names come out in one order
      // (up to names the collator calls equal).
      fc.assert(
        fc.property(fc.array(fc.oneof(name, asciiName), { maxLength: 60 }), (list) => {
          const ours = order.sort(list.slice(), (n) => n);
          for (let i = 1; i < ours.length; i++) expect(collator.compare(ours[i - 1]!, ours[i]!)).toBeLessThanOrEqual(0);
        }),
        { numRuns: 500, seed: 17 },
      );
    });
  }

  it('gives, item by item and in runs merged as they fill, exactly the stable sort by the collator', () => {
    const collator = new Intl.Collator('en', options);
    const order = nameOrder(collator);
    const item = fc.record({ name: fc.oneof(name, asciiName, name.map((n) => `${n}\u00e9`)), group: fc.integer({ min: 0, max: 2 }) });
    // Long enough to fill several runs, with many names the collator calls equal ("a"/"A", "01"/"1"):
    // their order must stay the order they were added in.
    fc.assert(
      fc.property(fc.array(item, { minLength: 2100, maxLength: 9000, size: 'max' }), (items) => {
        const reference = items.slice().sort((x, y) => x.group - y.group || collator.compare(x.name, y.name));
        const s = order.sorter<(typeof items)[number]>((i) => i.name, (i) => i.group);
        for (const i of items) s.add(i);
        const ours = s.done();
        expect(ours.length).toBe(reference.length);
        expect(ours.every((x, i) => x === reference[i])).toBe(true);
        const sorted = order.sort(items.slice(), (i) => i.name, (i) => i.group);
        expect(sorted.every((x, i) => x === reference[i])).toBe(true);
      }),
      { numRuns: 30, seed: 17 },
    );
  });

  it('orders numbers by value and ignores case and leading zeros (en)', () => {
    const order = nameOrder(new Intl.Collator('en', options));
    expect(order.sort(['file10', 'File2', 'file1', 'file02b', 'file2a'], (n) => n)).toEqual(['file1', 'File2', 'file2a', 'file02b', 'file10']);
    expect(order.compare('a01', 'A1')).toBe(0);
    // Folders first: the group goes before the name.
    const items = [{ n: 'b', g: 1 }, { n: 'z', g: 0 }, { n: 'a', g: 1 }];
    expect(order.sort(items, (i) => i.n, (i) => i.g).map((i) => i.n)).toEqual(['z', 'a', 'b']);
  });
});
