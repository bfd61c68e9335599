/**
 * Asking V8 to hand memory back to the system once after a burst of work that leaves a long-lived
 * process idle, such as a tree watch's first read of a large folder.
 *
 * Why: that read makes about 300 MB of short-lived garbage over 100,000 files (a Stats with four
 * Dates and a promise per `lstat`). V8 doubles its young generation for it (16 → 32 MB) and shrinks
 * it only at a later young collection that sees little allocation since the one before; its
 * memory reducer, which would free the rest, waits until the allocation rate it measured falls
 * below its threshold. Idle, `serve` allocates so little that neither comes for 20 s to minutes:
 * 129–135 MB 15 s after the first listing with a 100,000-file folder, 98–101 MB with this (93–96
 * with the folder's names read a batch at a time as well; docs/measurements.md). Making less garbage did not do it: reading the names on a worker
 * thread left the main thread 32 MB of garbage, yet 138–144 MB, the worker's memory not all given
 * back. A plain full collection leaves the young generation as it is.
 *
 * Node has no API for it; `gc` is exposed at run time in a context of its own.
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
