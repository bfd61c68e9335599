/**
 * Multipart plans every connector with native parts shares: at most 10,000 parts (S3's limit,
 * adopted everywhere so that a session moves between backends), sizes in whole MiB.
 */
import { MULTIPART_MIN_SIZE } from '../../contract/limits';

export const MiB = 1024 * 1024;
export const MAX_PARTS = 10_000;
/** The part size when the backend has no reason to pick another (S3, Azure, SFTP). */
export const DEFAULT_PART = 8 * MiB;

/** The smallest whole-MiB part size of at least `floor` that fits `size` bytes in MAX_PARTS parts. */
export function partSizeFor(size: number, floor = DEFAULT_PART): number {
  return Math.max(floor, MULTIPART_MIN_SIZE, Math.ceil(size / MAX_PARTS / MiB) * MiB);
}
