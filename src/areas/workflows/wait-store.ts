import { batches } from '../../db/prepared.js';
import { type Db, updatedAny } from '../../db/store.js';
import type { WaitSpec } from './wait-spec.js';

/** SQL of WAIT_EVENT (docs/workflows.md "WAIT_EVENT"): specs, waiting nodes by key, taking a wait. */

/** Records the specs a plan waits on; one that exists is left as it is. */
export async function registerSpecs(db: Db, specs: readonly WaitSpec[], at: string): Promise<void> {
  if (specs.length === 0) return;
  await db
    .insertInto('workflow_wait_spec')
    .values(
      specs.map((s) => ({ id: s.id, event_type: s.eventType, expression: s.expression, created_at: at })),
    )
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

export async function specsFor(db: Db, eventTypes: readonly string[]): Promise<WaitSpec[]> {
  if (eventTypes.length === 0) return [];
  const rows = await db
    .selectFrom('workflow_wait_spec')
    .select(['id', 'event_type', 'expression'])
    .where('event_type', 'in', [...eventTypes])
    .execute();
  return rows.map((r) => ({ id: r.id, eventType: r.event_type, expression: r.expression }));
}

/** The nodes waiting on any of these keys: one index lookup per key (the partial index on wait_key). */
export async function waitingOn(
  db: Db,
  keys: readonly string[],
): Promise<Array<{ id: string; workflow_run_id: string; wait_key: string }>> {
  const out: Array<{ id: string; workflow_run_id: string; wait_key: string }> = [];
  for (const batch of batches(db, [...keys], 500)) {
    const rows = await db
      .selectFrom('workflow_run_node')
      .select(['id', 'workflow_run_id', 'wait_key'])
      .where('wait_key', 'in', batch)
      .execute();
    for (const r of rows) out.push(r as { id: string; workflow_run_id: string; wait_key: string });
  }
  return out;
}

/** Completes a waiting node with what the event brought, if it still waits on `waitKey`. */
export async function takeByEvent(
  db: Db,
  node: { id: string; wait_key: string },
  output: string,
  at: string,
): Promise<boolean> {
  const res = await db
    .updateTable('workflow_run_node')
    .set({
      status: 'completed',
      output,
      error: null,
      completed_at: at,
      resume_at: null,
      wait_kind: null,
      wait_key: null,
      updated_at: at,
    })
    .where('id', '=', node.id)
    .where('wait_key', '=', node.wait_key)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return updatedAny(res);
}

/**
 * Takes a wait at its timeout: answers 'timed_out' when no event took it first (its key is cleared
 * here, so none can now), or the node as the event left it.
 */
export async function takeByTimeout(
  db: Db,
  nodeId: string,
): Promise<{ timedOut: true } | { timedOut: false; output: string | null; completedAt: string }> {
  const res = await db
    .updateTable('workflow_run_node')
    .set({ wait_key: null })
    .where('id', '=', nodeId)
    .where('wait_key', 'is not', null)
    .executeTakeFirst();
  if (updatedAny(res)) return { timedOut: true };
  const row = await db
    .selectFrom('workflow_run_node')
    .select(['status', 'output', 'completed_at'])
    .where('id', '=', nodeId)
    .executeTakeFirst();
  // Taken by an earlier timeout whose outcome was not written yet (its worker stopped): a timeout.
  if (row?.status !== 'completed' || row.completed_at === null) return { timedOut: true };
  return { timedOut: false, output: row.output, completedAt: row.completed_at };
}

/** Whether an event took any of these nodes' waits (they are no longer running). */
export async function anyTaken(db: Db, nodeIds: readonly string[]): Promise<boolean> {
  if (nodeIds.length === 0) return false;
  const row = await db
    .selectFrom('workflow_run_node')
    .select('id')
    .where('id', 'in', [...nodeIds])
    .where('status', '=', 'completed')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
