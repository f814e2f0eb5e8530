import { sql } from 'kysely';
import { batches, prepared } from '../../db/prepared.js';
import { type Db, updatedAny } from '../../db/store.js';
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

/**
 * Gives runs a turn now (an event took one of their waits, an awaited child run ended): a run no
 * worker holds is due at once. Every run row is locked (updated) first, also one a worker holds: the
 * holder's release then waits for this transaction, and its check after the release sees the change.
 */
export async function wakeRuns(db: Db, runIds: readonly string[], at: string): Promise<void> {
  for (const batch of batches(db, [...runIds], 500)) {
    await db
      .updateTable('workflow_run')
      .set({
        wake_at: sql`case when locked_by is null then ${at} else wake_at end`,
        updated_at: at,
      })
      .where('id', 'in', batch)
      .where('status', '=', 'running')
      .execute();
  }
}

/**
 * Gives runs a turn now, holding for `workerId` (until `leaseUntil`) at most `room` of those no
 * worker holds: those are answered, for that worker to drive at once; the others no worker holds are
 * due now, and those a worker holds are left to it (its release checks what changed). The rows are
 * locked first, as `wakeRuns` does.
 */
export async function holdOrWakeRuns(
  db: Db,
  dialect: 'sqlite' | 'postgres',
  runIds: readonly string[],
  holder: { workerId: string; leaseUntil: string; room: number },
  at: string,
): Promise<WorkflowRunTable[]> {
  const free: WorkflowRunTable[] = [];
  for (const batch of batches(db, [...runIds], 500)) {
    let q = db
      .selectFrom('workflow_run')
      .selectAll()
      .where('id', 'in', batch)
      .where('status', '=', 'running');
    if (dialect === 'postgres') q = q.forUpdate();
    for (const row of await q.execute()) if (row.locked_by === null) free.push(row);
  }
  const held = free.slice(0, Math.max(0, holder.room));
  const due = free.slice(held.length).map((r) => r.id);
  for (const batch of batches(
    db,
    held.map((r) => r.id),
    500,
  )) {
    await db
      .updateTable('workflow_run')
      .set({ locked_by: holder.workerId, wake_at: holder.leaseUntil, updated_at: at })
      .where('id', 'in', batch)
      .where('locked_by', 'is', null)
      .execute();
  }
  if (due.length > 0) await wakeRuns(db, due, at);
  return held;
}

/**
 * Makes a released run due now: an event took one of its waits, or a child it waits for ended, while
 * a worker held it.
 */
export async function wakeReleased(db: Db, runId: string, at: string): Promise<boolean> {
  const res = await db
    .updateTable('workflow_run')
    .set({ wake_at: at, updated_at: at })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .where('locked_by', 'is', null)
    .executeTakeFirst();
  return updatedAny(res);
}

/**
 * Slots of a plugin instance's concurrency freed for these holders (attempts' idempotency keys,
 * `<run>:<node>` or `<run>:<node>:<item>`): each waiting attempt asks again now, and its run, when no
 * worker holds it, is due now. A run a worker holds asks at its own poll (docs/plugins.md "Limits").
 */
export async function wakeLimitWaiters(db: Db, holders: readonly string[], at: string): Promise<void> {
  for (const holder of holders) {
    const [runId, nodeKey, index] = holder.split(':');
    if (runId === undefined || nodeKey === undefined) continue;
    if (index === undefined) {
      await db
        .updateTable('workflow_run_node')
        .set({ resume_at: at, updated_at: at })
        .where('workflow_run_id', '=', runId)
        .where('node_key', '=', nodeKey)
        .where('status', '=', 'running')
        .where('wait_kind', '=', 'limit')
        .execute();
    } else {
      await db
        .updateTable('workflow_run_item')
        .set({ resume_at: at, updated_at: at })
        .where('workflow_run_id', '=', runId)
        .where('node_key', '=', nodeKey)
        .where('item_index', '=', Number(index))
        .where('status', '=', 'running')
        .where('resume_at', 'is not', null)
        .execute();
    }
    await wakeReleased(db, runId, at);
  }
}
