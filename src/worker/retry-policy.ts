/**
 * The one retry policy of svc's background work (docs/reliability.md "Retry policies"). Each engine
 * (the outbox, webhook deliveries, workflow nodes) and the sign-in lockout passes its policy as data;
 * the wait before each attempt and what an interruption counts for are decided here only.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The wait after the first failed attempt, in milliseconds. */
  baseMs: number;
  /** The longest wait, in milliseconds (Infinity: no cap). */
  capMs: number;
  /** `exponential`: base x 2^(k-1) after failed attempt k; `fixed`: base every time. */
  backoff: 'exponential' | 'fixed';
  /**
   * Interruptions (a worker's lease ran out: it crashed or stalled mid-attempt) retried at once
   * without using up an attempt. Past this many, an interruption counts like a failure, so work that
   * crashes every worker still ends. 0: every interruption counts as a failed attempt.
   */
  maxInterruptions: number;
}

/** Where work goes after a failed attempt: again after `delayMs`, or failed for good. */
export type NextAttempt = { retry: true; delayMs: number } | { retry: false };

/** The wait after failed attempt number `attemptsMade` (1 for the first). */
export function backoffMs(
  policy: Pick<RetryPolicy, 'baseMs' | 'capMs' | 'backoff'>,
  attemptsMade: number,
): number {
  const factor = policy.backoff === 'exponential' ? 2 ** Math.max(0, attemptsMade - 1) : 1;
  return Math.min(Math.round(policy.baseMs * factor), policy.capMs);
}

/** After `attemptsMade` counted attempts failed, the wait before the next, or none when they are used up. */
export function nextAttempt(policy: RetryPolicy, attemptsMade: number): NextAttempt {
  if (attemptsMade >= policy.maxAttempts) return { retry: false };
  return { retry: true, delayMs: backoffMs(policy, attemptsMade) };
}

/** Whether an interruption, after `interruptions` earlier ones, is retried without counting an attempt. */
export function interruptionIsFree(policy: RetryPolicy, interruptions: number): boolean {
  return interruptions < policy.maxInterruptions;
}

/** A settled outcome in the shape the store writes: PENDING again at a time, or FAILED. */
export type AfterFailure = { status: 'PENDING'; next_attempt_at: Date } | { status: 'FAILED' };

/** `nextAttempt` as the outbox's and the webhooks' rows record it. */
export function afterFailure(policy: RetryPolicy, attemptsMade: number, now: Date): AfterFailure {
  const next = nextAttempt(policy, attemptsMade);
  return next.retry
    ? { status: 'PENDING', next_attempt_at: new Date(now.getTime() + next.delayMs) }
    : { status: 'FAILED' };
}
