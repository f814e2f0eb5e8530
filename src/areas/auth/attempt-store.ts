import { sql } from 'kysely';
import { type Db, updatedAny } from '../../db/store.js';

/** SQL of the brute-force guard (limiter.ts): failure counts and locks per account and per address. */

/** The latest `locked_until` among `keys` that lies after `now`, if any. */
export async function lockedUntil(d: Db, keys: string[], now: string): Promise<string | undefined> {
  if (keys.length === 0) return undefined;
  const rows = await d
    .selectFrom('auth_attempt')
    .select('locked_until')
    .where('key', 'in', keys)
    .where('locked_until', '>', now)
    .execute();
  return rows
    .map((r) => r.locked_until!)
    .sort()
    .pop();
}

/**
 * Counts one attempt (a failure, or one reserved before its outcome is known) under `key`, unless
 * the key is locked now: an upsert, so concurrent processes never lose a count and concurrent
 * requests each see their own. A key quiet since `quietSince` (no failure, and no lock within the
 * window: a lock longer than the window does not reset the doubling by itself) starts over.
 * Answers the count, the locks so far and the lock in force.
 */
export async function countAttempt(d: Db, key: string, now: string, quietSince: string) {
  const ref = (c: 'failures' | 'lock_count' | 'last_failure_at' | 'locked_until') =>
    sql.ref(`auth_attempt.${c}`);
  const locked = sql<boolean>`(${ref('locked_until')} is not null and ${ref('locked_until')} > ${now})`;
  const stale = sql<boolean>`(${ref('last_failure_at')} < ${quietSince} and (${ref('locked_until')} is null or ${ref('locked_until')} < ${quietSince}))`;
  return d
    .insertInto('auth_attempt')
    .values({ key, failures: 1, last_failure_at: now, locked_until: null, lock_count: 0 })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        failures: sql`case when ${locked} then ${ref('failures')} when ${stale} then 1 else ${ref('failures')} + 1 end`,
        lock_count: sql`case when ${locked} then ${ref('lock_count')} when ${stale} then 0 else ${ref('lock_count')} end`,
        last_failure_at: sql`case when ${locked} then ${ref('last_failure_at')} else ${now} end`,
      }),
    )
    .returning(['failures', 'lock_count', 'locked_until'])
    .executeTakeFirstOrThrow();
}

/**
 * Gives back a reserved attempt that did not fail. When that attempt was the one that locked the
 * key, the lock is undone too (back to `max - 1` failures), as if it had never been counted.
 */
export async function refundAttempt(
  d: Db,
  key: string,
  undoLockOf: { max: number; lockedUntil: string } | null,
) {
  if (undoLockOf) {
    await d
      .updateTable('auth_attempt')
      .set((eb) => ({
        locked_until: null,
        failures: undoLockOf.max - 1,
        lock_count: sql`case when ${eb.ref('lock_count')} > 0 then ${eb.ref('lock_count')} - 1 else 0 end`,
      }))
      .where('key', '=', key)
      .where('locked_until', '=', undoLockOf.lockedUntil)
      .execute();
    return;
  }
  await d
    .updateTable('auth_attempt')
    .set((eb) => ({
      failures: sql`case when ${eb.ref('failures')} > 0 then ${eb.ref('failures')} - 1 else 0 end`,
    }))
    .where('key', '=', key)
    .execute();
}

/** Locks the key once its failures reached `max`; only one of concurrent callers applies it. */
export async function lock(d: Db, key: string, max: number, lockedUntil: string): Promise<boolean> {
  const r = await d
    .updateTable('auth_attempt')
    .set((eb) => ({ locked_until: lockedUntil, failures: 0, lock_count: eb('lock_count', '+', 1) }))
    .where('key', '=', key)
    .where('failures', '>=', max)
    .executeTakeFirst();
  return updatedAny(r);
}

export async function clearAttempts(d: Db, key: string) {
  await d.deleteFrom('auth_attempt').where('key', '=', key).execute();
}
