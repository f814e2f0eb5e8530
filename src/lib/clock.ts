/** Time is injected so tests of expiry, backoff and DELAY control it instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO-8601 UTC with milliseconds: fixed width, so stored timestamps sort as text on both stores. */
export function iso(date: Date): string {
  return date.toISOString();
}

/** A clock a test moves by hand. */
export function manualClock(
  start = new Date('2026-01-01T00:00:00.000Z'),
): Clock & { advance(ms: number): void; set(d: Date): void } {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance(ms: number) {
      current += ms;
    },
    set(d: Date) {
      current = d.getTime();
    },
  };
}
