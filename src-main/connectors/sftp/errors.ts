/** ssh2 and SFTP failures as the documented codes, with a message a person can act on. */
import { ServiceError } from '../../errors';
import { isUnreachable, UNREACHABLE_IN_MESSAGE } from '../shared/net-errors';

/** SFTP v3 status codes (draft-ietf-secsh-filexfer-02). */
export const SFTP = { EOF: 1, NO_SUCH_FILE: 2, PERMISSION_DENIED: 3, FAILURE: 4, NO_CONNECTION: 6, CONNECTION_LOST: 7 } as const;

/** Maps ssh2 / SFTP failures to documented codes, with a message a person can act on. */
export function mapError(e: unknown, what: string, s?: { alive: boolean }): ServiceError {
  if (e instanceof ServiceError) return e;
  const err = e as { code?: unknown; level?: string; message?: string };
  const msg = err?.message ?? String(e);
  if (typeof err?.code === 'number') {
    switch (err.code) {
      case SFTP.NO_SUCH_FILE:
        return new ServiceError('not_found', `${what} was not found.`, {}, { cause: e });
      case SFTP.PERMISSION_DENIED:
        return new ServiceError('forbidden', `${what}: permission denied by the server.`, {}, { cause: e });
      case SFTP.NO_CONNECTION:
      case SFTP.CONNECTION_LOST:
        return unavailable(what, e);
    }
  }
  if (s && !s.alive) return unavailable(what, e);
  if (err?.level === 'client-authentication' || /authentication methods failed|All configured authentication/i.test(msg)) {
    return new ServiceError('upstream_auth_failed', 'The server refused the user name, password or key.', {}, { cause: e });
  }
  if (/passphrase|Cannot parse privateKey|Unsupported key format|Malformed/i.test(msg)) {
    return new ServiceError('invalid_parameters', `The private key could not be read: ${msg}`, {}, { cause: e });
  }
  if (
    err?.level === 'client-socket' ||
    err?.level === 'client-timeout' ||
    isUnreachable(err?.code) ||
    UNREACHABLE_IN_MESSAGE.test(msg) ||
    // ssh2 and ssh2-sftp-client's own words for a connection that is gone
    /Timed out|No SFTP connection|Not connected|connection lost|closed|ended/i.test(msg)
  ) {
    return unavailable(what, e);
  }
  return new ServiceError('upstream_error', `${what}: ${msg}`, {}, { cause: e });
}

export function unavailable(what: string, cause: unknown): ServiceError {
  const m = (cause as Error)?.message;
  return new ServiceError('service_not_available', `${what}: the SFTP server is not reachable${m ? ` (${m})` : ''}.`, { retryAfter: 5 }, { cause });
}
