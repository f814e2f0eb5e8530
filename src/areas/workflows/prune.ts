import type { Store } from '../../db/store.js';
import { iso } from '../../lib/clock.js';
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
/** Subscriptions per statement: well inside both dialects' limits on bound parameters. */
const IDS_PER_STATEMENT = 500;

export interface PrunedRuns {
  runs: number;
  nodes: number;
}

/**
 * Removes up to `limit` runs that retention no longer keeps, with their nodes, in one transaction;
 * answers what it removed (fewer than `limit` runs: nothing more is due now). A re-run's origin
 * stays while the re-run does. On PostgreSQL the rows are locked and others' locks skipped, so two
 * workers never remove the same run and a run being retried at that moment is left alone.
 */
export async function pruneRuns(
  store: Store,
  rules: RunRetentionOf[],
  now: Date,
  limit: number,
): Promise<PrunedRuns> {
  const removed: PrunedRuns = { runs: 0, nodes: 0 };
  for (const [rule, statuses] of Object.entries(KEPT_BY) as Array<[keyof typeof KEPT_BY, Status[]]>) {
    // Subscriptions with the same rule share a statement.
    const bySeconds = new Map<number, string[]>();
    for (const r of rules) {
      if (r[rule] === 0) continue;
      const ids = bySeconds.get(r[rule]) ?? [];
      ids.push(r.subscriptionId);
      bySeconds.set(r[rule], ids);
    }
    for (const [seconds, ids] of bySeconds) {
      const cutoff = iso(new Date(now.getTime() - seconds * 1000));
      for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
        for (const status of statuses) {
          // Again while it removes any: a re-run removed frees its origin for the next statement.
          for (;;) {
            const batch = await pruneBatch(
              store,
              ids.slice(i, i + IDS_PER_STATEMENT),
              status,
              cutoff,
              limit - removed.runs,
            );
            removed.runs += batch.runs;
            removed.nodes += batch.nodes;
            if (removed.runs >= limit) return removed;
            if (batch.runs === 0) break;
          }
        }
      }
    }
  }
  return removed;
}

async function pruneBatch(
  store: Store,
  subscriptionIds: string[],
  status: Status,
  cutoff: string,
  limit: number,
): Promise<PrunedRuns> {
  return store.transaction(async (tx) => {
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
      .limit(limit);
    if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const ids = (await q.execute()).map((r) => r.id);
    if (ids.length === 0) return { runs: 0, nodes: 0 };
    // Nodes first: they reference their run.
    const nodes = await tx.db
      .deleteFrom('workflow_run_node')
      .where('workflow_run_id', 'in', ids)
      .executeTakeFirst();
    const runs = await tx.db.deleteFrom('workflow_run').where('id', 'in', ids).executeTakeFirst();
    return { runs: Number(runs.numDeletedRows), nodes: Number(nodes.numDeletedRows) };
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
