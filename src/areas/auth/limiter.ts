import type { AuthSettings } from '../../config/config.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { sha256Hex } from '../identity/service.js';
import type { AuthStore } from './store.js';

/**
 * The brute-force guard. Failures are counted per account (keyed by a hash of the normalised email,
 * existing or not, so a lock says nothing about whether the account exists) and per client address.
 * `loginMaxAttempts` failures in a row lock the account for `loginLockSeconds`, doubling with every
 * further lock up to `loginLockMaxSeconds`; the address gets the same with `loginIpMaxAttempts`.
 * A key quiet for `loginAttemptWindowSeconds` starts over. State lives in the store, so it holds
 * across processes and restarts.
 */
export function createLimiter(deps: { st: AuthStore; clock: Clock; settings: AuthSettings }) {
  const { st, clock, settings } = deps;

  const accountKey = (email: string) => `acct:${sha256Hex(email.trim().toLowerCase())}`;
  const ipKey = (ip: string | null) => (ip ? `ip:${ip}` : undefined);

  /** Throws 429 AUTH.TOO_MANY_ATTEMPTS (with Retry-After) while any of the keys is locked. */
  async function assertNotLocked(keys: Array<string | undefined>): Promise<void> {
    const at = clock.now();
    const until = await st.lockedUntil(
      keys.filter((k): k is string => Boolean(k)),
      iso(at),
    );
    if (!until) return;
    const seconds = Math.max(1, Math.ceil((new Date(until).getTime() - at.getTime()) / 1000));
    throw new AppError(
      'AUTH.TOO_MANY_ATTEMPTS',
      `Too many failed attempts; try again in ${seconds} seconds`,
      { retry_after_seconds: seconds },
      { 'retry-after': String(seconds) },
    );
  }

  async function fail(key: string | undefined, max: number): Promise<void> {
    if (!key) return;
    const at = clock.now();
    const quietSince = iso(new Date(at.getTime() - settings.loginAttemptWindowSeconds * 1000));
    const { failures, lock_count } = await st.recordFailure(key, iso(at), quietSince);
    if (Number(failures) < max) return;
    const seconds = Math.min(
      settings.loginLockSeconds * 2 ** Number(lock_count),
      settings.loginLockMaxSeconds,
    );
    await st.lock(key, max, iso(new Date(at.getTime() + seconds * 1000)));
  }

  return {
    accountKey,
    ipKey,
    assertNotLocked,
    /** One failed attempt against an account (and the address it came from). */
    async recordFailure(account: string | undefined, ip: string | null) {
      await fail(account, settings.loginMaxAttempts);
      await fail(ipKey(ip), settings.loginIpMaxAttempts);
    },
    /** A failure that concerns only the address (e.g. an unknown one-time token). */
    recordIpFailure: (ip: string | null) => fail(ipKey(ip), settings.loginIpMaxAttempts),
    /**
     * Counts an action under `key` (e.g. reset mails per address) and answers whether it may
     * proceed: false while the key is locked after `max` actions in a row.
     */
    async throttle(key: string, max: number): Promise<boolean> {
      const locked = await st.lockedUntil([key], iso(clock.now()));
      if (locked) return false;
      await fail(key, max);
      return true;
    },
    /** A successful sign-in clears the account's count; the address keeps its own. */
    clear: (account: string) => st.clearAttempts(account),
  };
}

export type Limiter = ReturnType<typeof createLimiter>;
