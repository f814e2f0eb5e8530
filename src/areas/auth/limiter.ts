import type { AuthSettings } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/hash.js';
import { backoffMs } from '../../worker/retry-policy.js';
import * as attempts from './attempt-store.js';

/**
 * The brute-force guard. Failures are counted per account (keyed by a hash of the normalised email,
 * existing or not, so a lock says nothing about whether the account exists) and per client address.
 * `loginMaxAttempts` failures in a row lock the account for `loginLockSeconds`, doubling with every
 * further lock up to `loginLockMaxSeconds`; the address gets the same with `loginIpMaxAttempts`.
 * A key quiet for `loginAttemptWindowSeconds` starts over. State lives in the store, so it holds
 * across processes and restarts.
 */
export function createLimiter(deps: { store: Store; clock: Clock; settings: AuthSettings }) {
  const { store, clock, settings } = deps;

  const accountKey = (email: string) => `acct:${sha256Hex(email.trim().toLowerCase())}`;
  const ipKey = (ip: string | null) => (ip ? `ip:${ip}` : undefined);

  /** Throws 429 AUTH.TOO_MANY_ATTEMPTS (with Retry-After) while any of the keys is locked. */
  async function assertNotLocked(keys: Array<string | undefined>): Promise<void> {
    const at = clock.now();
    const until = await attempts.lockedUntil(
      store.db,
      keys.filter((k): k is string => Boolean(k)),
      iso(at),
    );
    if (until) throw tooMany(until, at);
  }

  /** Since when a key must have been quiet to start over. */
  const quietSince = (at: Date) => iso(new Date(at.getTime() - settings.loginAttemptWindowSeconds * 1000));

  /** The end of the next lock of a key locked `lockCount` times before: doubling, capped. */
  function lockEnd(at: Date, lockCount: number | string): string {
    const ms = backoffMs(
      {
        baseMs: settings.loginLockSeconds * 1000,
        capMs: settings.loginLockMaxSeconds * 1000,
        backoff: 'exponential',
      },
      Number(lockCount) + 1,
    );
    return iso(new Date(at.getTime() + ms));
  }

  async function fail(key: string | undefined, max: number): Promise<void> {
    if (!key) return;
    const at = clock.now();
    const row = await attempts.countAttempt(store.db, key, iso(at), quietSince(at));
    // Already locked (nothing counted), or not yet at the limit.
    if ((row.locked_until && row.locked_until > iso(at)) || Number(row.failures) < max) return;
    await attempts.lock(store.db, key, max, lockEnd(at, row.lock_count));
  }

  /** A failure that concerns only the address (guessing a token, a bad IdP token). */
  const recordIpFailure = (ip: string | null) => fail(ipKey(ip), settings.loginIpMaxAttempts);

  function tooMany(until: string, at: Date): AppError {
    const seconds = Math.max(1, Math.ceil((new Date(until).getTime() - at.getTime()) / 1000));
    return new AppError(
      'AUTH.TOO_MANY_ATTEMPTS',
      `Too many failed attempts; try again in ${seconds} seconds`,
      { retry_after_seconds: seconds },
      { 'retry-after': String(seconds) },
    );
  }

  /**
   * Reserves one attempt under `key` (counted as a failure until released otherwise); 429 while the
   * key is locked. The attempt that reaches `max` locks the key for the ones after it.
   */
  async function reserve(key: string, max: number): Promise<Reservation> {
    const at = clock.now();
    const now = iso(at);
    const row = await attempts.countAttempt(store.db, key, now, quietSince(at));
    if (row.locked_until && row.locked_until > now) throw tooMany(row.locked_until, at);
    const failures = Number(row.failures);
    if (failures < max) return { key, max, lockedUntil: null };
    const lockedUntil = lockEnd(at, row.lock_count);
    // Past max: the attempt that reached it is locking the key right now.
    if (failures > max) throw tooMany(lockedUntil, at);
    return {
      key,
      max,
      lockedUntil: (await attempts.lock(store.db, key, max, lockedUntil)) ? lockedUntil : null,
    };
  }

  const refund = (r: Reservation) =>
    attempts.refundAttempt(
      store.db,
      r.key,
      r.lockedUntil ? { max: r.max, lockedUntil: r.lockedUntil } : null,
    );

  return {
    accountKey,
    ipKey,
    assertNotLocked,
    /**
     * Admits one password check against `account` from `ip`, counted before it runs, so concurrent
     * requests cannot all pass the lock check while their checks are in progress (429 once the
     * reserved attempts reach the limit). The answer says how the attempt ended:
     * `failed` keeps the count; `passed` (right password, sign-in not complete: MFA, reset required)
     * gives it back; `signedIn` clears the account and gives the address its attempt back.
     */
    async admit(account: string, ip: string | null): Promise<Admission> {
      const acct = await reserve(account, settings.loginMaxAttempts);
      const addressKey = ipKey(ip);
      let address: Reservation | undefined;
      if (addressKey) {
        try {
          address = await reserve(addressKey, settings.loginIpMaxAttempts);
        } catch (err) {
          await refund(acct);
          throw err;
        }
      }
      return {
        async settle(outcome) {
          if (outcome === 'failed') return;
          if (outcome === 'signedIn') await attempts.clearAttempts(store.db, account);
          else await refund(acct);
          if (address) await refund(address);
        },
      };
    },
    /** One failed attempt against an account (and the address it came from). */
    async recordFailure(account: string | undefined, ip: string | null) {
      await fail(account, settings.loginMaxAttempts);
      await recordIpFailure(ip);
    },
    recordIpFailure,
    /**
     * Looks up a presented token (refresh, MFA, password reset, device registration) by its hash: 429
     * while the address is locked; a token not of `form`, or unknown, counts against the address
     * (guessing) and throws `invalid()`. A known token is answered for the caller's own checks: one
     * expired or used up is an ordinary client mistake and never counts, since counting it could lock
     * out a whole shared address.
     */
    async presented<R>(
      token: string,
      form: RegExp,
      ip: string | null,
      find: (hash: string) => Promise<R | undefined>,
      invalid: () => AppError,
    ): Promise<R> {
      await assertNotLocked([ipKey(ip)]);
      const row = form.test(token) ? await find(sha256Hex(token)) : undefined;
      if (row) return row;
      await recordIpFailure(ip);
      throw invalid();
    },
    /**
     * Counts an action under `key` (e.g. reset mails per address) and answers whether it may
     * proceed: false while the key is locked after `max` actions in a row.
     */
    async throttle(key: string, max: number): Promise<boolean> {
      const locked = await attempts.lockedUntil(store.db, [key], iso(clock.now()));
      if (locked) return false;
      await fail(key, max);
      return true;
    },
    /** A successful sign-in clears the account's count; the address keeps its own. */
    clear: (account: string) => attempts.clearAttempts(store.db, account),
  };
}

export type Limiter = ReturnType<typeof createLimiter>;

/** One reserved attempt; `lockedUntil` is set when this attempt locked the key. */
interface Reservation {
  key: string;
  max: number;
  lockedUntil: string | null;
}

export interface Admission {
  settle(outcome: 'failed' | 'passed' | 'signedIn'): Promise<void>;
}
