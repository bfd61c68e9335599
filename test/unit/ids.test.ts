// spec 1, File `id` and Limits (ids are at most 8192 characters): the id codec.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src-main/errors';
import { IdCodec, isSpecialId, MAX_ID_LENGTH } from '../../src-main/ids';

const key = randomBytes(32);
const codec = new IdCodec(key);

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof ServiceError ? e.code : 'not a ServiceError';
  }
  return undefined;
}

describe('ids (spec 1, File id)', () => {
  it('round-trips upstream ids of every shape', () => {
    const paths = ['/', '/a', '/a b  c.txt', '/Ünïcødé 文件 ✓.txt', '/emoji 🦀/x', '/deep/' + 'n/'.repeat(200) + 'leaf', "/it's #1 & 50%?.txt", '/' + 'x'.repeat(4000)];
    for (const p of paths) {
      const id = codec.encode(7, p);
      expect(id).toMatch(/^[A-Za-z0-9_-]+$/); // URL-safe base64
      expect(id.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
      expect(codec.decode(7, id)).toBe(p);
    }
  });

  it('is deterministic: same pair, same id, across codec instances with the same key', () => {
    const a = codec.encode(3, '/docs/report.pdf');
    expect(codec.encode(3, '/docs/report.pdf')).toBe(a);
    expect(new IdCodec(Buffer.from(key)).encode(3, '/docs/report.pdf')).toBe(a);
    expect(codec.encode(3, '/docs/report2.pdf')).not.toBe(a);
    expect(codec.encode(4, '/docs/report.pdf')).not.toBe(a);
  });

  it('reads every tampered, truncated, extended or foreign id as not_found', () => {
    const id = codec.encode(5, '/secret/plan.txt');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < id.length; i++) {
      const c = id[i]!;
      const other = alphabet[(alphabet.indexOf(c) + 1 + (i % 60)) % 64]!;
      const tampered = id.slice(0, i) + other + id.slice(i + 1);
      // The last character may carry only padding bits; a change there can decode to the same bytes.
      if (Buffer.from(tampered, 'base64url').equals(Buffer.from(id, 'base64url'))) continue;
      expect(code(() => codec.decode(5, tampered)), `position ${i}`).toBe('not_found');
    }
    for (const cut of [1, 2, 5, 16, id.length - 1]) expect(code(() => codec.decode(5, id.slice(0, id.length - cut)))).toBe('not_found');
    expect(code(() => codec.decode(5, id + 'AAAA'))).toBe('not_found');
    expect(code(() => codec.decode(6, id))).toBe('not_found'); // another account
    expect(code(() => new IdCodec(randomBytes(32)).decode(5, id))).toBe('not_found'); // another installation
    for (const junk of ['', 'root', '../etc/passwd', 'A'.repeat(9000), '%2F%2E%2E', 'é'.repeat(50)]) {
      expect(code(() => codec.decode(5, junk)), junk.slice(0, 20)).toBe('not_found');
    }
  });

  it('refuses to mint an id above 8192 characters (invalid_parameters)', () => {
    expect(code(() => codec.encode(1, '/' + 'x'.repeat(7000)))).toBe('invalid_parameters');
  });

  it('keeps root, trash and ephemeral as reserved plain ids', () => {
    expect(['root', 'trash', 'ephemeral'].every(isSpecialId)).toBe(true);
    expect(isSpecialId(codec.encode(1, '/root'))).toBe(false);
  });
});
