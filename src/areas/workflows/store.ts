import type { Static } from '@sinclair/typebox';
import { sql } from 'kysely';
import { jsonText, parseJsonText } from '../../db/json-text.js';
import { batches, prepared } from '../../db/prepared.js';
import type { Db } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereEquals, whereTimeRanges } from '../../http/list.js';
import type { TimeRangeFilters } from '../../http/list-schemas.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventInput } from '../events/publish.js';
import { wakeRuns } from './claim-store.js';
import { releaseConcurrency } from './flow-store.js';
import { itemRow, upsertItemsStatement } from './item-store.js';
import { type ItemState, limitWaitOf, type NodeState, type RunState, type SkipReason } from './run-state.js';
import type { Run, RunNode } from './schemas.js';
import type { WorkflowRunItemTable, WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

/** SQL of workflow runs and run nodes; rows map 1:1 to the API (JSON text parsed here). */

export type WorkflowRun = Static<typeof Run>;
export type WorkflowRunNode = Static<typeof RunNode>;

/** One step's write of a run: its fields, its lease (or release), its changed nodes. */
export interface RunWrite {
  run: RunState;
  lease: { wake_at: string | null; locked_by: string | null };
  nodes: NodeState[];
  at: string;
  /** The event the run's end publishes, in the same transaction as the end (run-events.ts). */
  ended?: EventInput;
  /**
   * A run not written yet (docs/workflows.md "Durability": a new run's first write): its row is
   * inserted with the run's fields and lease, and `nodes` are all of its nodes. Nothing is written
   * when the run exists already (another hand-over of its event created it).
   */
  create?: WorkflowRunTable;
  /** FOREACH items changed (docs/workflows.md "FOREACH"), with their node's key. */
  items?: Array<{ nodeKey: string; item: ItemState }>;
  /** Child runs this write starts (CALL, FOREACH with call): created with it, due at once. */
  spawns?: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }>;
  /** The run ended and a node of this run waits for it (an awaited child): that run is woken. */
  wakeParent?: string;
}

export interface RunFilters extends TimeRangeFilters<'started_at' | 'completed_at'> {
  event_subscription_id?: string;
  status?: WorkflowRunTable['status'];
  event_type?: string;
  parent_run_id?: string;
}

export const toRun = ({
  wake_at: _w,
  locked_by: _l,
  causation_depth: _d,
  concurrency_key: _k,
  flow_deadline: _f,
  awaited_by_parent: _a,
  trigger_event,
  ...r
}: WorkflowRunTable): WorkflowRun => ({
  ...r,
  trigger_event: JSON.parse(trigger_event) as CloudEvent,
});

/** The JSON columns of a run-node row, parsed. */
const nodeDocuments = (r: Pick<WorkflowRunNodeTable, 'input' | 'output' | 'skip_reason'>) => ({
  input: parseJsonText(r.input),
  output: parseJsonText(r.output),
  skip_reason: parseJsonText(r.skip_reason) as SkipReason | null,
});

export const toRunNode = ({
  interruptions: _i,
  wait_key,
  wait_kind,
  updated_at: _u,
  ...r
}: WorkflowRunNodeTable): WorkflowRunNode => {
  const node: WorkflowRunNode = { ...r, ...nodeDocuments(r) };
  const waiting = r.status === 'running' && wait_kind === 'limit' ? limitWaitOf(wait_key) : undefined;
  if (waiting) node.waiting_for_limit = waiting;
  return node;
};

/** A run-node row as the machine's state. */
export const toNodeState = ({
  workflow_run_id: _r,
  node_key,
  node_type,
  created_at: _c,
  updated_at: _u,
  ...r
}: WorkflowRunNodeTable): NodeState => ({
  ...r,
  key: node_key,
  type: node_type,
  ...nodeDocuments(r),
});

export function nodeRow(runId: string, s: NodeState, at: string): WorkflowRunNodeTable {
  return {
    id: s.id,
    workflow_run_id: runId,
    node_id: s.node_id,
    node_key: s.key,
    node_type: s.type,
    position: s.position,
    status: s.status,
    // A COMPUTE node's input is its `logic`, which the immutable graph version holds: not stored
    // again per run (withGraphInputs puts it back in the answer).
    input: s.type === 'COMPUTE' ? null : jsonText(s.input),
    output: jsonText(s.output),
    error: s.error,
    skip_reason: jsonText(s.skip_reason),
    started_at: s.started_at,
    completed_at: s.completed_at,
    attempts: s.attempts,
    interruptions: s.interruptions,
    resume_at: s.resume_at,
    wait_kind: s.wait_kind,
    wait_key: s.wait_key,
    created_at: at,
    updated_at: at,
  };
}

/**
 * What a run's write brings besides its own row and nodes, for the runs written (`held`): its
 * FOREACH items, the child runs it starts, and the wake of the parent an awaited child's end gives.
 */
async function writeAlongside(
  db: Db,
  items: readonly RunWrite[],
  held: readonly boolean[],
  woken: () => void,
): Promise<void> {
  const rows: WorkflowRunItemTable[] = [];
  const spawns: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }> = [];
  const parents: string[] = [];
  for (const [i, x] of items.entries()) {
    if (!held[i]) continue;
    if (x.items) for (const { nodeKey, item } of x.items) rows.push(itemRow(x.run.id, nodeKey, item, x.at));
    if (x.spawns) spawns.push(...x.spawns);
    if (x.wakeParent !== undefined && x.run.status !== 'running') parents.push(x.wakeParent);
  }
  for (const batch of batches(db, rows, 300)) await upsertItemsStatement.queue(db, batch);
  if (spawns.length > 0) await insertRuns(db, spawns);
  if (parents.length > 0) {
    await wakeRuns(db, parents, items[0].at);
    woken();
  }
}

const insertRunsStatement = prepared((db, _dialect, runs: WorkflowRunTable[]) =>
  db
    .insertInto('workflow_run')
    .values(runs)
    .onConflict((oc) =>
      oc.columns(['event_subscription_id', 'event_id']).where('rerun_of', 'is', null).doNothing(),
    )
    .returning('id'),
);
const insertNodesStatement = prepared((db, _dialect, nodes: WorkflowRunNodeTable[]) =>
  db.insertInto('workflow_run_node').values(nodes),
);

/**
 * Creates runs and their pending nodes, skipping any run whose (subscription, event id) exists: the
 * unique index makes this idempotent however often the outbox hands an event over. Answers, per
 * run, whether it was created. Multi-row statements: a few per batch, not per run.
 */
export async function insertRuns(
  db: Db,
  items: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }>,
): Promise<boolean[]> {
  const created = new Set<string>();
  for (const batch of batches(db, items, 100)) {
    const { rows } = await insertRunsStatement.execute(
      db,
      batch.map((x) => x.run),
    );
    for (const r of rows) created.add(r.id);
  }
  const nodes = items.filter((x) => created.has(x.run.id)).flatMap((x) => x.nodes);
  // Not read back: on PostgreSQL they go out with the batch's COMMIT (`queue`).
  for (const batch of batches(db, nodes, 500)) await insertNodesStatement.queue(db, batch);
  return items.map((x) => created.has(x.run.id));
}

/**
 * Runs of a subscription created at or after `since`, not counting runs the guards refused; with
 * `causedOnly`, only runs whose trigger event runs caused (causation depth 1 or more).
 */
export async function countRunsSince(
  db: Db,
  subscriptionId: string,
  since: string,
  causedOnly: boolean,
): Promise<number> {
  let q = db
    .selectFrom('workflow_run')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('event_subscription_id', '=', subscriptionId)
    .where('created_at', '>=', since)
    .where('status', '!=', 'skipped');
  if (causedOnly) q = q.where('causation_depth', '>', 0);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function nodesOfRuns(db: Db, runIds: string[]): Promise<WorkflowRunNodeTable[]> {
  if (runIds.length === 0) return [];
  return db
    .selectFrom('workflow_run_node')
    .selectAll()
    .where('workflow_run_id', 'in', runIds)
    .orderBy('position')
    .execute();
}

type RunFields = Pick<
  WorkflowRunTable,
  'id' | 'status' | 'error' | 'completed_at' | 'wake_at' | 'locked_by'
> & {
  at: string;
};
const updateRunsStatement = prepared((db, _dialect, workerId: string, runs: RunFields[]) => {
  const values = runs.map(
    (r) => sql`(${r.id}, ${r.status}, ${r.error}, ${r.completed_at}, ${r.wake_at}, ${r.locked_by}, ${r.at})`,
  );
  return sql<Pick<WorkflowRunTable, 'id' | 'event_subscription_id' | 'concurrency_key'>>`
    update workflow_run set status = v.column2, error = v.column3, completed_at = v.column4,
      wake_at = v.column5, locked_by = v.column6, updated_at = v.column7
    from (values ${sql.join(values)}) as v
    where workflow_run.id = v.column1 and workflow_run.locked_by = ${workerId}
    returning workflow_run.id, workflow_run.event_subscription_id, workflow_run.concurrency_key`.compile(db);
});

/**
 * The runs' own fields, where this worker still holds them: one statement per batch (an UPDATE joined
 * to a VALUES list; its columns are column1.. on both stores) instead of one per run, which were three
 * of an execution's eight statements. Answers the ids written. Each run at most once in `items`.
 */
async function updateRuns(
  db: Db,
  workerId: string,
  items: RunWrite[],
): Promise<{ written: Set<string>; underKeys: Map<string, { subscriptionId: string; key: string }> }> {
  const written = new Set<string>();
  /** Runs written that run under a concurrency key (flow control), by id. */
  const underKeys = new Map<string, { subscriptionId: string; key: string }>();
  for (const batch of batches(db, items, 400)) {
    const runs = batch.map(({ run, lease, at }) => ({
      id: run.id,
      status: run.status,
      error: run.error,
      completed_at: run.completed_at,
      wake_at: lease.wake_at,
      locked_by: lease.locked_by,
      at,
    }));
    const { rows } = await updateRunsStatement.execute(db, workerId, runs);
    for (const r of rows) {
      written.add(r.id);
      if (r.concurrency_key !== null)
        underKeys.set(r.id, { subscriptionId: r.event_subscription_id, key: r.concurrency_key });
    }
  }
  return { written, underKeys };
}

/** A run's node states: new ones inserted, known ones (by id) updated. */
const upsertNodesStatement = prepared((db, _dialect, nodes: WorkflowRunNodeTable[]) =>
  db
    .insertInto('workflow_run_node')
    .values(nodes)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        status: eb.ref('excluded.status'),
        input: eb.ref('excluded.input'),
        output: eb.ref('excluded.output'),
        error: eb.ref('excluded.error'),
        skip_reason: eb.ref('excluded.skip_reason'),
        started_at: eb.ref('excluded.started_at'),
        completed_at: eb.ref('excluded.completed_at'),
        attempts: eb.ref('excluded.attempts'),
        interruptions: eb.ref('excluded.interruptions'),
        resume_at: eb.ref('excluded.resume_at'),
        wait_kind: eb.ref('excluded.wait_kind'),
        wait_key: eb.ref('excluded.wait_key'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    ),
);

/**
 * Writes runs' changes where this worker still holds them; answers, per run, false (nothing
 * written) when the lease was lost to another worker. The changed nodes of every run go in one
 * upsert on the primary key (the rows exist), portable to both stores.
 */
export async function writeRuns(
  db: Db,
  workerId: string,
  items: RunWrite[],
  woken: () => void = () => {},
): Promise<boolean[]> {
  // A run twice in one batch (the engine serialises a run's writes, so never in practice) is written
  // one write at a time, in order: one statement cannot apply two changes to one row.
  if (new Set(items.map((x) => x.run.id)).size < items.length) {
    const held: boolean[] = [];
    for (const item of items) held.push(...(await writeRuns(db, workerId, [item], woken)));
    return held;
  }
  if (items.some((x) => x.create)) {
    const fresh = items.filter((x) => x.create);
    const rest = items.filter((x) => !x.create);
    const created = await insertRuns(
      db,
      fresh.map(({ create, run, lease, nodes, at }) => ({
        run: {
          ...(create as WorkflowRunTable),
          status: run.status,
          error: run.error,
          completed_at: run.completed_at,
          wake_at: lease.wake_at,
          locked_by: lease.locked_by,
          updated_at: at,
        },
        nodes: nodes.map((s) => nodeRow(run.id, s, at)),
      })),
    );
    await writeAlongside(db, fresh, created, woken);
    const updated = rest.length > 0 ? await writeRuns(db, workerId, rest, woken) : [];
    const by = new Map<RunWrite, boolean>();
    for (const [i, x] of fresh.entries()) by.set(x, created[i]);
    for (const [i, x] of rest.entries()) by.set(x, updated[i]);
    return items.map((x) => by.get(x) as boolean);
  }
  const { written, underKeys } = await updateRuns(db, workerId, items);
  const held = items.map((x) => written.has(x.run.id));
  const nodes = items.flatMap((x, i) => (held[i] ? x.nodes.map((s) => nodeRow(x.run.id, s, x.at)) : []));
  for (const batch of batches(db, nodes, 400)) await upsertNodesStatement.queue(db, batch);
  await writeAlongside(db, items, held, woken);
  if (underKeys.size > 0) {
    // A run that ended under a concurrency key makes room: the key's queue head is woken to take it.
    const ended = items.filter((x) => x.run.status !== 'running' && underKeys.has(x.run.id));
    const at = items[0].at;
    const keys = ended.map((x) => underKeys.get(x.run.id) as { subscriptionId: string; key: string });
    if (await releaseConcurrency(db, keys, at)) woken();
  }
  return held;
}

export async function getRun(db: Db, id: string): Promise<WorkflowRunTable | undefined> {
  return db.selectFrom('workflow_run').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function nodesOfRun(db: Db, runId: string): Promise<WorkflowRunNodeTable[]> {
  return db
    .selectFrom('workflow_run_node')
    .selectAll()
    .where('workflow_run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('position')
    .execute();
}

export async function listRuns(db: Db, page: Page, f: RunFilters): Promise<ListResult<WorkflowRun>> {
  let q = db.selectFrom('workflow_run');
  q = whereEquals(q, {
    event_subscription_id: f.event_subscription_id,
    status: f.status,
    event_type: f.event_type,
    parent_run_id: f.parent_run_id,
  });
  return paginate(whereTimeRanges(q, f, ['started_at', 'completed_at']), page, toRun);
}

/**
 * The answer's `input` of the nodes whose input the graph version holds (COMPUTE: `{logic}`), for
 * nodes that started; `graphNodes` is the run's graph version.
 */
export function withGraphInputs(
  nodes: WorkflowRunNode[],
  graphNodes: ReadonlyArray<{ id: string; config: Record<string, unknown> | null }>,
): WorkflowRunNode[] {
  const config = new Map(graphNodes.map((n) => [n.id, n.config]));
  return nodes.map((n) =>
    n.node_type === 'COMPUTE' && n.input === null && n.started_at !== null
      ? { ...n, input: { logic: config.get(n.node_id)?.logic ?? null } }
      : n,
  );
}

/** Whether any node needs its graph version to be answered (withGraphInputs). */
export const needsGraphInputs = (nodes: readonly WorkflowRunNode[]): boolean =>
  nodes.some((n) => n.node_type === 'COMPUTE' && n.input === null && n.started_at !== null);
