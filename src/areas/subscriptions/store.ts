import type { Static } from '@sinclair/typebox';
import { listActive, softDeleted, updateActive } from '../../db/audit.js';
import { parseJsonText } from '../../db/json-text.js';
import { batches, prepared } from '../../db/prepared.js';
import type { Db, Tx } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import type { FlowControl } from '../workflows/flow-control.js';
import type { RetryPolicy } from '../workflows/graph.js';
import type { NodeType } from '../workflows/node-config.js';
import type { GraphEdge, GraphNode } from '../workflows/plan.js';
import type { Subscription as SubscriptionSchema } from './schemas.js';
import type { EventSubscriptionTable, WorkflowEdgeTable, WorkflowNodeTable } from './tables.js';

/** SQL of subscriptions and graphs; maps rows (0/1 booleans, JSON text) to the API's shapes. */

export type Subscription = Static<typeof SubscriptionSchema>;

/** A subscription plus its current graph version (internal: the router and the engine need it). */
export interface RoutableSubscription extends Subscription {
  graph_version: number;
}

export interface SubscriptionFilters {
  event_type?: string;
  enabled?: boolean;
  name?: string;
  search?: string;
}

export const toSubscription = (r: EventSubscriptionTable): RoutableSubscription => ({
  id: r.id,
  name: r.name,
  event_type: r.event_type,
  description: r.description,
  enabled: Boolean(r.enabled),
  source_filter: r.source_filter,
  subject_filter: r.subject_filter,
  condition_jsonlogic: parseJsonText(r.condition_jsonlogic),
  max_runs_per_minute: r.max_runs_per_minute,
  retention: {
    completed_runs_seconds: r.retention_completed_runs_seconds,
    failed_runs_seconds: r.retention_failed_runs_seconds,
  },
  flow_control: parseJsonText<FlowControl>(r.flow_control),
  paused_reason: r.paused_reason,
  paused_at: r.paused_at,
  graph_version: r.graph_version,
  created_at: r.created_at,
  updated_at: r.updated_at,
  updated_by: r.updated_by,
  deleted_at: r.deleted_at,
});

/** The API's subscription (no internal graph_version). */
export function publicSubscription(s: RoutableSubscription): Subscription {
  const { graph_version: _v, ...rest } = s;
  return rest;
}

const toNode = (r: WorkflowNodeTable): GraphNode => ({
  id: r.id,
  event_subscription_id: r.event_subscription_id,
  key: r.key,
  name: r.name,
  description: r.description,
  type: r.type as NodeType,
  config: parseJsonText(r.config),
  retry_policy: parseJsonText<RetryPolicy>(r.retry_policy),
  timeout_ms: r.timeout_ms,
  continue_on_error: Boolean(r.continue_on_error),
  created_at: r.created_at,
});

const toEdge = (r: WorkflowEdgeTable): GraphEdge => ({
  id: r.id,
  event_subscription_id: r.event_subscription_id,
  from_node_id: r.from_node_id,
  to_node_id: r.to_node_id,
  label: r.label,
  condition_jsonlogic: parseJsonText(r.condition_jsonlogic),
  on_failure: Boolean(r.on_failure),
  created_at: r.created_at,
});

export type SubscriptionPatch = Partial<
  Pick<
    EventSubscriptionTable,
    | 'name'
    | 'event_type'
    | 'description'
    | 'enabled'
    | 'source_filter'
    | 'subject_filter'
    | 'condition_jsonlogic'
    | 'max_runs_per_minute'
    | 'retention_completed_runs_seconds'
    | 'retention_failed_runs_seconds'
    | 'flow_control'
    | 'paused_reason'
    | 'paused_at'
  >
>;

export async function insert(db: Db, row: EventSubscriptionTable): Promise<void> {
  await db.insertInto('event_subscription').values(row).execute();
}

export async function get(db: Db, id: string, opts: { includeDeleted?: boolean } = {}) {
  let q = db.selectFrom('event_subscription').selectAll().where('id', '=', id);
  if (!opts.includeDeleted) q = q.where('deleted_at', 'is', null);
  const row = await q.executeTakeFirst();
  return row ? toSubscription(row) : undefined;
}

/** An active subscription, read for a change and held until the transaction ends. */
export async function lock(tx: Tx, id: string) {
  let q = tx.db
    .selectFrom('event_subscription')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null);
  // PostgreSQL: serialise concurrent graph saves of one subscription. SQLite has one writer anyway.
  if (tx.dialect === 'postgres') q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row ? toSubscription(row) : undefined;
}

/** Changes an active subscription; false when it is gone (deleted meanwhile). */
export async function update(
  db: Db,
  id: string,
  patch: SubscriptionPatch & { updated_at: string; updated_by: string | null },
): Promise<boolean> {
  return updateActive(db, 'event_subscription', id, patch);
}

/**
 * Disables an enabled, active subscription saying why (the rate guard); answers its name, or
 * undefined when it was not enabled.
 */
export async function pause(db: Db, id: string, reason: string, at: string): Promise<string | undefined> {
  const r = await db
    .updateTable('event_subscription')
    .set({ enabled: 0, paused_reason: reason, paused_at: at, updated_at: at })
    .where('id', '=', id)
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null)
    .returning('name')
    .executeTakeFirst();
  return r?.name;
}

/** Soft-deletes an active subscription; false when it was not active (one concurrent delete wins). */
export async function softDelete(db: Db, id: string, at: string, by: string): Promise<boolean> {
  return updateActive(db, 'event_subscription', id, softDeleted(at, by));
}

export function list(db: Db, page: Page, f: SubscriptionFilters): Promise<ListResult<Subscription>> {
  const filters = {
    equals: { event_type: f.event_type, enabled: f.enabled },
    contains: { name: f.name },
    search: { value: f.search, in: ['name'] },
  };
  return listActive(db, 'event_subscription', page, filters, (r) => publicSubscription(toSubscription(r)));
}

/** Enabled, non-deleted subscriptions of these event types: the router's indexed lookup. */
export async function routable(db: Db, eventTypes: readonly string[]): Promise<RoutableSubscription[]> {
  if (eventTypes.length === 0) return [];
  const { rows } = await routableStatement.execute(db, [...eventTypes]);
  return rows.map(toSubscription);
}

const routableStatement = prepared((db, _dialect, eventTypes: string[]) =>
  db
    .selectFrom('event_subscription')
    .selectAll()
    .where('event_type', 'in', eventTypes)
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null),
);

type Graph = { nodes: GraphNode[]; edges: GraphEdge[] };

/**
 * The nodes and edges of a subscription's graph in their order: with `version`, that saved version,
 * deleted or not (a run finishes on the version it started with); without, the current one.
 */
async function readGraph(db: Db, subscriptionId: string, version?: number): Promise<Graph> {
  // Both tables key their rows alike (subscription, graph_version, position, deleted_at).
  const rows = (table: 'workflow_node' | 'workflow_edge') => {
    const q = db.selectFrom(table).selectAll().where('event_subscription_id', '=', subscriptionId);
    const which =
      version === undefined ? q.where('deleted_at', 'is', null) : q.where('graph_version', '=', version);
    return which.orderBy('position').execute();
  };
  const [nodes, edges] = await Promise.all([rows('workflow_node'), rows('workflow_edge')]);
  return {
    nodes: (nodes as WorkflowNodeTable[]).map(toNode),
    edges: (edges as WorkflowEdgeTable[]).map(toEdge),
  };
}

/** The current (non-deleted) graph. */
export const currentGraph = (db: Db, subscriptionId: string) => readGraph(db, subscriptionId);

/** One saved version, deleted or not. */
export const graphVersion = (db: Db, subscriptionId: string, version: number) =>
  readGraph(db, subscriptionId, version);

export async function softDeleteGraph(db: Db, subscriptionId: string, at: string): Promise<void> {
  await db
    .updateTable('workflow_node')
    .set({ deleted_at: at, updated_at: at })
    .where('event_subscription_id', '=', subscriptionId)
    .where('deleted_at', 'is', null)
    .execute();
  await db
    .updateTable('workflow_edge')
    .set({ deleted_at: at })
    .where('event_subscription_id', '=', subscriptionId)
    .where('deleted_at', 'is', null)
    .execute();
}

export async function insertGraph(
  db: Db,
  nodes: WorkflowNodeTable[],
  edges: WorkflowEdgeTable[],
): Promise<void> {
  // Batched: SQLite binds at most 32766 parameters per statement.
  for (const batch of batches(db, nodes, 500)) await db.insertInto('workflow_node').values(batch).execute();
  for (const batch of batches(db, edges, 500)) await db.insertInto('workflow_edge').values(batch).execute();
}

/** Every subscription's run retention (deleted ones too), for the prune job. */
export async function retentionSettings(db: Db) {
  const rows = await db
    .selectFrom('event_subscription')
    .select(['id', 'retention_completed_runs_seconds', 'retention_failed_runs_seconds'])
    .execute();
  return rows.map((r) => ({
    id: r.id,
    retention: {
      completed_runs_seconds: r.retention_completed_runs_seconds,
      failed_runs_seconds: r.retention_failed_runs_seconds,
    },
  }));
}
