import { createWriteStream, WriteStream } from 'node:fs';
import { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

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

/** How often a stream written into a file reports its progress. */
const PROGRESS_MS = 250;

/**
 * `readToFile` from a connector's read stream: the stream is written into `file` from `start` on
 * (a new file when 0 and no `ranged`; else into the existing file, nothing else of it touched).
 * Progress is the written run (a file stream writes in order), reported every PROGRESS_MS and at
 * the end. Resolves with the bytes written.
 */
export async function streamIntoFile(stream: Readable, file: string, opts: { start: number; ranged?: boolean; onBytes?(n: number): void }): Promise<number> {
  const out = createWriteStream(file, { flags: opts.start > 0 || opts.ranged ? 'r+' : 'w', start: opts.start });
  let reported = 0;
  const report = () => {
    if (out.bytesWritten > reported) opts.onBytes?.(out.bytesWritten - reported);
    reported = out.bytesWritten;
  };
  const progress = opts.onBytes ? setInterval(report, PROGRESS_MS) : undefined;
  try {
    await pipeline(stream, out);
  } finally {
    clearInterval(progress);
    report();
  }
  return out.bytesWritten;
}
