/**
 * The webhook retry rule, in one place (SPEC Webhook delivery table, CONTRACTS §7): after failed
 * attempt k (k = 1..4) the delivery waits `base x 2^(k-1)` seconds (30, 60, 120, 240 with the
 * default base) and is PENDING again; the 5th failure is FAILED.
 */
export const MAX_ATTEMPTS = 5;

export type AfterAttemptFailure = { status: 'PENDING'; next_attempt_at: Date } | { status: 'FAILED' };

export function afterAttemptFailure(
  attempts: number,
  maxAttempts: number,
  baseSeconds: number,
  now: Date,
): AfterAttemptFailure {
  if (attempts >= maxAttempts) return { status: 'FAILED' };
  const delayMs = baseSeconds * 1000 * 2 ** Math.max(attempts - 1, 0);
  return { status: 'PENDING', next_attempt_at: new Date(now.getTime() + delayMs) };
}
