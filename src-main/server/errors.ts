/**
 * The one error answer of every local endpoint — the web UI's, the REST API's, and the ones
 * written below fastify — in the documented shape `{status_code, error_code, message, id}`
 * (plus `conflicting_resource_id` on 409), with Retry-After on 429 and 503.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { ERROR_STATUS, ServiceError, toServiceError, type ErrorCode } from '../errors';

export interface ErrorBody {
  status_code: number;
  error_code: string;
  message: string;
  id: string;
  conflicting_resource_id?: string;
}

/** The body for `e`; `id` names this failure in logs and bug reports. */
export function errorBody(e: ServiceError, id: string = newRequestId()): ErrorBody {
  return rawErrorBody(e.status, e.code, e.message, id, e.status === 409 ? e.details.conflictingResourceId : undefined);
}

/** The same body for a status no ServiceError carries (Node's 417 and 431, written on the socket). */
export function rawErrorBody(status: number, code: string, message: string, id: string = newRequestId(), conflictingResourceId?: string): ErrorBody {
  const body: ErrorBody = { status_code: status, error_code: code, message, id };
  if (conflictingResourceId) body.conflicting_resource_id = conflictingResourceId;
  return body;
}

/** Answers anything thrown while serving a request with the documented error body. */
export function sendError(reply: FastifyReply, thrown: unknown): FastifyReply {
  const e = asServiceError(thrown);
  if (e.code === 'internal_error') reply.log.error({ err: thrown }, 'request failed');
  if (reply.sent || reply.raw.headersSent) {
    // The status line is gone (a failed stream): all we can do is cut the connection.
    reply.raw.destroy();
    return reply;
  }
  if (e.status === 429 || e.status === 503) reply.header('retry-after', String(e.details.retryAfter ?? (e.status === 429 ? 1 : 5)));
  // A Buffer, because fastify appends `; charset=utf-8` to JSON strings.
  return reply.code(e.status).header('content-type', 'application/json').send(Buffer.from(JSON.stringify(errorBody(e, reply.request.id))));
}

/** Errors fastify raises before our handler (bad Content-Length, body too large, …) keep their 4xx. */
function asServiceError(thrown: unknown): ServiceError {
  if (thrown instanceof ServiceError) return thrown;
  const status = (thrown as { statusCode?: unknown })?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = (Object.entries(ERROR_STATUS).find(([c, s]) => s === status && c !== 'invalid_parameters')?.[0] ?? 'bad_request') as ErrorCode;
    return new ServiceError(code, (thrown as Error).message || 'Bad request');
  }
  return toServiceError(thrown);
}

/** A request's id (fastify's `genReqId`), the `id` of its error body. */
export function newRequestId(): string {
  return randomUUID();
}
