import {
  type AfterFailure,
  afterFailure as placeFailure,
  type RetryPolicy,
} from '../../worker/retry-policy.js';

/**
 * The outbox's retry policy (docs/events.md "Retries", docs/reliability.md "Retry policies"): after
 * failed attempt k a task waits 5 s x 2^(k-1), capped at 5 min, and is PENDING again; once
 * `attempts` reaches its `max_attempts` (3 by default) it is FAILED for good. An interrupted attempt
 * (a lost lease) is retried at once and not counted, up to 5 times.
 */
export const OUTBOX_RETRY: RetryPolicy = {
  maxAttempts: 3,
  baseMs: 5_000,
  capMs: 5 * 60_000,
  backoff: 'exponential',
  maxInterruptions: 5,
};

/** Outbox task attempts, 3 by default; each task records its own `max_attempts`. */
export const DEFAULT_MAX_ATTEMPTS = OUTBOX_RETRY.maxAttempts;

export type { AfterFailure };

/** Where a task goes after its attempt number `attempts` failed at `now`. */
export function afterFailure(attempts: number, maxAttempts: number, now: Date): AfterFailure {
  return placeFailure({ ...OUTBOX_RETRY, maxAttempts }, attempts, now);
}
