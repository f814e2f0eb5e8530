/**
 * The outbox retry rule, in exactly one place (docs/events.md, Retries). After failed attempt k
 * (k = 1, 2, ...) a task waits `BASE x 2^(k-1)` (5 s, 10 s, 20 s, ... capped at 5 min) and is
 * PENDING again; once `attempts` reaches `max_attempts` (default 3) it is FAILED for good.
 * A worker that loses its lease (crash, kill -9, stall) interrupts the attempt: retried at once and
 * not counted, up to MAX_INTERRUPTIONS times.
 */
export const RETRY_BASE_MS = 5_000;
export const RETRY_MAX_DELAY_MS = 5 * 60_000;
/**
 * Interruptions (a lease that ran out: the worker crashed or stalled) retried without using up an
 * attempt. Past this many, an interruption counts like a failure, so an event that crashes every
 * worker that takes it still ends FAILED instead of looping.
 */
export const MAX_INTERRUPTIONS = 5;
/** SPEC Limits: outbox task attempts, 3 by default. */
export const DEFAULT_MAX_ATTEMPTS = 3;

export type AfterFailure = { status: 'PENDING'; next_attempt_at: Date } | { status: 'FAILED' };

/** Where a task goes after its attempt number `attempts` failed at `now`. */
export function afterFailure(attempts: number, maxAttempts: number, now: Date): AfterFailure {
  if (attempts >= maxAttempts) return { status: 'FAILED' };
  const delay = Math.min(RETRY_BASE_MS * 2 ** Math.max(attempts - 1, 0), RETRY_MAX_DELAY_MS);
  return { status: 'PENDING', next_attempt_at: new Date(now.getTime() + delay) };
}
