/**
 * Retrying long transfers through transient failures: the uploader's parts and the downloader's
 * ranged reads wait out a server that is away (for up to `windowMs` since the last success),
 * with exponential backoff and jitter. Anything that is not transient fails at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
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
  const base = policy.baseMs ?? 250;
  const max = policy.maxDelayMs ?? 8000;
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
      const delay = Math.min(max, base * 2 ** attempt) * (0.75 + Math.random() * 0.5);
      await sleep(delay, undefined, { signal }).catch(() => {});
    }
  }
}
