/**
 * What a tree watch keeps of each name (src-main/connectors/local/tree-watch.ts, KnownNames):
 * packed into typed arrays, every field comes back exactly as it was stored (inodes up to 2^53,
 * fractional and negative times), names keep the order they were first stored in, and a deleted
 * name's room is used again, all as a Map of `Known` objects would.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KnownNames, type Known } from '../../src-main/connectors/local/tree-watch';

const time = fc.oneof(fc.double({ min: -1e13, max: 1e13, noNaN: true }), fc.integer({ min: 0, max: 2 ** 41 }).map((ms) => ms + 0.123456789));
const known: fc.Arbitrary<Known> = fc.oneof(
  fc.record({ kind: fc.constant('file' as const), ino: fc.maxSafeNat(), size: fc.maxSafeNat(), mtimeMs: time, ctimeMs: time }),
  fc.record({ kind: fc.constant('folder' as const), ino: fc.maxSafeNat(), size: fc.constant(0), mtimeMs: time, ctimeMs: time }),
);
const name = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'é', '文', 'a b.txt');
const op = fc.oneof(
  fc.record({ set: name, k: known }),
  fc.record({ del: name }),
  fc.record({ reserve: fc.nat(20) }),
);

describe('KnownNames: what a tree watch keeps of each name', () => {
  it('gives back every field exactly, in the order a Map would, through sets, deletes and growth', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const store = new KnownNames();
        const model = new Map<string, Known>();
        for (const o of ops) {
          if ('set' in o) {
            store.set(o.set, o.k);
            model.set(o.set, o.k);
          } else if ('del' in o) expect(store.delete(o.del)).toBe(model.delete(o.del));
          else store.reserve(o.reserve);
          expect(store.size).toBe(model.size);
        }
        expect([...store]).toEqual([...model]);
        expect([...store.keys()]).toEqual([...model.keys()]);
        for (const n of ['a', 'z', '文']) expect(store.get(n)).toEqual(model.get(n));
      }),
      { numRuns: 2_000, seed: 23 },
    );
  });

  it('an inode past 2^32, a size past 4 GiB and times with a fraction of a millisecond come back as stored', () => {
    const store = new KnownNames();
    const big: Known = { kind: 'file', ino: 2 ** 53 - 1, size: 5 * 2 ** 30 + 7, mtimeMs: 1796640611990.6057, ctimeMs: -1.5 };
    store.set('big', big);
    for (let i = 0; i < 1000; i++) store.set(`f${i}`, { kind: i % 2 ? 'folder' : 'file', ino: i, size: 0, mtimeMs: i / 3, ctimeMs: i });
    expect(store.get('big')).toEqual(big);
    expect(store.get('f999')).toEqual({ kind: 'folder', ino: 999, size: 0, mtimeMs: 333, ctimeMs: 999 });
    expect(store.get('f3')?.mtimeMs).toBe(1);
    expect(store.get('f4')?.mtimeMs).toBe(4 / 3);
  });
});
