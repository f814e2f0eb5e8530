import { describe, expect, it } from 'vitest';
import { OUTBOX_RETRY } from '../../src/areas/events/retry.js';
import { webhookRetry } from '../../src/areas/webhooks/backoff.js';
import { nodeRetryPolicy } from '../../src/areas/workflows/run-state.js';
import {
  afterFailure,
  interruptionIsFree,
  nextAttempt,
  type RetryPolicy,
} from '../../src/worker/retry-policy.js';

/** The waits a policy gives after each failed attempt until it gives up (docs/reliability.md "Retry policies"). */
function schedule(policy: RetryPolicy): number[] {
  const waits: number[] = [];
  for (let made = 1; ; made++) {
    const next = nextAttempt(policy, made);
    if (!next.retry) return waits;
    waits.push(next.delayMs);
  }
}

/** How many interruptions in a row are retried without counting an attempt. */
function freeInterruptions(policy: RetryPolicy): number {
  let n = 0;
  while (interruptionIsFree(policy, n)) n++;
  return n;
}

describe('the one retry policy, as each engine passes it', () => {
  it('outbox: 3 attempts, 5 s doubling capped at 5 min, 5 interruptions free', () => {
    expect(schedule(OUTBOX_RETRY)).toEqual([5_000, 10_000]);
    expect(schedule({ ...OUTBOX_RETRY, maxAttempts: 10 })).toEqual([
      5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000,
    ]);
    expect(freeInterruptions(OUTBOX_RETRY)).toBe(5);
  });

  it('webhooks: 5 attempts, 30 s x 2^n, an interruption counts as an attempt', () => {
    expect(schedule(webhookRetry(30))).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(schedule(webhookRetry(0))).toEqual([0, 0, 0, 0]);
    expect(freeInterruptions(webhookRetry(30))).toBe(0);
  });

  it("workflow nodes: the node's retry_policy, fixed or exponential; 3 interruptions free", () => {
    expect(schedule(nodeRetryPolicy(null))).toEqual([]);
    expect(schedule(nodeRetryPolicy({ max_attempts: 4, backoff: 'exponential', base_seconds: 1 }))).toEqual([
      1_000, 2_000, 4_000,
    ]);
    expect(schedule(nodeRetryPolicy({ max_attempts: 3, backoff: 'fixed', base_seconds: 0.25 }))).toEqual([
      250, 250,
    ]);
    expect(freeInterruptions(nodeRetryPolicy(null))).toBe(3);
  });

  it('afterFailure records a retry as PENDING at a time, and the last failure as FAILED', () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    expect(afterFailure(OUTBOX_RETRY, 1, now)).toEqual({
      status: 'PENDING',
      next_attempt_at: new Date('2026-01-01T00:00:05.000Z'),
    });
    expect(afterFailure(OUTBOX_RETRY, 3, now)).toEqual({ status: 'FAILED' });
  });
});
