/**
 * The durable workflow engine (docs/workflows.md "Durability"):
 *
 * - The router (router.ts, an EventHandler the outbox drain calls) makes, per matching subscription,
 *   one run and one run-node per node of the subscription's current graph version, and hands it to
 *   this engine, which drives it at once: its first write (the run and all its nodes, under this
 *   engine's lease) comes at its first persist point, with the side-effect-free steps before it, and
 *   the event's hand-over ends only after that write. A unique index on (subscription, event id) makes
 *   the write a no-op for a second hand-over. With no room here, the run is created due, unclaimed.
 *   A subscription with flow control decides in the flow gate (flow-gate.ts) instead: runs it starts
 *   are written held here and driven; waiting runs are claimed like due ones and asked again.
 * - The `workflows` job claims due runs (a lease: `locked_by` + `wake_at`), drives each with the pure
 *   RunMachine, and persists every step before the next one. Side-effect-free steps (COMPUTE, SWITCH,
 *   JOIN, END, skips) are deterministic, so consecutive ones are persisted together; an ACTION
 *   attempt is persisted as in flight (with its input) before the plugin is called.
 * - A DELAY or a retry backoff releases the run with `wake_at` = when it is due: a persisted timer
 *   that any worker picks up; no process sleeps through it.
 * - A worker that stops mid-run leaves its lease to expire; the next claim resumes the run from its
 *   last persisted node. An ACTION attempt found in flight is re-run only if the action is idempotent.
 */
import type { Logger } from 'pino';
import { forgetRun } from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Tracer } from '../../lib/tracing.js';
import { ClaimGate } from '../../worker/claim-gate.js';
import { DueTimer } from '../../worker/due-timer.js';
import { createLease } from '../../worker/lease.js';
import { Slots } from '../../worker/slots.js';
import type { Wakeups } from '../../worker/wakeups.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import type { EventHandler } from '../events/handlers.js';
import type { EventPublisher } from '../events/publish.js';
import { type ActionInvoker, createActionCaller } from './action-call.js';
import { createChildRuns } from './children.js';
import * as claimStore from './claim-store.js';
import { createDrive } from './drive.js';
import { createEventWaits, type EventWaitsDeps } from './event-waits.js';
import { createFlowGate, engineFlowControl } from './flow-gate.js';
import type { GraphSource } from './graph-source.js';
import type { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import { buildPlan, type Plan, PlanCache } from './plan.js';
import { createRateGuard } from './rate-guard.js';
import { resumeRuns } from './resume.js';
import { createRouter } from './router.js';
import { runEventPolicy } from './run-events.js';
import { createRunPersister } from './run-persister.js';
import { createRunTracing, type RunTracing } from './run-tracing.js';
import { createRunWriter } from './run-writer.js';
import type { WorkflowRunTable } from './tables.js';

export interface EngineDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  subscriptions: GraphSource;
  actions: ActionInvoker;
  metrics: WorkflowMetrics;
  /** Wakes the `workflows` job of this process for runs due in the store. */
  wakeups: Pick<Wakeups, 'wake' | 'takeWoken'>;
  /** How long a claim is exclusive; renewed every third of it while an ACTION runs. */
  leaseMs: number;
  /** How often the job looks for due runs written by other processes. */
  pollIntervalMs?: number;
  /** Runs claimed from the store driven at once (64); new runs handed over get four times as many. */
  batchSize?: number;
  /** ACTIONs of one run in flight at once (SVC_WORKFLOW_RUN_PARALLELISM). */
  runParallelism?: number;
  /** ACTIONs in flight in this worker, all runs together (SVC_WORKFLOW_WORKER_PARALLELISM). */
  workerParallelism?: number;
  /** SVC_WORKFLOW_MAX_DEPTH: the loop guard (router.ts). */
  maxDepth?: number;
  /** SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: the rate guard's default limit (rate-guard.ts); 0 = none. */
  maxRunsPerMinute?: number;
  /** Publishes svc.workflow_run.* when runs end (run-events.ts); none without it. */
  publisher?: Pick<EventPublisher, 'publish'>;
  /** Whether an enabled subscription or webhook names an event type (svc.workflow_run.completed). */
  runEventWanted?: (type: string) => Promise<boolean>;
  /** The data check of a CALL's child trigger event against its type's data schema (events area). */
  checkEventData?: (eventType: string, data: unknown) => Promise<void>;
  workerId?: string;
  /** Spans of runs and their nodes (docs/observability.md); none without it. */
  tracer?: Tracer;
}

export const WORKFLOWS_JOB = 'workflows';

export interface WorkflowEngine {
  /** docs/workflows.md "Routing": the outbox drain's handler that turns events into runs. */
  router: EventHandler;
  /** docs/workflows.md "WAIT_EVENT": the outbox drain's handler that resumes runs waiting for an event. */
  waits: EventHandler;
  /** The worker job `workflows`: claims runs and drives them. */
  job: Job;
  /** The executable plan of a subscription's graph version (cached; versions never change). */
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  /** Written in `locked_by` of the runs this engine holds. */
  workerId: string;
  /** A plugin instance's concurrency slots freed for these attempts (docs/plugins.md "Limits"). */
  slotFreed(holders: readonly string[]): Promise<void>;
}

/** The waits of runs on what happens outside them: events (WAIT_EVENT) and child runs (CALL). */
function createOutsideWaits(
  deps: EngineDeps,
  planOf: (subscriptionId: string, version: number) => Promise<Plan>,
  notify: () => void,
  engine: EventWaitsDeps['engine'],
  tracing: RunTracing,
) {
  const { store, clock, log } = deps;
  return {
    eventWaits: createEventWaits({ store, clock, log, woken: notify, engine }),
    children: createChildRuns({
      store,
      clock,
      log,
      subscriptions: deps.subscriptions,
      planOf,
      checkData: deps.checkEventData ?? (async () => {}),
      maxDepth: deps.maxDepth ?? 8,
      publisher: deps.publisher,
      woken: notify,
      tracing,
    }),
  };
}

export function createWorkflowEngine(deps: EngineDeps): WorkflowEngine {
  const { store, clock, log } = deps;
  const workerId = deps.workerId ?? newWorkerId();
  const { createRun, writeRun } = createRunWriter(store, workerId, deps.publisher, () => notify());
  const publishesEnd = runEventPolicy(deps.runEventWanted ?? (async () => false));
  const tracing = createRunTracing(deps.tracer);
  const writes = createRunPersister({ clock, metrics: deps.metrics, writeRun, publishesEnd, tracing });
  const plans = new PlanCache();
  const batchSize = deps.batchSize ?? 64;
  let stopping = false;
  /** Ends the current step's wait (new work arrived). */
  let wakeStep: (() => void) | undefined;
  /** Runs of this process inside an ACTION call: only those make waiting for the in-flight ones slow. */
  let invoking = 0;
  /**
   * Runs due in the store (a timer come due, runs created while this engine had no room): end the
   * step's wait when worth it, and wake the job, whose next step asks the store for them.
   */
  const notify = () => {
    // While every run in flight is a quick step, due runs are claimed right after them, together.
    if (invoking > 0) wakeStep?.();
    deps.wakeups.wake(WORKFLOWS_JOB);
  };

  const lease = createLease(clock, deps.leaseMs);
  /** The lease fields of a run this worker holds. */
  const held = () => ({ wake_at: lease.until(), locked_by: workerId });
  const runParallelism = deps.runParallelism ?? 8;
  const actionSlots = new Slots(deps.workerParallelism ?? 128);
  /** Wakes the job when a released run (DELAY, retry backoff) comes due. */
  const dueTimer = new DueTimer(clock, notify);

  const outside = createOutsideWaits(
    deps,
    (id, v) => planOf(id, v),
    notify,
    {
      workerId,
      leaseUntil: () => lease.until(),
      room: () => (stopping ? 0 : handedCapacity - handedInFlight),
      drive: (rows) => {
        // In flight from the hold on: the job's step (and a graceful stop) waits for the load too.
        const loading: Promise<void> = hydrate(rows)
          .then(
            (machines) => {
              for (const m of machines) launch(m, 'handed');
            },
            (err) =>
              log.error({ err }, 'workflow engine: resumed runs not loaded; they resume after their lease'),
          )
          .finally(() => {
            inFlight.delete(loading);
            runEnded();
          });
        inFlight.add(loading);
      },
    },
    tracing,
  );
  const { eventWaits } = outside;

  function planOf(subscriptionId: string, version: number): Promise<Plan> {
    return plans.get(subscriptionId, version, async () => {
      const graph = await deps.subscriptions.graphVersion(subscriptionId, version);
      const plan = buildPlan(subscriptionId, version, graph.nodes, graph.edges);
      await eventWaits.register(plan); // before any of its runs can wait for an event
      return plan;
    });
  }

  const flow = engineFlowControl(
    createFlowGate({
      store,
      clock,
      log,
      workerId,
      leaseUntil: () => lease.until(),
      planOf,
      subscriptions: deps.subscriptions,
      tracing,
    }),
    { launch: (m) => launch(m, 'handed'), notify, dueTimer, metrics: deps.metrics },
  );

  const router = createRouter({
    clock,
    log,
    subscriptions: deps.subscriptions,
    metrics: deps.metrics,
    planOf,
    createRun,
    maxDepth: deps.maxDepth ?? 8,
    rateGuard: createRateGuard({ ...deps, defaultLimit: deps.maxRunsPerMinute ?? 0 }),
    startNow,
    createdDue: notify,
    routeFlow: flow.route,
    tracing,
  });

  const heartbeat = (runId: string) =>
    lease.heartbeat(
      (until) => store.write((db) => claimStore.renewLease(db, runId, workerId, until, iso(clock.now()))),
      (err) => log.warn({ run_id: runId, err }, 'workflow engine: lease renewal failed'),
    );
  const invoke = createActionCaller({
    clock,
    actions: deps.actions,
    persistAttempt: (machine) => writes.persist(machine, held()),
    calling: (active) => (invoking += active ? 1 : -1),
    tracing,
  });

  const driver = createDrive({
    clock,
    log,
    metrics: deps.metrics,
    writes,
    invoke,
    slots: actionSlots,
    heartbeat,
    dueTimer,
    outside,
    held,
    notify,
    runParallelism,
    forgetLimitWaits: (runId) => store.write((db) => forgetRun(db, runId)),
    tracing,
  });
  const drive = driver.drive;

  const hydrate = (rows: WorkflowRunTable[]) =>
    resumeRuns(rows, { store, clock, log, planOf, writeRun: (w) => writeRun(w), tracing });

  /** Runs being driven by this process. */
  const inFlight = new Set<Promise<void>>();
  // Two budgets, so neither kind crowds out the other: runs claimed from the store (due runs:
  // resumes, timers, other processes' leftovers) up to `capacity`, and new runs the router hands
  // over in memory up to `handedCapacity`. With one budget, a burst of claims left no room for
  // new runs, which were then written pending and claimed back (three writes more per run), and
  // those claims filled the room again: under load most runs took that path.
  const capacity = batchSize;
  const handedCapacity = batchSize * 4;
  let claimedInFlight = 0;
  let handedInFlight = 0;
  const pollMs = deps.pollIntervalMs ?? 1000;
  const claims = new ClaimGate(deps.wakeups, WORKFLOWS_JOB, pollMs);
  let progress: (() => void) | undefined;
  /** A run ended: the job's step waiting for room goes on. */
  const runEnded = () => progress?.();

  /**
   * A run the router just made, driven at once when this engine has room: it is written first at its
   * first persist point (an ACTION's in-flight attempt, a wait, its end), with the side-effect-free
   * steps before it, instead of once pending and again at that point. Answers whether that first
   * write created it; null when there is no room (the router then creates it pending and due).
   */
  function startNow(machine: RunMachine, row: WorkflowRunTable): Promise<boolean> | null {
    if (stopping || handedInFlight >= handedCapacity) return null;
    const written = writes.first(machine, row);
    launch(machine, 'handed');
    return written;
  }

  function launch(machine: RunMachine, from: 'claimed' | 'handed'): void {
    if (from === 'claimed') claimedInFlight++;
    else handedInFlight++;
    const p: Promise<void> = drive(machine).finally(() => {
      if (from === 'claimed') claimedInFlight--;
      else handedInFlight--;
      inFlight.delete(p);
      runEnded();
    });
    inFlight.add(p);
  }

  /**
   * One step of the `workflows` job: claim due runs up to the free capacity, start driving them, then
   * wait for progress: every run in flight finished, new work (a timer, runs created due), or the poll
   * interval. Runs are not awaited one batch at a time, so a slow ACTION never holds up other runs;
   * `stop` waits for the ones in flight. New runs of this process's router are not claimed here: they
   * are driven at once (`startNow`).
   */
  async function step(): Promise<boolean> {
    const room = capacity - claimedInFlight;
    let more = false;
    if (room > 0) {
      const nowMs = clock.now().getTime();
      const now = iso(new Date(nowMs));
      const leaseUntil = lease.until();
      // Due runs of the store: a resume, a timer, runs created while there was no room, runs other
      // processes left behind.
      if (claims.shouldAsk(nowMs, dueTimer.isDue(nowMs))) {
        const due = await store.write((db) => claimStore.claimDue(db, workerId, now, leaseUntil, room));
        claims.claimed(due.length, room);
        more = claims.more;
        for (const m of await hydrate(await flow.ready(due))) launch(m, 'claimed');
      }
    }
    if (inFlight.size === 0) return more;
    const atCapacity = claimedInFlight >= capacity;
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
    stopping = true;
    await Promise.allSettled([...inFlight]);
    dueTimer.clear();
  }

  const job: Job = { name: WORKFLOWS_JOB, intervalMs: pollMs, run: step, stop };

  /**
   * Concurrency slots of a plugin instance freed for these attempts (docs/plugins.md "Limits"):
   * those of runs driven here ask again at once, the others through the store.
   */
  function slotFreed(holders: readonly string[]): Promise<void> {
    const elsewhere: string[] = [];
    const releasing: Promise<void>[] = [];
    for (const holder of holders) {
      // `<run>:<node>` or `<run>:<node>:<item>` (action-call.ts): node keys hold no colon.
      const [runId, nodeKey, index] = holder.split(':') as [string, string, string | undefined];
      if (driver.limitFreed(runId, nodeKey, index === undefined ? undefined : Number(index))) continue;
      elsewhere.push(holder);
      releasing.push(driver.released(runId));
    }
    if (elsewhere.length === 0) return Promise.resolve();
    // In flight like a run: the job's step and a graceful stop wait for the wake to be written. A
    // run this process is releasing is written first, so the wake finds it released.
    const waking: Promise<void> = Promise.all(releasing)
      .then(() => store.write((db) => claimStore.wakeLimitWaiters(db, elsewhere, iso(clock.now()))))
      .then(notify)
      .finally(() => {
        inFlight.delete(waking);
        runEnded();
      });
    inFlight.add(waking);
    return waking;
  }

  return { router, waits: eventWaits.handler, job, planOf, workerId, slotFreed };
}
