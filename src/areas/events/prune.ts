import type { Store } from '../../db/store.js';
import { cutoffOf, nothingRemoved, type PruneStep, type Removed, stepsThrough } from '../retention/rules.js';

/**
 * The outbox tasks retention removes (docs/reliability.md "Retention"): DONE and FAILED ones whose
 * last change is older than SVC_RETENTION_OUTBOX_SECONDS. With a task goes its event's
 * deduplication (`POST /event` by id) and its place in replays (docs/events.md).
 */

const FINISHED = ['DONE', 'FAILED'] as const;

/** A pass removing the finished tasks older than `seconds` at `now` (0: none), a step at a time. */
export function taskPass(store: Store, seconds: number, now: Date): PruneStep {
  const cutoff = cutoffOf(now, seconds);
  return stepsThrough(seconds === 0 ? [] : FINISHED, (status, limit) =>
    store.transaction<Removed>(async (tx) => {
      // The creation index, oldest first: a task finished before the cutoff was created before it,
      // and what is passed over (a task still retrying, one that finished late) is rare.
      let q = tx.db
        .selectFrom('event_delivery_task')
        .select('id')
        .where('created_at', '<', cutoff)
        .where('status', '=', status)
        .where('updated_at', '<', cutoff)
        .orderBy('created_at')
        .limit(limit);
      // A FAILED task being retried by hand at this moment is locked: skipped, as another pruner's rows are.
      if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (ids.length === 0) return nothingRemoved();
      const result = await tx.db.deleteFrom('event_delivery_task').where('id', 'in', ids).executeTakeFirst();
      const removed = Number(result.numDeletedRows);
      return { records: removed, rows: { event_delivery_task: removed } };
    }),
  );
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
