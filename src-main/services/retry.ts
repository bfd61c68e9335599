/**
 * Retrying long transfers through transient failures: the uploader's parts and the downloader's
 * ranged reads wait out a server that is away (for up to `windowMs` since the last success),
 * with exponential backoff and jitter. Anything that is not transient fails at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { retryDelay } from '../contract/transfers';
import { ServiceError, toServiceError } from '../errors';

export const RETRYABLE_CODES = new Set(['service_not_available', 'upstream_error', 'too_many_requests', 'request_timeout', 'internal_error']);

export interface RetryPolicy {
  /** Keep retrying while the last success is at most this old (default 5 min). */
  windowMs?: number;
  /** First backoff delay (default 250 ms), doubled per attempt up to `maxDelayMs` (default 8 s). */
  baseMs?: number;
  maxDelayMs?: number;
}

/** When the transfer last made progress; shared by all of one transfer's requests. */
export interface LastSuccess {
  at: number;
}

export async function retryTransient<T>(what: string, fn: () => Promise<T>, signal: AbortSignal, lastSuccess: LastSuccess, policy: RetryPolicy = {}): Promise<T> {
  const window = policy.windowMs ?? 300_000;
  for (let attempt = 0; ; attempt++) {
    signal.throwIfAborted();
    try {
      const value = await fn();
      lastSuccess.at = Date.now();
      return value;
    } catch (e) {
      const err = toServiceError(e);
      if (signal.aborted || !RETRYABLE_CODES.has(err.code) || Date.now() - lastSuccess.at > window) {
        throw new ServiceError(err.code, `${what}: ${err.message}`, err.details, { cause: e });
      }
      await sleep(retryDelay(attempt, policy.baseMs, policy.maxDelayMs), undefined, { signal }).catch(() => {});
    }
  }
}
