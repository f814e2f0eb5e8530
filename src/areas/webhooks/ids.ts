import { randomBytes } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';

/** The 74 bits of a UUIDv7 after its timestamp (rand_a and rand_b), used as a counter within a millisecond. */
const COUNTER_BITS = 74n;
const COUNTER_MAX = (1n << COUNTER_BITS) - 1n;

/**
 * Time-ordered delivery ids (UUIDv7, RFC 9562, with its monotonic counter, method 3): the shared
 * list helper breaks `created_at` ties by id, and deliveries created in the same millisecond (an event
 * fanned out, a burst) must still list newest first. The time is the injected clock's, so ids sort
 * like `created_at`; within one millisecond, or if the clock steps back, the counter keeps ids
 * strictly increasing in this process. Ids from two processes in the same millisecond are ordered by
 * their random part: stable, but not by creation time.
 */
export function timeOrderedIds(clock: Clock): () => string {
  let lastMs = 0;
  let counter = 0n;
  return () => {
    let ms = clock.now().getTime();
    if (ms > lastMs) {
      // A fresh random start with its top bit clear, so the millisecond has room to count up.
      counter = BigInt(`0x${randomBytes(10).toString('hex')}`) & (COUNTER_MAX >> 1n);
    } else {
      ms = lastMs;
      counter += 1n;
      if (counter > COUNTER_MAX) {
        ms += 1;
        counter = 0n;
      }
    }
    lastMs = ms;
    const randA = counter >> 62n; // 12 bits
    const randB = counter & ((1n << 62n) - 1n); // 62 bits
    const hex =
      BigInt(ms).toString(16).padStart(12, '0') +
      (0x7000n | randA).toString(16).padStart(4, '0') +
      ((0b10n << 62n) | randB).toString(16).padStart(16, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}
