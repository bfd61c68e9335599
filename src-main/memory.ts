/**
 * Asking V8 to hand memory back to the system once a burst of work has left a long-lived process
 * idle: a tree watch's first read of a large folder, or the pages of a large folder being read
 * (each page asks; an ask while a round waits to run joins that round).
 *
 * Why: V8 collects by allocation, and an idle `serve` allocates almost nothing.
 * - A watch's first read of 100,000 files makes about 300 MB of short-lived garbage (a Stats with
 *   four Dates and a promise per `lstat`). V8 doubles its young generation for it (16 → 32 MB)
 *   and shrinks it only at a later young collection that sees little allocation since the one
 *   before; its memory reducer, which would free the rest, waits until the allocation rate it
 *   measured falls below its threshold. Neither came for 20 s to minutes: 129–135 MB 15 s after
 *   the first listing with a 100,000-file folder, 98–101 MB with this (93–96 with the names read a
 *   batch at a time as well; docs/measurements.md). Reading the names on a worker thread left
 *   138–144 MB, the worker's memory not all given back. A plain full collection leaves the young
 *   generation as it is.
 * - Every page of a folder of 100,000 entries read through left about 140 MB of garbage in the
 *   heap, there for good once idle: 232 MB used 15 s after, 93 MB after one full collection.
 *
 * Node has no API for it; `gc` is exposed at run time in a context of its own.
 *
 * And the other way round: room in the heap's limit while transfers stream (withStreamingHeadroom).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full collection; `{ type: 'minor' }` a young one. */
type Collect = (options?: { type: 'minor' }) => void;

/** V8 judges the allocation rate over this long when it decides whether to shrink its young generation. */
const RATE_WINDOW_MS = 5000;

let collect: Collect | undefined;
let pending = false;

function collector(): Collect | undefined {
  if (!collect) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as Collect;
    } catch {
      return undefined;
    }
  }
  return collect;
}

/**
 * Soon after a burst of garbage: a young collection now ends the burst's count of allocation, and
 * one more than RATE_WINDOW_MS later, when only idle allocation has come since, lets V8 shrink
 * its young generation; a full collection then frees what the burst left in the old one. Once
 * per burst however often asked; the timers do not keep the process alive.
 */
export function handMemoryBackSoon(): void {
  if (pending) return;
  const gc = collector();
  if (!gc) return;
  pending = true;
  setTimeout(() => {
    gc({ type: 'minor' });
    setTimeout(() => {
      pending = false;
      gc({ type: 'minor' });
      gc();
    }, RATE_WINDOW_MS + 1000).unref();
  }, 1000).unref();
}

/**
 * Old-generation growth while a streamed transfer runs (V8's `--heap-growing-percent`; 0 is V8's
 * own choice). V8 counts the memory of Buffers allocated since its last full collection against
 * the old generation's limit, and after an idle spell it sets that limit at about 1.3 times the
 * heap. A stream of fresh chunks then starts a full collection at nearly every young one: 35–38
 * for a 1 GiB WebDAV upload after 12 s idle, 2.4–2.7 s of CPU; with the limit at twice the heap,
 * 0–1 and 0.5–0.8 s (docs/measurements.md).
 */
const STREAMING_GROWTH_PERCENT = 100;
let streams = 0;

/**
 * Runs a transfer that streams fresh Buffers with room for them in the old generation's limit.
 * The limit is recomputed at each full collection: the growth chosen here applies from the
 * first one in the transfer, and V8's own again from the first one after the last transfer.
 */
export async function withStreamingHeadroom<T>(transfer: () => Promise<T>): Promise<T> {
  if (streams++ === 0) setFlagsFromString(`--heap-growing-percent=${STREAMING_GROWTH_PERCENT}`);
  try {
    return await transfer();
  } finally {
    if (--streams === 0) setFlagsFromString('--heap-growing-percent=0');
  }
}
