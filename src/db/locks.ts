import { sql } from 'kysely';
import { dialectOf } from './prepared.js';
import type { Db } from './store.js';

/**
 * Serialises decisions on these names until the transaction ends: flow control's per-key decisions
 * (workflows) and the limits of outbound calls (call-limits.ts). PostgreSQL: transaction-scoped
 * advisory locks, taken in one order so two transactions never wait on each other in a cycle.
 * SQLite: its one writer already runs write transactions one at a time.
 */
export async function takeLocks(db: Db, names: Iterable<string>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const sorted = [...new Set(names)].sort();
  if (sorted.length === 0) return;
  // One statement; hashtextextended's 64-bit hash is the lock's key, locked in the order given.
  await sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(${sorted}::text[]) with ordinality as t(k, n) order by n`.execute(
    db,
  );
}
