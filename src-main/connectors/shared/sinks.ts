import { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { WriteStream } from 'node:fs';

/**
 * Sinks whose write callback means the chunk is out of the caller's buffer (written to the
 * kernel, a file or a connection): an HTTP response, a socket, a file stream. A Transform or a
 * PassThrough is not one: it may hand the same chunk on after calling back.
 */
export function releasesAtCallback(dest: NodeJS.WritableStream): boolean {
  return dest instanceof ServerResponse || dest instanceof Socket || dest instanceof WriteStream;
}
