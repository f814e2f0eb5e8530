/** Time is injected so tests of expiry, backoff and DELAY control it instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

let lastMs = Number.NaN;
let lastIso = '';

/**
 * ISO-8601 UTC with milliseconds: fixed width, so stored timestamps sort as text on both stores.
 * The last answer is kept: a busy process asks for the same millisecond many times over, and formatting it each
 * time showed in profiles.
 */
export function iso(date: Date): string {
  const ms = date.getTime();
  if (ms !== lastMs) {
    lastIso = date.toISOString();
    lastMs = ms;
  }
  return lastIso;
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
