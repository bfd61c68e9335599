/**
 * spec 1, Download a file (a byte range): some S3-compatible servers answer a range with more
 * than was asked (the whole object, or s3rver's "bytes=0-0" up to the end), and the connector cuts
 * the answer down. The answer's body is let go however the cut stream ends: at its last byte,
 * on the answer's failure, or when its reader goes away first (a cancelled download), which
 * would otherwise leave the response and its socket open.
 */
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { sliceStream } from '../../src-main/connectors/s3';

/** An answer that never ends by itself: 64 KiB of its offset's low byte per read, a read a tick. */
const endless = () => {
  let pos = 0;
  return new Readable({
    read() {
      setImmediate(() => this.push(Buffer.alloc(65536, pos++ & 0xff)));
    },
  });
};

const readAll = async (r: Readable) => {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

describe('S3 range answers cut down to the asked bytes', () => {
  it('bytes start..end of the answer, and the rest of the answer is not read', async () => {
    const body = Readable.from([Buffer.from('abcdefgh'), Buffer.from('ijklmnop')]);
    expect((await readAll(sliceStream(body, 3, 9))).toString()).toBe('defghij');
    expect(body.destroyed).toBe(true);
    const open = endless();
    expect((await readAll(sliceStream(open, 65536 * 2, 65536 * 2 + 3))).equals(Buffer.alloc(4, 2))).toBe(true);
    expect(open.destroyed).toBe(true);
  });

  it("the answer's failure fails the cut stream", async () => {
    const body = new Readable({ read() {} });
    const cut = sliceStream(body, 0);
    body.push(Buffer.from('abc'));
    body.destroy(new Error('connection reset'));
    await expect(readAll(cut)).rejects.toThrow('connection reset');
  });

  it('a reader that goes away before the end lets go of the answer', async () => {
    const body = endless();
    const cut = sliceStream(body, 10);
    await once(cut, 'data');
    cut.destroy();
    await expect.poll(() => body.destroyed).toBe(true);
  });
});
