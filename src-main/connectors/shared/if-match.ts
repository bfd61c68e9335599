/**
 * The conditional replace of `WriteOptions.ifMatch`: the error every backend answers with when the
 * file it was to replace is no longer that version, and the look right before the rename for the
 * backends that have no such condition of their own (SFTP, SMB).
 */
import { ServiceError, toServiceError } from '../../errors';
import type { Entry } from '../types';
import { baseName } from './paths';

/** The target of a conditional replace changed, or went, after it was looked at: nothing was written. */
export class ChangedMeanwhile extends ServiceError {
  constructor(path: string, cause?: unknown) {
    super('conflict', `"${baseName(path)}" changed since it was looked at, so it was not replaced.`, {}, cause === undefined ? undefined : { cause });
  }
}

/** Throws ChangedMeanwhile unless the file at `path` still has the ETag `etag`; nothing is asked without one. */
export async function checkStillMatches(stat: (path: string) => Promise<Entry>, path: string, etag: string | undefined): Promise<void> {
  if (etag === undefined) return;
  let now: Entry;
  try {
    now = await stat(path);
  } catch (e) {
    if (toServiceError(e).code === 'not_found') throw new ChangedMeanwhile(path, e);
    throw e;
  }
  if (now.kind !== 'file' || now.etag !== etag) throw new ChangedMeanwhile(path);
}
