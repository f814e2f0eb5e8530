import type { Clock } from '../lib/clock.js';

/** setTimeout fires at once for delays above this (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DueTimerOptions {
  /** Nothing is armed this far ahead or further: the job's own interval runs sooner. */
  horizonMs?: number;
  /**
   * Never wake sooner than this: a due item another worker holds must not make this one spin
   * (it wakes, finds the item locked, arms again for "now").
   */
  minDelayMs?: number;
}

/**
 * Wakes a job when its next persisted due time comes (a retry, a DELAY, a lease that runs out), so
 * the work happens on time rather than at the next poll. Only the earliest wake-up is kept: arming a
 * later time while an earlier one is armed does nothing, and a wake-up that turns out early costs one
 * empty step. The due times themselves are in the store; this timer is only a shortcut to them.
 */
export class DueTimer {
  private timer: NodeJS.Timeout | undefined;
  private armedAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly wake: () => void,
    private readonly options: DueTimerOptions = {},
  ) {}

  /** Wakes the job at `at` (epoch milliseconds) unless an earlier wake-up is armed. */
  arm(at: number): void {
    const now = this.clock.now().getTime();
    const delay = Math.min(Math.max(at - now, this.options.minDelayMs ?? 0), MAX_TIMER_MS);
    if (this.options.horizonMs !== undefined && delay >= this.options.horizonMs) return;
    const when = now + delay;
    if (when >= this.armedAt) return;
    clearTimeout(this.timer);
    this.armedAt = when;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.armedAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, delay);
    this.timer.unref();
  }

  /** Whether the armed wake-up's time is `now` or past by the job's clock (it may not have fired yet). */
  isDue(now: number): boolean {
    return this.armedAt <= now;
  }

  /** Disarms (graceful stop). */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }
}
