import { type AfterFailure, afterFailure, type RetryPolicy } from '../../worker/retry-policy.js';

/**
 * The webhooks' retry policy (docs/webhooks.md, docs/reliability.md "Retry policies"): after failed
 * attempt k (k = 1..4) a delivery waits base x 2^(k-1) seconds (30, 60, 120, 240 with the default
 * base) and is PENDING again; the 5th failure is FAILED. An interrupted attempt counts as an attempt:
 * the request may have reached the receiver, and the delivery's attempts are what the receiver saw.
 */
export function webhookRetry(baseSeconds: number): RetryPolicy {
  return {
    maxAttempts: 5,
    baseMs: baseSeconds * 1000,
    capMs: Number.POSITIVE_INFINITY,
    backoff: 'exponential',
    maxInterruptions: 0,
  };
}

/** Attempts a delivery gets. */
export const MAX_ATTEMPTS = webhookRetry(30).maxAttempts;

/** Where a delivery goes after its attempt number `attempts` failed at `now`. */
export function afterAttemptFailure(
  attempts: number,
  maxAttempts: number,
  baseSeconds: number,
  now: Date,
): AfterFailure {
  return afterFailure({ ...webhookRetry(baseSeconds), maxAttempts }, attempts, now);
}
