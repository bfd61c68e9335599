/**
 * A copy of a file of this computer by the file system (a reflink where the file system clones,
 * `copy_file_range` on one disk, an in-kernel copy across disks), with its bytes counted as the
 * copy grows and a cancel that stops it part-way.
 *
 * `fs.copyFile` is one call that nothing can stop: a cancel of a copy of many gigabytes would
 * wait for all of it. So where GNU `cp` runs (Linux) a big file is copied by a `cp` process
 * (the same system calls: reflink, else copy_file_range), which a cancel kills; small files, and
 * other systems, use `fs.copyFile` (there a cancel takes effect when the copy ends). A `cp` that
 * fails is not asked why: the copy is done again by `fs.copyFile`, whose error is Node's own
 * (ENOSPC, EACCES, ...), or which succeeds.
 */
import { spawn } from 'node:child_process';
import { constants as fsc } from 'node:fs';
import { copyFile, stat, unlink } from 'node:fs/promises';

/** Files from this size on are copied by `cp` where it runs. */
export const CHILD_COPY_MIN = 64 * 1024 * 1024;
/** How often the copy's size is looked at, for progress. */
const PROGRESS_MS = 250;

export interface CopyOptions {
  signal?: AbortSignal;
  /** Called with each count of bytes copied since the last call; the last at the copy's end. */
  onBytes?(n: number): void;
}

/** Copies `file` (a regular file of `size` bytes) to `target`, which must not exist. */
export async function copyByFileSystem(file: string, target: string, size: number, opts: CopyOptions = {}): Promise<void> {
  opts.signal?.throwIfAborted();
  let counted = 0;
  let ended = false;
  const count = (now: number) => {
    // The last byte is counted at the end: a copy that fails never reads as complete. A look
    // still on its way when the copy ends counts nothing more.
    if (ended) return;
    const n = Math.min(now, size - 1) - counted;
    if (n > 0) {
      counted += n;
      opts.onBytes?.(n);
    }
  };
  const poll = opts.onBytes ? setInterval(() => void stat(target).then((st) => count(st.size), () => {}), PROGRESS_MS) : undefined;
  poll?.unref();
  try {
    const child = process.platform === 'linux' && size >= CHILD_COPY_MIN;
    if (!child || !(await copyInChild(file, target, opts.signal))) {
      // What a failed `cp` left goes first.
      if (child) await unlink(target).catch(() => {});
      await copyFile(file, target, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE);
    }
  } finally {
    clearInterval(poll);
    ended = true;
  }
  if (size > counted) opts.onBytes?.(size - counted);
}

/**
 * `cp` of `file` to `target`: true when it copied, false when it could not run or failed (the
 * caller copies another way). A cancel kills it and throws the signal's reason.
 */
function copyInChild(file: string, target: string, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve, reject) => {
    // --remove-destination: never write through a link at the target's name (COPYFILE_EXCL refused one).
    const child = spawn('cp', ['--reflink=auto', '--remove-destination', '--', file, target], { stdio: 'ignore' });
    const cancel = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', cancel, { once: true });
    child.once('error', () => {
      signal?.removeEventListener('abort', cancel);
      resolve(false);
    });
    child.once('close', (code) => {
      signal?.removeEventListener('abort', cancel);
      if (signal?.aborted) return reject(signal.reason);
      resolve(code === 0);
    });
  });
}
