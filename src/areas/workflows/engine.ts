/**
 * The durable workflow engine (docs/workflows.md "Durability"):
 *
 * - The router (router.ts, an EventHandler the outbox drain calls) creates, per matching
 *   subscription, one run and one pending run-node per node of the subscription's current graph
 *   version, in one write that a unique index on (subscription, event id) makes idempotent.
 * - The `workflows` job claims runs (a lease: `locked_by` + `wake_at`), drives each with the pure
 *   RunMachine, and persists every step before the next one. Side-effect-free steps (COMPUTE, SWITCH,
 *   JOIN, END, skips) are deterministic, so consecutive ones are persisted together; an ACTION
 *   attempt is persisted as in flight (with its input) before the plugin is called.
 * - A DELAY or a retry backoff releases the run with `wake_at` = when it is due: a persisted timer
 *   that any worker picks up; no process sleeps through it.
 * - A worker that stops mid-run leaves its lease to expire; the next claim resumes the run from its
 *   last persisted node. An ACTION attempt found in flight is re-run only if the action is idempotent.
 */
import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import { DueTimer } from '../../worker/due-timer.js';
import { createLease } from '../../worker/lease.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import { WriteBatcher } from '../../worker/write-batcher.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventHandler } from '../events/handlers.js';
import { type ActionInvoker, createActionCaller, type ReferenceResolver } from './action-call.js';
import type { GraphSource } from './graph-source.js';
import { describeThrown } from './jsonlogic.js';
import { type NodeState, RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import { buildPlan, type Plan, PlanCache } from './plan.js';
import { createRouter } from './router.js';
import * as runs from './store.js';
import { type RunWrite, toNodeState } from './store.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

export interface EngineDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  subscriptions: GraphSource;
  actions: ActionInvoker;
  vault: ReferenceResolver;
  metrics: WorkflowMetrics;
  /** Wakes the `workflows` job (in this process). */
  wake: () => void;
  /** How long a claim is exclusive; renewed every third of it while an ACTION runs. */
  leaseMs: number;
  /** How often the job looks for due runs written by other processes. */
  pollIntervalMs?: number;
  /** Runs driven per step. */
  batchSize?: number;
  workerId?: string;
}

export const WORKFLOWS_JOB = 'workflows';
const MAX_LOCAL_HINTS = 10_000;

class LeaseLost extends Error {}

export interface WorkflowEngine {
  /** SPEC Pipeline 3: the outbox drain's handler that turns events into runs. */
  router: EventHandler;
  /** The worker job `workflows`: claims runs and drives them. */
  job: Job;
  /** The executable plan of a subscription's graph version (cached; versions never change). */
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  /** Written in `locked_by` of the runs this engine holds. */
  workerId: string;
}

export function createWorkflowEngine(deps: EngineDeps): WorkflowEngine {
  const { store, clock, log } = deps;
  const batcher = new WriteBatcher(store);
  const createRun = batcher.register(
    'create-run',
    (tx, items: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }>) =>
      runs.insertRuns(tx.db, items),
  );
  const writeRun = batcher.register('write-run', (tx, items: RunWrite[]) =>
    runs.writeRuns(tx.db, workerId, items),
  );
  const plans = new PlanCache();
  const batchSize = deps.batchSize ?? 64;
  const workerId = deps.workerId ?? newWorkerId();
  /** Runs this process just created: claimed without a query for them when the job runs here. */
  const hints: RunMachine[] = [];
  /** Ends the current step's wait (new work arrived). */
  let wakeStep: (() => void) | undefined;
  /** Runs of this process inside an ACTION call: only those make waiting for the in-flight ones slow. */
  let invoking = 0;
  /** New work for this process: end the step's wait (when worth it) and wake the job's loop. */
  const notify = () => {
    // While every run in flight is a quick step, new runs are claimed right after them, together.
    if (invoking > 0) wakeStep?.();
    deps.wake();
  };

  const lease = createLease(clock, deps.leaseMs);
  /** Wakes the job when a released run (DELAY, retry backoff) comes due. */
  const dueTimer = new DueTimer(clock, notify);

  function planOf(subscriptionId: string, version: number): Promise<Plan> {
    return plans.get(subscriptionId, version, async () => {
      const graph = await deps.subscriptions.graphVersion(subscriptionId, version);
      return buildPlan(subscriptionId, version, graph.nodes, graph.edges);
    });
  }

  const router = createRouter({
    clock,
    log,
    subscriptions: deps.subscriptions,
    metrics: deps.metrics,
    planOf,
    createRun,
    started(machines) {
      if (hints.length + machines.length <= MAX_LOCAL_HINTS) hints.push(...machines);
      notify();
    },
  });

  async function persist(machine: RunMachine, lease: { wake_at: string | null; locked_by: string | null }) {
    const changes = machine.takeChanges();
    const at = iso(clock.now());
    const ok = await writeRun({ run: { ...machine.run }, lease, nodes: changes.nodes, at });
    if (!ok) throw new LeaseLost(`run ${machine.run.id} is no longer held by this worker`);
    // Counted once durable: a node's final status is written once.
    for (const n of changes.nodes) {
      if ((n.status === 'completed' || n.status === 'failed') && n.started_at && n.completed_at) {
        const seconds = (Date.parse(n.completed_at) - Date.parse(n.started_at)) / 1000;
        deps.metrics.nodeFinished(n.type, n.status, Math.max(0, seconds));
      }
    }
  }

  function heartbeat(runId: string): () => void {
    return lease.heartbeat(
      (until) => runs.renewLease(store.db, runId, workerId, until, iso(clock.now())),
      (err) => log.warn({ run_id: runId, err }, 'workflow engine: lease renewal failed'),
    );
  }

  const invoke = createActionCaller({
    clock,
    actions: deps.actions,
    vault: deps.vault,
    persistAttempt: (machine) => persist(machine, { wake_at: lease.until(), locked_by: workerId }),
    holdLease: heartbeat,
    calling(active) {
      if (active) {
        invoking++;
        if (hints.length > 0) wakeStep?.();
      } else invoking--;
    },
  });

  /** One info line per finished run: what operators grep for first. */
  function logFinished({ run, plan }: RunMachine): void {
    const durationMs =
      run.started_at && run.completed_at ? Date.parse(run.completed_at) - Date.parse(run.started_at) : null;
    const line = {
      run_id: run.id,
      subscription_id: plan.subscriptionId,
      status: run.status,
      duration_ms: durationMs,
    };
    deps.metrics.runFinished(plan.subscriptionId, run.status);
    if (run.status === 'failed') log.info({ ...line, error: run.error }, 'workflow run failed');
    else log.info(line, `workflow run ${run.status}`);
  }

  async function drive(machine: RunMachine): Promise<void> {
    try {
      for (;;) {
        const b = machine.advance(clock.now());
        if (b.kind === 'end') {
          await persist(machine, { wake_at: null, locked_by: null });
          logFinished(machine);
          return;
        }
        if (b.kind === 'wait') {
          await persist(machine, { wake_at: b.until, locked_by: null });
          dueTimer.arm(Date.parse(b.until));
          return;
        }
        await invoke(machine, b);
      }
    } catch (err) {
      if (err instanceof LeaseLost)
        log.warn({ run_id: machine.run.id }, 'workflow engine: lease lost; another worker has the run');
      // Anything else (the store failing): the lease expires and a worker resumes the run from its
      // last persisted step.
      else
        log.error(
          { run_id: machine.run.id, err },
          'workflow engine: run step failed; it resumes after its lease',
        );
    }
  }

  /** Rebuilds machines for claimed runs from their persisted state. */
  async function hydrate(rows: WorkflowRunTable[]): Promise<RunMachine[]> {
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
        machines.push(new RunMachine(plan, JSON.parse(row.trigger_event) as CloudEvent, run, states));
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
            }),
          );
        await writeRun({ run: failed, lease: { wake_at: null, locked_by: null }, nodes: closed, at });
        log.error({ run_id: row.id, err }, 'workflow engine: run failed, its graph could not be loaded');
      }
    }
    return machines;
  }

  /** Runs being driven by this process (at most `capacity`). */
  const inFlight = new Set<Promise<void>>();
  const capacity = batchSize;
  const pollMs = deps.pollIntervalMs ?? 1000;
  let progress: (() => void) | undefined;
  const poke = () => progress?.();

  function launch(machine: RunMachine): void {
    const p: Promise<void> = drive(machine).finally(() => {
      inFlight.delete(p);
      poke();
    });
    inFlight.add(p);
  }

  /**
   * One step of the `workflows` job: claim runs (those this process just created first, then due
   * ones) up to the free capacity, start driving them, then wait for progress: every run in flight
   * finished, new work (a run created here, a timer), or the poll interval. Runs are not awaited one
   * batch at a time, so a slow ACTION never holds up other runs; `stop` waits for the ones in flight.
   */
  async function step(): Promise<boolean> {
    const room = capacity - inFlight.size;
    let more = false;
    if (room > 0) {
      const now = iso(clock.now());
      const leaseUntil = lease.until();
      const local = hints.splice(0, room);
      const claimed = await runs.claimIds(
        store.db,
        local.map((m) => m.run.id),
        workerId,
        now,
        leaseUntil,
      );
      const machines = local.filter((m) => claimed.has(m.run.id));
      const free = room - machines.length;
      if (free > 0) {
        const due = await runs.claimDue(store.db, store.dialect, workerId, now, leaseUntil, free);
        more = due.length === free;
        machines.push(...(await hydrate(due)));
      }
      for (const m of machines) launch(m);
      more ||= hints.length > 0;
    }
    if (inFlight.size === 0) return more;
    const atCapacity = inFlight.size >= capacity;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(poll);
        progress = undefined;
        wakeStep = undefined;
        resolve();
      };
      const poll = setTimeout(done, pollMs);
      // At capacity any finished run frees room; otherwise wait for all of them (or new work).
      progress = () => {
        if (atCapacity || inFlight.size === 0) done();
      };
      wakeStep = done;
    });
    return true;
  }

  async function stop(): Promise<void> {
    // Graceful stop: the runs in flight finish their current step (an ACTION attempt included).
    await Promise.allSettled([...inFlight]);
    dueTimer.clear();
  }

  const job: Job = { name: WORKFLOWS_JOB, intervalMs: pollMs, run: step, stop };

  return { router, job, planOf, workerId };
}
