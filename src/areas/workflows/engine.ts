// Long file: the engine's drive loop, its two run budgets and its claims share one state; the
// flow gate, the persister and the writer are apart.
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
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
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
import { type ChildRuns, createChildRuns } from './children.js';
import * as claimStore from './claim-store.js';
import { createEventWaits } from './event-waits.js';
import { createFlowGate, engineFlowControl } from './flow-gate.js';
import type { GraphSource } from './graph-source.js';
import type { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import { buildPlan, type Plan, PlanCache } from './plan.js';
import { createRateGuard } from './rate-guard.js';
import { reportRunFinished } from './reporting.js';
import { resumeRuns } from './resume.js';
import { createRouter } from './router.js';
import { runEventPolicy } from './run-events.js';
import { createRunPersister, Dropped, LeaseLost } from './run-persister.js';
import { type Invoke, invokeKey } from './run-state.js';
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
}

/** A run with no ACTION in flight (most steps): one set, not one per step. */
const NOTHING_IN_FLIGHT: ReadonlySet<string> = new Set();

/** Why a run's drive stopped before its end, logged where it matters. */
function reportStopped(
  log: Logger,
  writes: ReturnType<typeof createRunPersister>,
  machine: RunMachine,
  err: unknown,
): void {
  if (writes.abandon(machine, err)) {
    // Nothing of the run is stored: its event's hand-over fails, and the event comes again.
  } else if (err instanceof Dropped || writes.dropped(machine)) {
    // Its first write did not create it (another hand-over did, or the write failed and the
    // event comes again); nothing of this copy reached anyone.
  } else if (err instanceof LeaseLost)
    log.warn({ run_id: machine.run.id }, 'workflow engine: lease lost; another worker has the run');
  // Anything else (the store failing): the lease expires and a worker resumes the run from its
  // last persisted step.
  else
    log.error(
      { run_id: machine.run.id, err },
      'workflow engine: run step failed; it resumes after its lease',
    );
}

/** The waits of runs on what happens outside them: events (WAIT_EVENT) and child runs (CALL). */
function createOutsideWaits(
  deps: EngineDeps,
  planOf: (subscriptionId: string, version: number) => Promise<Plan>,
  notify: () => void,
) {
  const { store, clock, log } = deps;
  return {
    eventWaits: createEventWaits({ store, clock, log, woken: notify }),
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
    }),
  };
}

/**
 * Starts the child runs (CALL, FOREACH with call) among the step's attempts: made, then written with
 * the attempts that start them. False when there were none.
 */
async function spawnChildren(
  machine: RunMachine,
  invokes: readonly Invoke[],
  children: ChildRuns,
  persist: () => Promise<void>,
): Promise<boolean> {
  const spawning = invokes.filter((inv) => inv.node.call !== undefined);
  if (spawning.length === 0) return false;
  await Promise.all(spawning.map((inv) => children.start(machine, inv)));
  await persist();
  return true;
}

/**
 * Releases a run that only waits: until its timer, or (waiting only for child runs) until a child's
 * end wakes it. An event may have taken a wait, or a child ended, while this worker held the run:
 * then it is due now.
 */
async function release(
  machine: RunMachine,
  wakeAt: string | null,
  ctx: {
    writes: ReturnType<typeof createRunPersister>;
    dueTimer: DueTimer;
  } & ReturnType<typeof createOutsideWaits>,
): Promise<void> {
  const awaited = machine.awaitedChildren().length > 0;
  if (wakeAt === null && !awaited) throw new Error('the run has nothing to run and nothing to wait for');
  await ctx.writes.persist(machine, { wake_at: wakeAt, locked_by: null });
  if (wakeAt !== null) ctx.dueTimer.arm(Date.parse(wakeAt));
  await ctx.eventWaits.afterRelease(machine.run.id, machine.waitingForEvents());
  if (awaited) await ctx.children.afterRelease(machine);
}

export function createWorkflowEngine(deps: EngineDeps): WorkflowEngine {
  const { store, clock, log } = deps;
  const workerId = deps.workerId ?? newWorkerId();
  const { createRun, writeRun } = createRunWriter(store, workerId, deps.publisher, () => notify());
  const publishesEnd = runEventPolicy(deps.runEventWanted ?? (async () => false));
  const writes = createRunPersister({ clock, metrics: deps.metrics, writeRun, publishesEnd });
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

  const outside = createOutsideWaits(deps, (id, v) => planOf(id, v), notify);
  const { eventWaits, children } = outside;

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
  });

  /**
   * Drives one run until it ends or only timers are left: every ready ACTION starts at once (up to
   * `runParallelism` per run and `workerParallelism` in this worker), side-effect-free nodes run as
   * soon as they are ready, and the run is written before each wait. The run's lease is renewed
   * throughout. When the run ends, calls still in flight are abandoned (their nodes are stopped).
   */
  async function drive(machine: RunMachine): Promise<void> {
    const calls = new Map<string, Promise<void>>();
    // Made when the first call starts: most runs of side-effect-free nodes never need them, and an
    // AbortController (its abort builds a DOMException) or a heartbeat timer per run costs throughput.
    let ended: AbortController | undefined;
    let stopBeat: (() => void) | undefined;
    let signalled = false;
    let wakeDrive: (() => void) | undefined;
    /** A slot handed to this run after it waited for one: its next call's, or given back at the end. */
    let reserved = false;
    /** Calls in flight of ACTION nodes (runParallelism bounds these; a FOREACH bounds its items). */
    let nodeCalls = 0;
    /** An attempt of this run answered: its drive loop steps again. */
    const wakeRun = () => {
      signalled = true;
      wakeDrive?.();
    };
    try {
      for (;;) {
        // A new run whose first write did not create it stops here (its failed attempt included).
        if (writes.dropped(machine)) throw new Dropped();
        const step = machine.advance(
          clock.now(),
          calls.size === 0 ? NOTHING_IN_FLIGHT : new Set(calls.keys()),
        );
        if (machine.run.status !== 'running') {
          // Only calls still in flight need stopping (an abort builds a DOMException, stack and all).
          if (calls.size > 0) ended?.abort();
          await writes.persist(machine, { wake_at: null, locked_by: null });
          reportRunFinished(machine, log, deps.metrics);
          await children.cancelOrphans(machine);
          return;
        }
        if (step.timeouts.length > 0) {
          await eventWaits.settleTimeouts(machine, step.timeouts);
          continue;
        }
        if (step.children.length > 0) {
          await children.read(machine, step.children);
          continue;
        }
        if (await spawnChildren(machine, step.invokes, children, () => writes.persist(machine, held()))) {
          notify();
          continue;
        }
        let started = false;
        for (const inv of step.invokes) {
          const item = inv.item !== undefined;
          if (!item && nodeCalls >= runParallelism) continue;
          if (reserved) reserved = false;
          else if (!actionSlots.take()) break;
          started = true;
          ended ??= new AbortController();
          stopBeat ??= heartbeat(machine.run.id);
          const key = invokeKey(inv);
          if (!item) nodeCalls++;
          const call = invoke(machine, inv, ended.signal)
            .catch((err) => {
              // The store failed while recording the attempt: the run resumes after its lease.
              log.error(
                { run_id: machine.run.id, node: inv.node.key, err },
                'workflow engine: ACTION attempt failed to start',
              );
            })
            .finally(() => {
              calls.delete(key);
              if (!item) nodeCalls--;
              actionSlots.give();
              wakeRun();
            });
          calls.set(key, call);
        }
        if (calls.size === 0) {
          if (step.invokes.length > 0) {
            // Every ACTION slot of this worker is taken: wait for one, in turn. A new run is written
            // first: its event's hand-over waits for that write, not for a slot.
            if (writes.unwritten(machine)) await writes.persist(machine, held());
            await actionSlots.acquire();
            reserved = true;
            continue;
          }
          await release(machine, step.wakeAt, { writes, dueTimer, ...outside });
          return;
        }
        // Side-effect-free progress is written before waiting; each attempt writes its own start, and
        // with it everything the run did before (a write takes all changes up to its turn), so a step
        // that started a call leaves the writing to it: one write fewer per ACTION.
        if (!started && machine.hasChanges()) await writes.persist(machine, held());
        if (!signalled) {
          await new Promise<void>((resolve) => {
            const wait = step.wakeAt === null ? null : Date.parse(step.wakeAt) - clock.now().getTime();
            const timer = wait === null ? undefined : setTimeout(() => wakeDrive?.(), Math.max(0, wait));
            wakeDrive = () => {
              clearTimeout(timer);
              wakeDrive = undefined;
              resolve();
            };
          });
        }
        signalled = false;
      }
    } catch (err) {
      reportStopped(log, writes, machine, err);
      ended?.abort();
    } finally {
      writes.abandon(machine, new Error('the run stopped before its first write'));
      if (reserved) actionSlots.give();
      stopBeat?.();
      // Calls abandoned above settle on their own; the slots they hold are given back then.
      if (calls.size > 0) await Promise.allSettled([...calls.values()]);
    }
  }

  const hydrate = (rows: WorkflowRunTable[]) =>
    resumeRuns(rows, { store, clock, log, planOf, writeRun: (w) => writeRun(w) });

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

  return { router, waits: eventWaits.handler, job, planOf, workerId };
}
