/**
 * The one error type of Tributary. Connectors, services, the contract transports and the REST
 * layer all throw and carry `ServiceError`; its `code` is one of the documented error codes
 * (README "Errors"), and the HTTP status follows from the code alone so that every face of the
 * API (REST v0/v1/v2, IPC, WebSocket) reports the same failure the same way.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  invalid_parameters: 400,
  invalid_parent_folder: 400,
  unauthorized: 401,
  invalid_token: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  naming_conflict: 409,
  folder_not_empty: 409,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  too_many_requests: 429,
  internal_error: 500,
  not_implemented: 501,
  upstream_error: 502,
  upstream_auth_failed: 502,
  service_not_available: 503,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetails {
  /** On 409 naming conflicts: the id of the resource already holding the name (spec-style). */
  conflictingResourceId?: string;
  /** Seconds, for too_many_requests / service_not_available. */
  retryAfter?: number;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ServiceError';
    this.code = code;
    this.details = details;
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/** A full disk or exhausted quota, as Node (`ENOSPC`, `EDQUOT`) or SQLite (`SQLITE_FULL`) reports it. */
export function isDiskFull(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL';
}

/**
 * Wraps anything thrown into a ServiceError; a full disk (Tributary's own data folder, or any
 * file it writes) is insufficient_storage, other unknown failures internal_error.
 */
export function toServiceError(e: unknown): ServiceError {
  if (e instanceof ServiceError) return e;
  const message = e instanceof Error ? e.message : String(e);
  if (isDiskFull(e)) return new ServiceError('insufficient_storage', `Not enough disk space: ${message}`, {}, { cause: e });
  return new ServiceError('internal_error', message || 'Internal error', {}, { cause: e });
}

export const notFound = (what: string) => new ServiceError('not_found', `${what} was not found.`);
export const invalid = (message: string) => new ServiceError('invalid_parameters', message);
