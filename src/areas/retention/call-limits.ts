import { oldestSpentEntry, pruneEntries } from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import type { Pruner } from './job.js';

/**
 * The entries of outbound call limits (src/db/call-limits.ts) that count for nothing any more:
 * starts out of their window, calls past their lease, waiters that stopped asking.
 */
export function callLimitPruner(store: Store, clock: Clock): Pruner {
  return {
    kind: 'call_limits',
    async pass(now) {
      return async (limit) => {
        const n = await store.write((db) => pruneEntries(db, now, limit));
        const rows: Record<string, number> = n > 0 ? { call_limit_entry: n } : {};
        return { records: n, rows };
      };
    },
    oldest: () => oldestSpentEntry(store.db, clock.now()),
  };
}
