import { randomBytes, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

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
