/** A multipart part read straight from a file on this computer's disk (ChunkWriter.writeFilePart). */
import { createReadStream, type ReadStream } from 'node:fs';
import type { FilePart } from '../types';

/** Bytes read at a time: a part in flight holds a chunk or two, never the whole part. */
const CHUNK = 256 * 1024;

/** The part's bytes as a stream, opened afresh for each attempt (a stream is read once). */
export function openFilePart(part: FilePart): ReadStream {
  return createReadStream(part.path, { start: part.start, end: part.start + part.length - 1, highWaterMark: CHUNK });
}
