import { sql, type Updateable } from 'kysely';
import { dialectOf } from '../../db/prepared.js';
import { type Db, updatedAny } from '../../db/store.js';
import { whereEquals } from '../../http/list.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

/** SQL of run control (docs/workflows.md "Run control"): cancel, retry, and the runs they find. */

/** Pending or running runs: these ids, or a subscription's (oldest first), at most `limit`. */
export async function openRuns(
  db: Db,
  where: { ids?: readonly string[]; subscriptionId?: string },
  limit: number,
): Promise<WorkflowRunTable[]> {
  let q = db.selectFrom('workflow_run').selectAll().where('status', 'in', ['pending', 'running']);
  if (where.ids) q = q.where('id', 'in', where.ids.length > 0 ? [...where.ids] : ['']);
  q = whereEquals(q, { event_subscription_id: where.subscriptionId });
  return q.orderBy('created_at').limit(limit).execute();
}

/** The runs events started (not re-runs) of a subscription for these event ids, by event id. */
export async function runsOfEvents(
  db: Db,
  subscriptionId: string,
  eventIds: readonly string[],
): Promise<Map<string, string>> {
  if (eventIds.length === 0) return new Map();
  let rows: Array<{ id: string; event_id: string }>;
  if (dialectOf(db) === 'postgres') {
    // One probe of the unique index per event id, whatever the statistics say: planned on a table
    // that has grown since its last ANALYZE (a new database's first minutes), `event_id IN (...)`
    // became a filter over every run of the subscription.
    const found = await sql<{ id: string; event_id: string }>`select r.id, r.event_id
      from unnest(${[...eventIds]}::text[]) as e(id)
      cross join lateral (select id, event_id from workflow_run where event_subscription_id = ${subscriptionId}
        and event_id = e.id and rerun_of is null limit 1) as r`.execute(db);
    rows = found.rows;
  } else {
    rows = await db
      .selectFrom('workflow_run')
      .select(['id', 'event_id'])
      .where('event_subscription_id', '=', subscriptionId)
      .where('event_id', 'in', [...eventIds])
      .where('rerun_of', 'is', null)
      .execute();
  }
  return new Map(rows.map((r) => [r.event_id, r.id]));
}

/** The child runs in flight whose parent `runId` waits for them (CALL, FOREACH with call). */
export async function awaitedChildren(db: Db, runId: string): Promise<WorkflowRunTable[]> {
  return db
    .selectFrom('workflow_run')
    .selectAll()
    .where('parent_run_id', '=', runId)
    .where('awaited_by_parent', '=', 1)
    .where('status', 'in', ['pending', 'running'])
    .execute();
}

/** A skip reason for nodes a cancel leaves unexecuted (the shape conditions' skips have). */
const CANCELLED_SKIP = JSON.stringify({
  message: 'cancelled: the run was cancelled before this node ran',
  edges: [],
});

const CANCELLED_WHILE_RUNNING =
  'cancelled while running: a wait ends here; an ACTION call in flight may still complete at its target, ' +
  'its outcome is not recorded and it is not retried';

type RunChanges = Updateable<WorkflowRunTable>;
type NodeChanges = Updateable<WorkflowRunNodeTable>;

/**
 * Moves run `id` out of one of the statuses `from` with `run`'s changes and then, only if that won,
 * its nodes in each status `nodes` names with their changes; every row it changes is updated `at`.
 * The compare-and-set on the run guards the whole move: of two concurrent ones, exactly one changes
 * anything. False when it lost.
 */
async function moveRun(
  db: Db,
  id: string,
  at: string,
  from: WorkflowRunTable['status'][],
  run: RunChanges,
  nodes: [WorkflowRunNodeTable['status'], NodeChanges][],
): Promise<boolean> {
  const moved = db
    .updateTable('workflow_run')
    .set({ ...run, updated_at: at })
    .where('id', '=', id)
    .where('status', 'in', from);
  if (!updatedAny(await moved.executeTakeFirst())) return false;
  const nodesOfRun = db.updateTable('workflow_run_node').where('workflow_run_id', '=', id);
  for (const [status, changes] of nodes) {
    await nodesOfRun
      .set({ ...changes, updated_at: at })
      .where('status', '=', status)
      .execute();
  }
  return true;
}

/**
 * Cancels a pending or running run in one write: the run ends `cancelled` and loses its worker and
 * timer (a worker still driving it finds its lease gone at its next write and stops; a claim never
 * takes it again); pending nodes are skipped, running ones (a DELAY, a retry wait, an ACTION in
 * flight) fail saying so. False when the run was not pending or running.
 */
export async function cancelRun(db: Db, id: string, at: string, reason: string): Promise<boolean> {
  const run: RunChanges = {
    status: 'cancelled',
    error: reason,
    completed_at: at,
    wake_at: null,
    locked_by: null,
  };
  const moved = await moveRun(db, id, at, ['pending', 'running'], run, [
    ['pending', { status: 'skipped', skip_reason: CANCELLED_SKIP, completed_at: at, resume_at: null }],
    [
      'running',
      {
        status: 'failed',
        error: CANCELLED_WHILE_RUNNING,
        completed_at: at,
        resume_at: null,
        wait_kind: null,
        wait_key: null,
      },
    ],
  ]);
  if (moved) {
    // A FOREACH's items under way end with it; items never started stay unmade.
    await db
      .updateTable('workflow_run_item')
      .set({
        status: 'failed',
        error: CANCELLED_WHILE_RUNNING,
        completed_at: at,
        resume_at: null,
        updated_at: at,
      })
      .where('workflow_run_id', '=', id)
      .where('status', '=', 'running')
      .execute();
  }
  return moved;
}

/**
 * Reopens a failed run where it failed: its failed nodes go back to pending (their attempts and
 * errors cleared), completed and skipped ones keep their results, and the run is running and due
 * now, so a worker claims it and goes on from there. False when the run was not failed.
 */
export async function reopenFailed(db: Db, id: string, at: string): Promise<boolean> {
  const run: RunChanges = {
    status: 'running',
    error: null,
    completed_at: null,
    wake_at: at,
    locked_by: null,
  };
  const cleared = {
    input: null,
    output: null,
    error: null,
    started_at: null,
    completed_at: null,
    resume_at: null,
  };
  // A failed FOREACH starts over: the items of its failed attempt go (the caller's transaction
  // undoes this when the run was not failed).
  await db
    .deleteFrom('workflow_run_item')
    .where('workflow_run_id', '=', id)
    .where('node_key', 'in', (eb) =>
      eb
        .selectFrom('workflow_run_node')
        .select('node_key')
        .where('workflow_run_id', '=', id)
        .where('status', '=', 'failed'),
    )
    .execute();
  return moveRun(db, id, at, ['failed'], run, [
    ['failed', { status: 'pending', ...cleared, attempts: 0, interruptions: 0 }],
  ]);
}
