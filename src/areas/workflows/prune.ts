import type { Store } from '../../db/store.js';
import {
  cutoffOf,
  groupsBySeconds,
  nothingRemoved,
  type PruneStep,
  type Removed,
  stepsThrough,
} from '../retention/rules.js';
import type { WorkflowRunTable } from './tables.js';

/**
 * The runs retention removes (docs/reliability.md "Retention"): finished runs older than their
 * subscription's rule, with their nodes, in short transactions of at most `limit` runs.
 */

/** A subscription's retention in seconds: its own setting, else the server's; 0 keeps for ever. */
export interface RunRetentionOf {
  subscriptionId: string;
  completedSeconds: number;
  failedSeconds: number;
}

/** What the prune job reads of the subscriptions area: each subscription's own settings (null: the server's). */
export interface RetentionSettingsSource {
  retentionSettings(): Promise<
    Array<{
      id: string;
      retention: { completed_runs_seconds: number | null; failed_runs_seconds: number | null };
    }>
  >;
}

type Status = WorkflowRunTable['status'];
/** The statuses each rule removes. Nothing pending or running is ever removed. */
const KEPT_BY: Record<'completedSeconds' | 'failedSeconds', Status[]> = {
  completedSeconds: ['completed', 'skipped', 'cancelled'],
  failedSeconds: ['failed'],
};

/**
 * A pass removing the runs retention no longer keeps at `now`, with their nodes, a step at a time,
 * each batch one transaction. A re-run's origin stays while the re-run does, and a parent while a
 * child run it started is in flight. On PostgreSQL the rows
 * are locked and others' locks skipped, so two workers never remove the same run and a run being
 * retried at that moment is left alone.
 */
export function runPass(store: Store, rules: RunRetentionOf[], now: Date): PruneStep {
  const statements: Array<{ ids: string[]; status: Status; cutoff: string }> = [];
  for (const [rule, statuses] of Object.entries(KEPT_BY) as Array<[keyof typeof KEPT_BY, Status[]]>)
    for (const [seconds, ids] of groupsBySeconds(rules.map((r) => [r.subscriptionId, r[rule]] as const)))
      for (const status of statuses) statements.push({ ids, status, cutoff: cutoffOf(now, seconds) });
  return stepsThrough(statements, (s, limit) => pruneBatch(store, s.ids, s.status, s.cutoff, limit));
}

async function pruneBatch(
  store: Store,
  subscriptionIds: string[],
  status: Status,
  cutoff: string,
  limit: number,
): Promise<Removed> {
  return store.transaction<Removed>(async (tx) => {
    let q = tx.db
      .selectFrom('workflow_run as r')
      .select('r.id')
      .where('r.event_subscription_id', 'in', subscriptionIds)
      .where('r.status', '=', status)
      .where('r.completed_at', '<', cutoff)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb.selectFrom('workflow_run as rerun').select('rerun.id').whereRef('rerun.rerun_of', '=', 'r.id'),
          ),
        ),
      )
      // A parent stays while a child run it started is in flight (CALL with wait false).
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('workflow_run as child')
              .select('child.id')
              .whereRef('child.parent_run_id', '=', 'r.id')
              .where('child.status', 'in', ['pending', 'running']),
          ),
        ),
      )
      .limit(limit);
    if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const ids = (await q.execute()).map((r) => r.id);
    if (ids.length === 0) return nothingRemoved();
    // Nodes and items first: they reference their run.
    const items = await tx.db
      .deleteFrom('workflow_run_item')
      .where('workflow_run_id', 'in', ids)
      .executeTakeFirst();
    const nodes = await tx.db
      .deleteFrom('workflow_run_node')
      .where('workflow_run_id', 'in', ids)
      .executeTakeFirst();
    const runs = await tx.db.deleteFrom('workflow_run').where('id', 'in', ids).executeTakeFirst();
    const removed = Number(runs.numDeletedRows);
    return {
      records: removed,
      rows: {
        workflow_run: removed,
        workflow_run_node: Number(nodes.numDeletedRows),
        ...(Number(items.numDeletedRows) > 0 ? { workflow_run_item: Number(items.numDeletedRows) } : {}),
      },
    };
  });
}

/**
 * When the oldest finished run kept was created (null: none), for /metrics: the creation index read
 * from its oldest end, past the few old runs still waiting.
 */
export async function oldestFinishedRun(store: Store): Promise<string | null> {
  const row = await store.db
    .selectFrom('workflow_run')
    .select('created_at')
    .where('status', 'in', [...KEPT_BY.completedSeconds, ...KEPT_BY.failedSeconds])
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at ?? null;
}
