/** smbclient's reports (NT_STATUS names, exit codes) as the documented error codes. */
import { ServiceError, type ErrorCode } from '../../errors';

/** What a run of smbclient commands printed (stdout and stderr), and how it ended. */
export interface Run {
  output: string;
  code: number | null;
}

const STATUS: Record<string, ErrorCode> = {
  OBJECT_NAME_NOT_FOUND: 'not_found',
  OBJECT_PATH_NOT_FOUND: 'not_found',
  NO_SUCH_FILE: 'not_found',
  NOT_FOUND: 'not_found',
  DELETE_PENDING: 'not_found',
  OBJECT_NAME_COLLISION: 'naming_conflict',
  DIRECTORY_NOT_EMPTY: 'folder_not_empty',
  NOT_A_DIRECTORY: 'invalid_parent_folder',
  FILE_IS_A_DIRECTORY: 'invalid_parameters',
  OBJECT_NAME_INVALID: 'invalid_parameters',
  OBJECT_PATH_SYNTAX_BAD: 'invalid_parameters',
  BAD_NETWORK_NAME: 'invalid_parameters',
  LOGON_FAILURE: 'upstream_auth_failed',
  WRONG_PASSWORD: 'upstream_auth_failed',
  NO_SUCH_USER: 'upstream_auth_failed',
  ACCOUNT_DISABLED: 'upstream_auth_failed',
  ACCOUNT_LOCKED_OUT: 'upstream_auth_failed',
  ACCOUNT_RESTRICTION: 'upstream_auth_failed',
  PASSWORD_EXPIRED: 'upstream_auth_failed',
  PASSWORD_MUST_CHANGE: 'upstream_auth_failed',
  ACCESS_DENIED: 'forbidden',
  NETWORK_ACCESS_DENIED: 'forbidden',
  SHARING_VIOLATION: 'conflict',
  FILE_LOCK_CONFLICT: 'conflict',
  DISK_FULL: 'payload_too_large',
};

const UNAVAILABLE = /CONNECTION_|IO_TIMEOUT|HOST_UNREACHABLE|NETWORK_UNREACHABLE|END_OF_FILE|INVALID_NETWORK_RESPONSE|PIPE_BROKEN|NETWORK_NAME_DELETED|LOCAL_DISCONNECT|REMOTE_DISCONNECT|NETWORK_SESSION_EXPIRED|PORT_UNREACHABLE|UNSUCCESSFUL|PIPE_DISCONNECTED|USER_SESSION_DELETED/;


/** The first NT_STATUS failure in smbclient's output, as a ServiceError; undefined if none. */
export function statusError(output: string, what: string): ServiceError | undefined {
  const m = /NT_STATUS_([A-Z0-9_]+)/.exec(output);
  if (!m || m[1] === 'OK') return undefined;
  const status = m[1]!;
  const line = output.split('\n').find((l) => l.includes(m[0]))?.trim() ?? m[0];
  const code = STATUS[status];
  if (code === 'upstream_auth_failed') return new ServiceError(code, `The SMB server refused the user name or password (${m[0]}).`);
  if (status === 'BAD_NETWORK_NAME') return new ServiceError('invalid_parameters', `The server has no share of that name (${m[0]}).`);
  if (code === 'not_found') return new ServiceError(code, `${what} was not found.`);
  if (code === 'naming_conflict') return new ServiceError(code, `${what}: the name is already taken.`);
  if (code === 'folder_not_empty') return new ServiceError(code, `${what}: the folder is not empty.`);
  if (code) return new ServiceError(code, `${what}: ${line}`);
  if (UNAVAILABLE.test(status)) return unavailable(what, line);
  return new ServiceError('upstream_error', `${what}: ${line}`);
}

export function unavailable(what: string, detail: string): ServiceError {
  return new ServiceError('service_not_available', `${what}: the SMB server is not reachable (${detail}).`, { retryAfter: 5 });
}

export function spawnError(program: string, e: NodeJS.ErrnoException): ServiceError {
  if (e.code === 'ENOENT') {
    return new ServiceError('service_not_available', `${program} was not found: SMB accounts need Samba's smbclient (package "smbclient").`, {}, { cause: e });
  }
  return new ServiceError('service_not_available', `Could not run ${program}: ${e.message}`, {}, { cause: e });
}
