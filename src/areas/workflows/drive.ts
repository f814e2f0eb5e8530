import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import { logFields, NO_SPAN } from '../../lib/tracing.js';
import type { DueTimer } from '../../worker/due-timer.js';
import type { Slots } from '../../worker/slots.js';
import type { ChildRuns } from './children.js';
import type { EventWaits } from './event-waits.js';
import { awaitedChildren } from './machine/calls.js';
import { limitFreed as freeLimitWait } from './machine/limits.js';
import { waitingForEvents } from './machine/waits.js';
import type { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import { reportRunFinished } from './reporting.js';
import { Dropped, LeaseLost, type RunPersister } from './run-persister.js';
import { type Invoke, invokeKey } from './run-state.js';
import type { RunTracing } from './run-tracing.js';

/**
 * The engine's drive of one run (docs/workflows.md "Durability"): the machine's steps, the attempts
 * it starts, the writes before each wait, the release when only waits are left.
 */

/** What a run waits on outside itself: events (WAIT_EVENT) and child runs (CALL). */
export interface OutsideWaits {
  eventWaits: EventWaits;
  children: ChildRuns;
}

export interface DriveDeps {
  clock: Clock;
  log: Logger;
  metrics: WorkflowMetrics;
  writes: RunPersister;
  /** One ACTION attempt (action-call.ts). */
  invoke(machine: RunMachine, inv: Invoke, signal: AbortSignal): Promise<void>;
  /** The worker's ACTION slots (SVC_WORKFLOW_WORKER_PARALLELISM). */
  slots: Slots;
  /** Renews the run's lease until the returned function is called. */
  heartbeat(runId: string): () => void;
  dueTimer: DueTimer;
  outside: OutsideWaits;
  /** The lease fields of a run this worker holds. */
  held(): { wake_at: string; locked_by: string };
  /** Runs were made due (child runs started): the job claims them. */
  notify(): void;
  /** ACTION nodes of one run in flight at once (SVC_WORKFLOW_RUN_PARALLELISM). */
  runParallelism: number;
  /** The run ended with attempts that waited for a plugin instance's limit: their places go. */
  forgetLimitWaits(runId: string): Promise<void>;
  /** A segment span per drive (run-tracing.ts). */
  tracing: RunTracing;
}

/** A run with no ACTION in flight (most steps): one set, not one per step. */
const NOTHING_IN_FLIGHT: ReadonlySet<string> = new Set();

/** Why a run's drive stopped before its end, logged where it matters. */
function reportStopped(log: Logger, writes: RunPersister, machine: RunMachine, err: unknown): void {
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
  // Most steps start no child: no array made for them.
  if (!invokes.some((inv) => inv.node.call !== undefined)) return false;
  const spawning = invokes.filter((inv) => inv.node.call !== undefined);
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
  ctx: { writes: RunPersister; dueTimer: DueTimer } & OutsideWaits,
): Promise<void> {
  const awaited = awaitedChildren(machine).length > 0;
  if (wakeAt === null && !awaited) throw new Error('the run has nothing to run and nothing to wait for');
  await ctx.writes.persist(machine, { wake_at: wakeAt, locked_by: null });
  if (wakeAt !== null) ctx.dueTimer.arm(Date.parse(wakeAt));
  await ctx.eventWaits.afterRelease(machine.run.id, waitingForEvents(machine));
  if (awaited) await ctx.children.afterRelease(machine);
}

export function createDrive(deps: DriveDeps) {
  const { clock, log, writes, dueTimer, outside, held, notify, runParallelism } = deps;
  const { eventWaits, children } = outside;
  const actionSlots = deps.slots;
  const invoke = deps.invoke;
  const heartbeat = deps.heartbeat;
  /** Each run driven now, by id, and how to wake its drive loop (a limit an attempt waits for freed). */
  const driving = new Map<string, { machine: RunMachine; wake: () => void }>();
  /** The release of each run whose drive is letting it go, by id (a wake through the store waits for it). */
  const releases = new Map<string, Promise<void>>();
  /**
   * Drives one run until it ends or only timers are left: every ready ACTION starts at once (up to
   * `runParallelism` per run and `workerParallelism` in this worker), side-effect-free nodes run as
   * soon as they are ready, and the run is written before each wait. The run's lease is renewed
   * throughout. When the run ends, calls still in flight are abandoned (their nodes are stopped).
   */
  async function drive(machine: RunMachine): Promise<void> {
    // The stretch's span is recorded when it ends (run-tracing.ts): only its start is kept now.
    const segmentStart = deps.tracing.enabled ? Date.now() : 0;
    const firstDrive = writes.unwritten(machine);
    /** How this stretch ended, for its span: ended, released (it waits), or stopped (see the log). */
    let outcome: 'ended' | 'released' | 'stopped' = 'stopped';
    const segment = () =>
      deps.tracing.enabled
        ? deps.tracing.segment(machine, { start: segmentStart, outcome, first: firstDrive })
        : NO_SPAN;
    // Lines about a recorded run name its trace and the run's span.
    const traced = deps.tracing.enabled ? deps.tracing.logFields(machine.run.id, machine.event) : undefined;
    const runLog = traced ? log.child(traced) : log;
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
    driving.set(machine.run.id, { machine, wake: wakeRun });
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
          outcome = 'ended';
          reportRunFinished(machine, runLog, deps.metrics);
          await children.cancelOrphans(machine);
          if (machine.waitedForLimit) await deps.forgetLimitWaits(machine.run.id);
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
              runLog.error(
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
          // A limit an attempt waited for freed since the step: step again instead of releasing.
          if (signalled) {
            signalled = false;
            continue;
          }
          // From here a limit's wake goes through the store, after this release is written.
          driving.delete(machine.run.id);
          const releasing = release(machine, step.wakeAt, { writes, dueTimer, ...outside });
          releases.set(
            machine.run.id,
            releasing.catch(() => {}),
          );
          try {
            await releasing;
            outcome = 'released';
          } finally {
            // This process can drive the run again only once its release is written.
            releases.delete(machine.run.id);
          }
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
      // A new run whose first write did not create it (or never came) has no trace to add to.
      const stopped = writes.unwritten(machine) || writes.dropped(machine) ? NO_SPAN : segment();
      reportStopped(stopped === NO_SPAN ? log : log.child(logFields(stopped)), writes, machine, err);
      ended?.abort();
    } finally {
      if (outcome !== 'stopped') segment();
      if (driving.get(machine.run.id)?.machine === machine) driving.delete(machine.run.id);
      writes.abandon(machine, new Error('the run stopped before its first write'));
      if (reserved) actionSlots.give();
      stopBeat?.();
      // Calls abandoned above settle on their own; the slots they hold are given back then.
      if (calls.size > 0) await Promise.allSettled([...calls.values()]);
    }
  }

  /**
   * A slot of a limit freed for the attempt of `nodeKey` (item `index`) of run `runId`: when this
   * process drives the run, the attempt asks again at once (true); otherwise false.
   */
  function limitFreed(runId: string, nodeKey: string, index: number | undefined): boolean {
    const driven = driving.get(runId);
    if (!driven || !freeLimitWait(driven.machine, nodeKey, index, clock.now())) return false;
    driven.wake();
    return true;
  }

  /** Settles once the release of run `runId` (if one is under way here) is written. */
  function released(runId: string): Promise<void> {
    return releases.get(runId) ?? Promise.resolve();
  }

  return { drive, limitFreed, released };
}
