// spec 1, "Upload a file": a taken name becomes "name (n).ext"; names are limited to 255 UTF-8
// bytes (README, Limits), so the numbered name shortens the stem, keeps the extension and never
// splits a character.
import { describe, expect, it } from 'vitest';
import { checkName, MAX_NAME_BYTES, numberedName } from '../../src-main/connectors/shared/paths';

describe('numberedName (spec 1, upload rules)', () => {
  it('numbers short names as "name (n).ext"', () => {
    expect(numberedName('report.final.pdf', 1)).toBe('report.final (1).pdf');
    expect(numberedName('.bashrc', 2)).toBe('.bashrc (2)');
    expect(numberedName('notes', 10)).toBe('notes (10)');
  });

  it('shortens a 255-byte stem of multi-byte characters and surrogate pairs without cutting one', () => {
    for (const unit of ['é', '€', '😀', 'a']) {
      const stem = unit.repeat(Math.floor((MAX_NAME_BYTES - 4) / Buffer.byteLength(unit)));
      const name = `${stem}.pdf`.slice(0, 400);
      for (const n of [1, 9, 10, 123, 9999]) {
        const got = numberedName(name, n);
        expect(Buffer.byteLength(got)).toBeLessThanOrEqual(MAX_NAME_BYTES);
        expect(got.endsWith(` (${n}).pdf`)).toBe(true);
        expect(got).not.toMatch(/\uFFFD|[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
        expect(() => checkName(got)).not.toThrow();
      }
    }
  });

  it('numbers the whole name when the extension alone would not fit', () => {
    const name = `a.${'x'.repeat(252)}`;
    const got = numberedName(name, 3);
    expect(Buffer.byteLength(got)).toBeLessThanOrEqual(MAX_NAME_BYTES);
    expect(got.endsWith(' (3)')).toBe(true);
  });
});
