import { randomBytes, randomFillSync } from 'node:crypto';
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

/** Random bytes read 4 KiB at a time: one read per ~400 ids instead of one per id. */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function random10(): Uint8Array {
  if (poolAt + 10 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += 10;
  return pool.subarray(poolAt - 10, poolAt);
}

/** Hex of a small integer (under 2^30, so V8 formats it on its fast path), left-padded to `width`. */
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/**
 * Time-ordered ids (UUIDv7, RFC 9562, with its monotonic counter, method 3). Within one millisecond,
 * or if the clock steps back, the counter keeps ids strictly increasing in this process; ids from two
 * processes in the same millisecond are ordered by their random part: stable, not by creation time.
 * A caller that needs ids to sort like its own `created_at` (the shared list helper breaks
 * `created_at` ties by id) passes its injected clock.
 *
 * The counter is the 74 bits after the timestamp (rand_a, 12 bits, and rand_b, 62), held as three
 * numbers (12, 30 and 32 bits) rather than a BigInt: ids are made several times per request.
 * `random` gives the 10 random bytes of each millisecond's start (a test passes its own).
 */
export function timeOrderedIds(clock: Clock, random: () => Uint8Array = random10): () => string {
  let lastMs = 0;
  let hi = 0; // rand_a: 12 bits
  let mid = 0; // the top 30 bits of rand_b
  let lo = 0; // the low 32 bits of rand_b
  return () => {
    let ms = clock.now().getTime();
    if (ms > lastMs) {
      // A fresh random start with its top bit clear, so the millisecond has room to count up.
      const r = random();
      hi = ((r[0]! << 8) | r[1]!) & 0x7ff;
      mid = ((r[2]! << 24) | (r[3]! << 16) | (r[4]! << 8) | r[5]!) & 0x3fffffff;
      lo = ((r[6]! << 24) | (r[7]! << 16) | (r[8]! << 8) | r[9]!) >>> 0;
    } else {
      ms = lastMs;
      if (lo < 0xffffffff) lo += 1;
      else if (mid < 0x3fffffff) {
        lo = 0;
        mid += 1;
      } else if (hi < 0xfff) {
        lo = 0;
        mid = 0;
        hi += 1;
      } else {
        // All 74 bits spent in one millisecond: borrow the next one.
        ms += 1;
        hi = 0;
        mid = 0;
        lo = 0;
      }
    }
    lastMs = ms;
    // In 16- and 24-bit pieces: formatting a number of 2^31 or more takes V8's slow path.
    const msHigh = Math.floor(ms / 0x1000000);
    const msLow = ms % 0x1000000;
    return (
      `${hex(msHigh >>> 8, 4)}${hex(((msHigh & 0xff) << 8) | (msLow >>> 16), 4)}-${hex(msLow & 0xffff, 4)}-` +
      `${hex(0x7000 | hi, 4)}-${hex(0x8000 | (mid >>> 16), 4)}-${hex(mid & 0xffff, 4)}${hex(lo >>> 16, 4)}${hex(lo & 0xffff, 4)}`
    );
  };
}

/**
 * The id of every record. Time-ordered rather than random (UUIDv4): new rows land at the right edge
 * of each primary-key B-tree instead of on random pages, which halves insert cost on SQLite and
 * PostgreSQL alike (the outbox, workflow runs and nodes, webhook deliveries and attempts all insert
 * in bulk); and ids sort by creation time.
 */
export const newId = timeOrderedIds(systemClock);
