import { jsonText, parseJsonText } from '../../db/json-text.js';
import { batches, prepared } from '../../db/prepared.js';
import type { Db } from '../../db/store.js';
import type { ItemState } from './run-state.js';
import type { WorkflowRunItemTable } from './tables.js';

/** SQL of FOREACH items (docs/workflows.md "FOREACH") and of child runs as their parents read them (CALL). */

export function itemRow(runId: string, nodeKey: string, item: ItemState, at: string): WorkflowRunItemTable {
  return {
    id: item.id,
    workflow_run_id: runId,
    node_key: nodeKey,
    item_index: item.index,
    status: item.status,
    input: jsonText(item.input),
    output: jsonText(item.output),
    error: item.error,
    attempts: item.attempts,
    interruptions: item.interruptions,
    resume_at: item.resume_at,
    child_run_id: item.child_run_id,
    started_at: item.started_at,
    completed_at: item.completed_at,
    created_at: at,
    updated_at: at,
  };
}

/** A FOREACH item row as the machine's state. */
export const toItemState = (r: WorkflowRunItemTable): ItemState => ({
  id: r.id,
  index: r.item_index,
  status: r.status,
  input: parseJsonText(r.input),
  output: parseJsonText(r.output),
  error: r.error,
  attempts: r.attempts,
  interruptions: r.interruptions,
  resume_at: r.resume_at,
  child_run_id: r.child_run_id,
  started_at: r.started_at,
  completed_at: r.completed_at,
});

/** The items of these runs' FOREACH nodes, by run and node key, in item order. */
export async function itemsOfRuns(
  db: Db,
  runIds: readonly string[],
): Promise<Map<string, Map<string, ItemState[]>>> {
  const out = new Map<string, Map<string, ItemState[]>>();
  for (const batch of batches(db, [...runIds], 500)) {
    const rows = await db
      .selectFrom('workflow_run_item')
      .selectAll()
      .where('workflow_run_id', 'in', batch)
      .orderBy('item_index')
      .execute();
    for (const r of rows) {
      const byNode = out.get(r.workflow_run_id) ?? new Map<string, ItemState[]>();
      const list = byNode.get(r.node_key) ?? [];
      list.push(toItemState(r));
      byNode.set(r.node_key, list);
      out.set(r.workflow_run_id, byNode);
    }
  }
  return out;
}

export const upsertItemsStatement = prepared((db, _dialect, items: WorkflowRunItemTable[]) =>
  db
    .insertInto('workflow_run_item')
    .values(items)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        status: eb.ref('excluded.status'),
        input: eb.ref('excluded.input'),
        output: eb.ref('excluded.output'),
        error: eb.ref('excluded.error'),
        attempts: eb.ref('excluded.attempts'),
        interruptions: eb.ref('excluded.interruptions'),
        resume_at: eb.ref('excluded.resume_at'),
        child_run_id: eb.ref('excluded.child_run_id'),
        started_at: eb.ref('excluded.started_at'),
        completed_at: eb.ref('excluded.completed_at'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    ),
);

/** How these child runs ended, by id; runs still pending or running are absent. */
export async function childOutcomes(
  db: Db,
  ids: readonly string[],
): Promise<
  Map<
    string,
    { status: 'completed' | 'failed' | 'cancelled'; error: string | null; outputs: Record<string, unknown> }
  >
> {
  const out = new Map<
    string,
    { status: 'completed' | 'failed' | 'cancelled'; error: string | null; outputs: Record<string, unknown> }
  >();
  if (ids.length === 0) return out;
  const ended: Array<{ id: string; status: string; error: string | null }> = [];
  for (const batch of batches(db, [...ids], 500)) {
    ended.push(
      ...(await db
        .selectFrom('workflow_run')
        .select(['id', 'status', 'error'])
        .where('id', 'in', batch)
        .where('status', 'not in', ['pending', 'running'])
        .execute()),
    );
  }
  const completed = ended.filter((r) => r.status === 'completed').map((r) => r.id);
  const outputs = new Map<string, Record<string, unknown>>();
  for (const batch of batches(db, completed, 500)) {
    const rows = await db
      .selectFrom('workflow_run_node')
      .select(['workflow_run_id', 'node_key', 'output'])
      .where('workflow_run_id', 'in', batch)
      .where('status', '=', 'completed')
      .orderBy('position')
      .execute();
    for (const r of rows) {
      const byKey = outputs.get(r.workflow_run_id) ?? {};
      byKey[r.node_key] = parseJsonText(r.output);
      outputs.set(r.workflow_run_id, byKey);
    }
  }
  for (const r of ended) {
    const status = r.status === 'completed' ? 'completed' : r.status === 'cancelled' ? 'cancelled' : 'failed';
    out.set(r.id, { status, error: r.error, outputs: outputs.get(r.id) ?? {} });
  }
  return out;
}

/** Items of a run's FOREACH nodes by status, by node key (the run view's "items done of total"). */
export async function itemCounts(db: Db, runId: string): Promise<Map<string, Record<string, number>>> {
  const rows = await db
    .selectFrom('workflow_run_item')
    .select(['node_key', 'status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workflow_run_id', '=', runId)
    .groupBy(['node_key', 'status'])
    .execute();
  const out = new Map<string, Record<string, number>>();
  for (const r of rows) out.set(r.node_key, { ...(out.get(r.node_key) ?? {}), [r.status]: Number(r.n) });
  return out;
}

/** Whether any of these runs ended. */
export async function anyEnded(db: Db, ids: readonly string[]): Promise<boolean> {
  if (ids.length === 0) return false;
  const row = await db
    .selectFrom('workflow_run')
    .select('id')
    .where('id', 'in', [...ids])
    .where('status', 'not in', ['pending', 'running'])
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
