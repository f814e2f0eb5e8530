import { prepared } from '../../db/prepared.js';
import type { Db } from '../../db/store.js';
import type { WorkflowRunTable } from './tables.js';

/** SQL of the engine's leases on runs: claiming due runs, renewing a lease while a run executes. */

/**
 * Claims due runs: running with `wake_at` passed (a timer, a retry, or an expired lease of a worker
 * that stopped), then, with the room left, waiting runs woken or come due (flow control: the engine
 * asks the flow gate whether they start). PostgreSQL skips rows another worker is claiming; SQLite
 * has one writer.
 */
export async function claimDue(
  db: Db,
  workerId: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<WorkflowRunTable[]> {
  const running = (await claimDueStatement.execute(db, 'running', workerId, now, leaseUntil, limit)).rows;
  if (running.length >= limit) return running;
  const waiting = (
    await claimDueStatement.execute(db, 'pending', workerId, now, leaseUntil, limit - running.length)
  ).rows;
  return waiting.length === 0 ? running : [...running, ...waiting];
}

const claimDueStatement = prepared(
  (
    db,
    dialect,
    status: 'running' | 'pending',
    workerId: string,
    now: string,
    leaseUntil: string,
    limit: number,
  ) =>
    db
      .updateTable('workflow_run')
      .set({ locked_by: workerId, wake_at: leaseUntil, updated_at: now })
      .where('id', 'in', (eb) => {
        let due = eb
          .selectFrom('workflow_run')
          .select('id')
          .where('status', '=', status)
          .where('wake_at', '<=', now)
          .orderBy('wake_at')
          .limit(limit);
        if (dialect === 'postgres') due = due.forUpdate().skipLocked();
        return due;
      })
      .where('status', '=', status)
      .where('wake_at', '<=', now)
      .returningAll(),
);

export async function renewLease(
  db: Db,
  runId: string,
  workerId: string,
  leaseUntil: string,
  at: string,
): Promise<boolean> {
  const res = await db
    .updateTable('workflow_run')
    .set({ wake_at: leaseUntil, updated_at: at })
    .where('id', '=', runId)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
