import { WriteStream } from 'node:fs';
import { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Readable } from 'node:stream';

/**
 * Sinks whose write callback means the chunk is out of the caller's buffer (written to the
 * kernel, a file or a connection): an HTTP response, a socket, a file stream. A Transform or a
 * PassThrough is not one: it may hand the same chunk on after calling back.
 */
export function releasesAtCallback(dest: NodeJS.WritableStream): boolean {
  return dest instanceof ServerResponse || dest instanceof Socket || dest instanceof WriteStream;
}

/**
 * A download's stream that, piped into a sink that `releasesAtCallback` before it flows, hands
 * the pipe to `direct` (which writes into the sink from a few reused buffers and answers true);
 * every other consumer, or a refusal, gets an ordinary pipe with chunks of its own.
 */
export class DirectPipeReadable extends Readable {
  constructor(
    opts: ConstructorParameters<typeof Readable>[0],
    private readonly direct: (dest: NodeJS.WritableStream, end: boolean) => boolean,
  ) {
    super(opts);
  }

  override pipe<T extends NodeJS.WritableStream>(dest: T, opts?: { end?: boolean }): T {
    if (this.readableFlowing !== null || !releasesAtCallback(dest) || !this.direct(dest, opts?.end !== false)) return super.pipe(dest, opts);
    dest.emit('pipe', this);
    return dest;
  }
}
