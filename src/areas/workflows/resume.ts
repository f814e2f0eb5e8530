import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { CloudEvent } from '../events/cloudevent.js';
import * as itemStore from './item-store.js';
import { describeThrown } from './jsonlogic.js';
import { RunMachine } from './machine.js';
import type { Plan } from './plan.js';
import { runEndedEvent } from './run-events.js';
import type { NodeState } from './run-state.js';
import type { RunTracing } from './run-tracing.js';
import * as runs from './store.js';
import { type RunWrite, toNodeState } from './store.js';
import type { WorkflowRunTable } from './tables.js';

export interface ResumeDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  /** The engine's batched run write (it checks this worker holds the run). */
  writeRun(write: RunWrite): Promise<boolean>;
  /** The spans of a run failed here. */
  tracing: RunTracing;
}

/**
 * Rebuilds machines for claimed runs from their persisted state (a run resumed after a timer, a
 * retry, or its worker's crash). A run whose graph version cannot be loaded fails here.
 */
export async function resumeRuns(rows: WorkflowRunTable[], deps: ResumeDeps): Promise<RunMachine[]> {
  const { store, clock, log, planOf, writeRun } = deps;
  const nodeRows = await runs.nodesOfRuns(
    store.db,
    rows.map((r) => r.id),
  );
  const byRun = new Map<string, NodeState[]>();
  for (const n of nodeRows) {
    const list = byRun.get(n.workflow_run_id) ?? [];
    list.push(toNodeState(n));
    byRun.set(n.workflow_run_id, list);
  }
  // FOREACH items only for runs with one under way: most runs have none, and pay no read for them.
  const withItems = [...byRun].filter(([, list]) =>
    list.some((n) => n.type === 'FOREACH' && n.status === 'running'),
  );
  const items =
    withItems.length > 0
      ? await itemStore.itemsOfRuns(
          store.db,
          withItems.map(([id]) => id),
        )
      : undefined;
  const machines: RunMachine[] = [];
  for (const row of rows) {
    const run = {
      id: row.id,
      status: row.status,
      error: row.error,
      started_at: row.started_at,
      completed_at: row.completed_at,
    };
    try {
      const plan = await planOf(row.event_subscription_id, row.graph_version);
      const states = new Map((byRun.get(row.id) ?? []).map((s) => [s.key, s]));
      const machine = new RunMachine(
        plan,
        JSON.parse(row.trigger_event) as CloudEvent,
        run,
        states,
        false,
        items?.get(row.id),
      );
      if (row.awaited_by_parent === 1) machine.parentRunId = row.parent_run_id;
      machines.push(machine);
    } catch (err) {
      const at = iso(clock.now());
      const error = `graph version ${row.graph_version} could not be loaded: ${describeThrown(err)}`;
      const failed = { ...run, status: 'failed' as const, error, completed_at: at };
      // Never a running node under a finished run: a node in flight or waiting (a DELAY, a retry)
      // fails with the run's reason, in the run's own write (running -> failed is its only way to
      // end without executing). Pending nodes stay pending, as after any run failure: they were
      // never reached, and the skip rule (all incoming conditions false) does not apply to them.
      const closed = (byRun.get(row.id) ?? [])
        .filter((s) => s.status === 'running')
        .map(
          (s): NodeState => ({
            ...s,
            status: 'failed',
            error: `run failed: ${error}`,
            completed_at: at,
            resume_at: null,
            wait_kind: null,
            wait_key: null,
          }),
        );
      const facts = deps.tracing.factsOf(row);
      const ended = runEndedEvent(failed, facts);
      const written = await writeRun({
        run: failed,
        lease: { wake_at: null, locked_by: null },
        nodes: closed,
        at,
        ended,
        ...(row.awaited_by_parent === 1 && row.parent_run_id !== null
          ? { wakeParent: row.parent_run_id }
          : {}),
      });
      if (written) {
        deps.tracing.nodesEnded(failed, facts, closed);
        deps.tracing.runEnded(failed, facts);
      }
      log.error({ run_id: row.id, err }, 'workflow engine: run failed, its graph could not be loaded');
    }
  }
  return machines;
}
