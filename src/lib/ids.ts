import { randomBytes } from 'node:crypto';
import { type Clock, systemClock } from './clock.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Base62 of `bytes` random bytes, left-padded with '0' to the full width
 * (32 bytes give 43 characters only ~98% of the time without padding).
 */
export function randomBase62(bytes: number, width: number): string {
  let n = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width, '0');
}

/** The 74 bits of a UUIDv7 after its timestamp (rand_a and rand_b), used as a counter within a millisecond. */
const COUNTER_BITS = 74n;
const COUNTER_MAX = (1n << COUNTER_BITS) - 1n;

/**
 * Time-ordered ids (UUIDv7, RFC 9562, with its monotonic counter, method 3). Within one millisecond,
 * or if the clock steps back, the counter keeps ids strictly increasing in this process; ids from two
 * processes in the same millisecond are ordered by their random part: stable, not by creation time.
 * A caller that needs ids to sort like its own `created_at` (the shared list helper breaks
 * `created_at` ties by id) passes its injected clock.
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

/**
 * The id of every record. Time-ordered rather than random (UUIDv4): new rows land at the right edge
 * of each primary-key B-tree instead of on random pages, which halves insert cost on SQLite and
 * PostgreSQL alike (the outbox, workflow runs and nodes, webhook deliveries and attempts all insert
 * in bulk); and ids sort by creation time.
 */
export const newId = timeOrderedIds(systemClock);
