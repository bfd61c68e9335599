/**
 * A file on this computer as the connectors meet it (the local connector's files, a file another
 * connector uploads from): Node's file system errors as documented codes, and the special files
 * (FIFOs, sockets, devices) that are never opened or copied.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { ServiceError } from '../../errors';
import { baseName } from './paths';

/** Maps a Node.js file system error to the documented codes. */
export function fsError(e: unknown, path: string): ServiceError {
  if (e instanceof ServiceError) return e;
  const code = (e as NodeJS.ErrnoException)?.code;
  const name = baseName(path) || '/';
  switch (code) {
    case 'ENOENT':
      return new ServiceError('not_found', `"${path}" was not found.`, {}, { cause: e });
    case 'ELOOP':
      // A symlink loop leads nowhere, like a broken link (which listings leave out too).
      return new ServiceError('not_found', `"${path}" is a loop of symbolic links.`, {}, { cause: e });
    case 'EEXIST':
      return new ServiceError('naming_conflict', `"${name}" already exists.`, {}, { cause: e });
    case 'ENOTEMPTY':
      return new ServiceError('folder_not_empty', `The folder "${name}" is not empty.`, {}, { cause: e });
    case 'ENOTDIR':
      return new ServiceError('invalid_parent_folder', `A part of "${path}" is not a folder.`, {}, { cause: e });
    case 'EISDIR':
      return new ServiceError('naming_conflict', `"${name}" is a folder.`, {}, { cause: e });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new ServiceError('forbidden', `Permission denied for "${path}".`, {}, { cause: e });
    case 'ENXIO':
    case 'ENODEV':
    case 'ERR_FS_CP_FIFO_PIPE':
    case 'ERR_FS_CP_SOCKET':
    case 'ERR_FS_CP_UNKNOWN':
      return specialFile(path, e);
    case 'ENOSPC':
    case 'EDQUOT':
      return new ServiceError('insufficient_storage', `Not enough disk space for "${name}".`, {}, { cause: e });
    case 'EFBIG':
      return new ServiceError('payload_too_large', `"${name}" is too large for this file system.`, {}, { cause: e });
    case 'ENAMETOOLONG':
      return new ServiceError('invalid_parameters', `The name "${name}" is too long for this file system.`, {}, { cause: e });
    case 'EINVAL':
      return new ServiceError('invalid_parameters', `Invalid operation on "${path}".`, {}, { cause: e });
    case 'EBUSY':
    case 'ETXTBSY':
      return new ServiceError('conflict', `"${path}" is in use.`, {}, { cause: e });
    case 'EMFILE':
    case 'ENFILE':
    case 'EAGAIN':
      return new ServiceError('service_not_available', `Too many files are open to reach "${path}" now; try again.`, { retryAfter: 1 }, { cause: e });
    case 'EIO':
    case 'ESTALE':
    case 'ETIMEDOUT':
      return new ServiceError('upstream_error', `The disk failed to read or write "${path}".`, {}, { cause: e });
    default:
      return new ServiceError('internal_error', `File system error on "${path}": ${(e as Error)?.message ?? e}`, {}, { cause: e });
  }
}

/** What a file that is neither a regular file nor a folder is, for messages. */
function specialKind(st: Stats): string {
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * FIFOs, sockets and devices are never opened, copied or moved: opening a FIFO blocks until a
 * writer appears (a thread of the shared I/O pool, forever), and devices have no end.
 */
export function specialFile(path: string, cause?: unknown, st?: Stats): ServiceError {
  const what = st ? specialKind(st) : 'a special file (named pipe, socket or device)';
  return new ServiceError('forbidden', `"${path}" is ${what}; only regular files and folders can be read, copied or moved.`, {}, { cause });
}

/**
 * The Stats of `file`, a regular file on this computer that a connector is about to send (its
 * `writeFile`): a folder or a special file (a FIFO would block the reader until a writer
 * appears) is refused, and a missing one is not_found, before anything is sent.
 */
export async function regularFile(file: string): Promise<Stats> {
  let source: Stats;
  try {
    source = await stat(file);
  } catch (e) {
    throw fsError(e, file);
  }
  if (!source.isFile()) throw source.isDirectory() ? new ServiceError('invalid_parameters', `"${file}" is a folder.`) : specialFile(file, undefined, source);
  return source;
}
