import type { Store } from '../../db/store.js';
import { cutoffOf } from '../retention/rules.js';

/**
 * The outbox tasks retention removes (docs/reliability.md "Retention"): DONE and FAILED ones whose
 * last change is older than SVC_RETENTION_OUTBOX_SECONDS. With a task goes its event's
 * deduplication (`POST /event` by id) and its place in replays (docs/events.md).
 */

const FINISHED = ['DONE', 'FAILED'] as const;

/** Removes up to `limit` finished tasks older than `seconds` (0: none), in one transaction. */
export async function pruneTasks(store: Store, seconds: number, now: Date, limit: number): Promise<number> {
  if (seconds === 0) return 0;
  const cutoff = cutoffOf(now, seconds);
  let removed = 0;
  for (const status of FINISHED) {
    removed += await store.transaction(async (tx) => {
      // The creation index, oldest first: a task finished before the cutoff was created before it,
      // and what is passed over (a task still retrying, one that finished late) is rare.
      let q = tx.db
        .selectFrom('event_delivery_task')
        .select('id')
        .where('created_at', '<', cutoff)
        .where('status', '=', status)
        .where('updated_at', '<', cutoff)
        .orderBy('created_at')
        .limit(limit - removed);
      // A FAILED task being retried by hand at this moment is locked: skipped, as another pruner's rows are.
      if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (ids.length === 0) return 0;
      const result = await tx.db.deleteFrom('event_delivery_task').where('id', 'in', ids).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
    if (removed >= limit) break;
  }
  return removed;
}

/** When the oldest finished task kept was created (null: none), for /metrics. */
export async function oldestFinishedTask(store: Store): Promise<string | null> {
  const row = await store.db
    .selectFrom('event_delivery_task')
    .select('created_at')
    .where('status', 'in', [...FINISHED])
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at ?? null;
}
