import { forgetRun } from '../../db/call-limits.js';
import type { Db, Store, Tx } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Tracer } from '../../lib/tracing.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventPublisher } from '../events/publish.js';
import { wakeRuns } from './claim-store.js';
import * as control from './control-store.js';
import * as flows from './flow-store.js';
import type { GraphSource } from './graph-source.js';
import { CompiledCache } from './jsonlogic.js';
import type { Plan } from './plan.js';
import { newRun } from './router.js';
import { routingOf } from './routing.js';
import { runEndedEvent } from './run-events.js';
import type { RunState } from './run-state.js';
import { createRunTracing, type RunTracing } from './run-tracing.js';
import * as runs from './store.js';
import { toRun, type WorkflowRun } from './store.js';
import type { WorkflowRunTable } from './tables.js';

export interface RunControlDeps {
  store: Store;
  clock: Clock;
  subscriptions: Pick<GraphSource, 'getActive'>;
  /** The engine's plan cache (one compiled plan per graph version). */
  planOf: (subscriptionId: string, version: number) => Promise<Plan>;
  /** Wakes the workflows job (a run re-run, replayed or reopened is due now). */
  wake(): void;
  /** Publishes svc.workflow_run.cancelled with the cancel. */
  publisher?: Pick<EventPublisher, 'publish'>;
  /** The span of a run cancelled here, and the trace runs answer (docs/observability.md). */
  tracer?: Tracer;
  /** SVC_TRACE_URL_TEMPLATE */
  traceUrlTemplate?: string;
  /** The events area's past events of a type in a time range (replay), oldest first. */
  pastEvents?(
    eventType: string,
    from: string,
    to: string,
    limit: number,
  ): Promise<Array<{ event: CloudEvent; at: string }>>;
}

/** POST /event_subscription/{id}/replay: what happened to the range's events. */
export interface Replay {
  /** New runs, one per replayed event. */
  run_ids: string[];
  /** Events of the range the subscription's filters or condition turn away (as the router would). */
  skipped: number;
  /** Where the next request continues when the limit cut the range short; null when it was all. */
  next_from: string | null;
}

/** Run control (docs/workflows.md "Run control"): users stop, repeat, resume and replay runs. */
export interface RunControlService {
  /** Stops a pending or running run for good (docs/workflows.md "Run control"); 409 once it ended. */
  cancel(userId: string, id: string): Promise<WorkflowRun>;
  /** A new run of the run's subscription on the same trigger event and the current graph. */
  rerun(userId: string, id: string): Promise<WorkflowRun>;
  /** Resumes a failed run from its failed nodes, keeping what completed; 409 unless it failed. */
  retry(userId: string, id: string): Promise<WorkflowRun>;
  /** Cancels the pending and running runs among these ids, or of a subscription (at most 1000). */
  cancelMany(
    userId: string,
    where: { run_ids?: string[]; event_subscription_id?: string },
  ): Promise<{ cancelled: string[]; has_more: boolean }>;
  /** New runs of a subscription for the events of its type published in [from, to] (at most `limit`). */
  replay(
    userId: string,
    subscriptionId: string,
    range: { from: string; to: string; limit?: number },
  ): Promise<Replay>;
}

export const runNotFound = () => new AppError('WORKFLOW.RUN_NOT_FOUND', 'Workflow run not found');

/** A run, or 404 WORKFLOW.RUN_NOT_FOUND (the runs API and run control). */
export async function requireRun(db: Db, id: string): Promise<WorkflowRunTable> {
  const row = await runs.getRun(db, id);
  if (!row) throw runNotFound();
  return row;
}

/**
 * Cancels `row` inside `tx` with its end event (docs/workflows.md "Run control"), with the child runs
 * in flight it waits for (docs/workflows.md "CALL"); an awaited child's cancel wakes its parent.
 * False when the run was no longer pending or running.
 */
export async function cancelInTx(
  tx: Tx,
  deps: { publisher?: Pick<EventPublisher, 'publish'>; wake(): void; tracing: RunTracing },
  row: WorkflowRunTable,
  reason: string,
  at: string,
): Promise<boolean> {
  if (!(await control.cancelRun(tx.db, row.id, at, reason))) return false;
  await releaseFlow(tx, deps.wake, row.id, at);
  // Places its attempts held in a plugin instance's lines go (docs/plugins.md "Limits").
  await forgetRun(tx.db, row.id);
  const state: RunState = {
    id: row.id,
    status: 'cancelled',
    error: reason,
    started_at: row.started_at,
    completed_at: at,
  };
  const facts = deps.tracing.factsOf(row);
  const ended = runEndedEvent(state, facts);
  if (ended) await deps.publisher?.publish(tx, ended);
  if (deps.tracing.enabled) tx.afterCommit(() => deps.tracing.runEnded(state, facts));
  if (row.parent_run_id !== null && row.awaited_by_parent === 1) {
    await wakeRuns(tx.db, [row.parent_run_id], at);
    tx.afterCommit(deps.wake);
  }
  for (const child of await control.awaitedChildren(tx.db, row.id))
    await cancelInTx(tx, deps, child, `cancelled: its parent run ${row.id} was cancelled`, at);
  return true;
}

/**
 * A cancelled run's room goes to the next waiting run (flow control): a run cancelled while
 * running under a concurrency key wakes that queue's head; one cancelled while waiting at a queue's
 * head wakes the next.
 */
async function releaseFlow(tx: Tx, wake: () => void, id: string, at: string): Promise<void> {
  const row = await runs.getRun(tx.db, id);
  if (!row) return;
  let woke = false;
  if (row.concurrency_key !== null)
    woke = await flows.releaseConcurrency(
      tx.db,
      [{ subscriptionId: row.event_subscription_id, key: row.concurrency_key }],
      at,
    );
  else if (row.pending_reason !== null && row.pending_reason !== 'debounce' && row.flow_key !== null)
    woke = await flows.wakeHead(tx.db, row.event_subscription_id, row.pending_reason, row.flow_key, at);
  if (woke) tx.afterCommit(wake);
}

/** Runs one bulk cancel takes at most. */
const MAX_BULK = 1000;

export function createRunControlService(deps: RunControlDeps): RunControlService {
  const expressions = new CompiledCache(100);
  const runOrThrow = (id: string) => requireRun(deps.store.db, id);

  const tracing = createRunTracing(deps.tracer, deps.traceUrlTemplate);
  const cancelDeps = { publisher: deps.publisher, wake: deps.wake, tracing };
  /** A run as GET /workflow_run/{id} answers it. */
  const answer = (row: WorkflowRunTable): WorkflowRun => tracing.answered(toRun(row));
  const cancelIn = (tx: Tx, userId: string, row: WorkflowRunTable, at: string) =>
    cancelInTx(tx, cancelDeps, row, `cancelled by user ${userId}`, at);

  return {
    async cancel(userId, id) {
      const at = iso(deps.clock.now());
      await deps.store.transaction(async (tx) => {
        const row = await runs.getRun(tx.db, id);
        if (!row) throw runNotFound();
        if (!(await cancelIn(tx, userId, row, at))) {
          throw new AppError(
            'WORKFLOW.RUN_FINISHED',
            `The run is ${row.status}; only a pending or running run can be cancelled`,
            { status: row.status },
          );
        }
      });
      return answer(await runOrThrow(id));
    },

    async cancelMany(userId, where) {
      if ((where.run_ids === undefined) === (where.event_subscription_id === undefined)) {
        throw new AppError('VALIDATION_ERROR', 'Name the runs: either run_ids or event_subscription_id', {
          field: 'run_ids',
        });
      }
      const at = iso(deps.clock.now());
      const open = await control.openRuns(
        deps.store.db,
        { ids: where.run_ids, subscriptionId: where.event_subscription_id },
        MAX_BULK + 1,
      );
      const cancelled: string[] = [];
      // One transaction per run: each cancel commits with its event, and a long list holds no lock long.
      for (const row of open.slice(0, MAX_BULK)) {
        const done = await deps.store.transaction((tx) => cancelIn(tx, userId, row, at));
        if (done) cancelled.push(row.id);
      }
      return { cancelled, has_more: open.length > MAX_BULK };
    },

    async rerun(_userId, id) {
      const original = await runOrThrow(id);
      const sub = await deps.subscriptions.getActive(original.event_subscription_id);
      const plan = await deps.planOf(sub.id, sub.graph_version);
      const event = JSON.parse(original.trigger_event) as CloudEvent;
      const { row, nodes } = newRun(plan, event, iso(deps.clock.now()), original.id);
      await deps.store.transaction((tx) => runs.insertRuns(tx.db, [{ run: row, nodes }]));
      deps.wake();
      return answer(row);
    },

    async replay(_userId, subscriptionId, range) {
      if (range.from > range.to) {
        throw new AppError('VALIDATION_ERROR', 'from must not be after to', { field: 'from' });
      }
      const sub = await deps.subscriptions.getActive(subscriptionId);
      const limit = range.limit ?? 100;
      const found = (await deps.pastEvents?.(sub.event_type, range.from, range.to, limit + 1)) ?? [];
      const batch = found.slice(0, limit);
      // The router's rules, whether or not the subscription is enabled now: replay is explicit.
      const taken = batch.filter(
        ({ event }) => routingOf(expressions, { ...sub, enabled: true }, event).matched,
      );
      const plan = await deps.planOf(sub.id, sub.graph_version);
      const at = iso(deps.clock.now());
      const existing = await control.runsOfEvents(
        deps.store.db,
        sub.id,
        taken.map((x) => x.event.id),
      );
      // An event that has its run already gets a re-run of it; one the subscription never saw, its first run.
      const made = taken.map(({ event }) => newRun(plan, event, at, existing.get(event.id) ?? null));
      const created = await deps.store.transaction((tx) =>
        runs.insertRuns(
          tx.db,
          made.map(({ row, nodes }) => ({ run: row, nodes })),
        ),
      );
      if (made.length > 0) deps.wake();
      return {
        run_ids: made.filter((_, i) => created[i]).map((m) => m.row.id),
        skipped: batch.length - taken.length,
        next_from: found.length > limit ? found[limit].at : null,
      };
    },

    async retry(_userId, id) {
      const at = iso(deps.clock.now());
      await deps.store.transaction(async (tx) => {
        const row = await runs.getRun(tx.db, id);
        if (!row) throw runNotFound();
        if (!(await control.reopenFailed(tx.db, id, at))) {
          throw new AppError(
            'WORKFLOW.RUN_NOT_FAILED',
            `The run is ${row.status}; only a failed run can be retried`,
            {
              status: row.status,
            },
          );
        }
      });
      deps.wake();
      return answer(await runOrThrow(id));
    },
  };
}
