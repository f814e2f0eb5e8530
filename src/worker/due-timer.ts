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

/** Later wake-ups kept beyond the armed one; past this, the latest are left to the job's interval. */
const MAX_LATER = 256;

/**
 * Wakes a job when its next persisted due time comes (a retry, a DELAY, a lease that runs out, a
 * debounce moved later), so the work happens on time rather than at the next poll. The earliest
 * wake-up is armed and a bounded list of later ones kept, each armed in turn when the one before
 * fires; a wake-up that turns out early costs one empty step. The due times themselves are in the
 * store; this timer is only a shortcut to them.
 */
export class DueTimer {
  private timer: NodeJS.Timeout | undefined;
  private armedAt = Number.POSITIVE_INFINITY;
  /** Wake-ups after the armed one, ascending. */
  private later: number[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly wake: () => void,
    private readonly options: DueTimerOptions = {},
  ) {}

  /** Wakes the job at `at` (epoch milliseconds), after any earlier wake-up. */
  arm(at: number): void {
    const now = this.clock.now().getTime();
    const delay = Math.min(Math.max(at - now, this.options.minDelayMs ?? 0), MAX_TIMER_MS);
    if (this.options.horizonMs !== undefined && delay >= this.options.horizonMs) return;
    const when = now + delay;
    if (when === this.armedAt) return;
    if (when > this.armedAt) {
      this.keepLater(when);
      return;
    }
    if (this.armedAt !== Number.POSITIVE_INFINITY) this.keepLater(this.armedAt);
    this.set(when, delay);
  }

  private keepLater(when: number): void {
    const i = sortedIndex(this.later, when);
    if (this.later[i] === when) return;
    this.later.splice(i, 0, when);
    if (this.later.length > MAX_LATER) this.later.pop();
  }

  private set(when: number, delay: number): void {
    clearTimeout(this.timer);
    this.armedAt = when;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Early by the job's clock (a timer may fire a millisecond short, a test clock stands still):
      // the wake-up stays armed, so it is not lost to a step that finds nothing due yet.
      const early = when - this.clock.now().getTime();
      if (early > 0) {
        this.set(when, Math.min(early, MAX_TIMER_MS));
        return;
      }
      this.armedAt = Number.POSITIVE_INFINITY;
      const next = this.later.shift();
      if (next !== undefined) this.set(next, Math.max(0, next - this.clock.now().getTime()));
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
    this.later = [];
  }
}

/** Where `value` goes in ascending `list`. */
function sortedIndex(list: readonly number[], value: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
