import { type Clock, iso } from '../../lib/clock.js';
import type { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import { countFinishedNodes } from './reporting.js';
import { runEndedEvent } from './run-events.js';
import type { RunTracing } from './run-tracing.js';
import type { RunWrite } from './store.js';
import type { WorkflowRunTable } from './tables.js';

/** The run is no longer this worker's: another worker took it after the lease ran out. */
export class LeaseLost extends Error {}
/**
 * A new run this engine no longer drives: its first write found the run written already (the event
 * was handed over twice), or failed (the event's hand-over failed, and the event comes again).
 */
export class Dropped extends Error {}

/** A run routed here and not written yet: its row, and the router waiting for its first write. */
interface Unwritten {
  row: WorkflowRunTable;
  written(created: boolean): void;
  failed(err: unknown): void;
}

type Lease = { wake_at: string | null; locked_by: string | null };

/** Where one run stands with its writes. */
interface RunWrites {
  /**
   * `unwritten`: new, its first write (which inserts it) still to come; `written`; `dropped`: new,
   * and its first write did not create it, so nothing more of it is ever written.
   */
  phase: 'unwritten' | 'written' | 'dropped';
  /** While unwritten: the row to insert, and the router waiting for the first write. */
  first?: Unwritten;
  /** The run's latest write, which the next one follows. */
  last?: Promise<void>;
}

export interface RunPersisterDeps {
  clock: Clock;
  metrics: WorkflowMetrics;
  /** The engine's batched write of one run's changes (run-writer.ts): false when the lease was lost. */
  writeRun(item: RunWrite): Promise<boolean>;
  /** Whether a run that ended with `status` publishes its end event (run-events.ts). */
  publishesEnd(status: string): Promise<boolean>;
  /** Spans of the nodes and runs whose end a write made durable. */
  tracing: RunTracing;
}

/**
 * How the engine writes runs (docs/workflows.md "Durability"): each write takes the run's changes up
 * to its turn, under a lease, and the writes of one run are serialised. A new run handed over by the
 * router (`first`) is not written until its first persist point: that write inserts it with all its
 * nodes, and answers the router. A new run whose first write did not create it is `dropped`: nothing
 * more of it is ever written.
 */
export function createRunPersister(deps: RunPersisterDeps) {
  /** Where each run stands with its writes; a run resumed from the store starts `written`. */
  const runs = new WeakMap<RunMachine, RunWrites>();
  const writesOf = (machine: RunMachine): RunWrites => {
    let w = runs.get(machine);
    if (w === undefined) {
      w = { phase: 'written' };
      runs.set(machine, w);
    }
    return w;
  };

  /** A new run's first write is over: one that did not create the run is never written again. */
  function endFirstWrite(w: RunWrites, created: boolean) {
    w.phase = created ? 'written' : 'dropped';
    w.first = undefined;
  }

  async function write(machine: RunMachine, lease: Lease) {
    const over = machine.run.status !== 'running';
    const recorded = deps.tracing.enabled && deps.tracing.recorded(machine.run.id, machine.event);
    // Made only where read (a run's end, or its recorded spans): most writes need neither.
    const facts =
      over || recorded
        ? {
            subscriptionId: machine.plan.subscriptionId,
            graphVersion: machine.plan.version,
            event: machine.event,
            trace: deps.tracing.run(machine.run.id, machine.event),
          }
        : undefined;
    // Decided before the write's transaction (the interest check may read the store).
    const ended =
      facts && over && (await deps.publishesEnd(machine.run.status))
        ? runEndedEvent(machine.run, facts)
        : undefined;
    const changes = machine.takeChanges();
    const at = iso(deps.clock.now());
    const w = writesOf(machine);
    if (w.phase === 'dropped') throw new Dropped();
    const fresh = w.phase === 'unwritten' ? w.first : undefined;
    let ok: boolean;
    try {
      ok = await deps.writeRun({
        run: { ...machine.run },
        lease,
        // A new run's first write inserts it with all of its nodes, the pending ones too.
        nodes: fresh ? [...machine.nodes.values()] : changes.nodes,
        at,
        ended,
        create: fresh?.row,
        ...(changes.items.length > 0 ? { items: changes.items } : {}),
        ...(changes.spawns.length > 0 ? { spawns: changes.spawns } : {}),
        ...(machine.parentRunId !== null ? { wakeParent: machine.parentRunId } : {}),
      });
    } catch (err) {
      // A failed first write: the event comes again, and this copy must never be written later.
      if (fresh) {
        endFirstWrite(w, false);
        fresh.failed(err);
      }
      throw err;
    }
    if (fresh) {
      endFirstWrite(w, ok);
      fresh.written(ok);
      if (!ok) throw new Dropped();
    }
    if (!ok) throw new LeaseLost(`run ${machine.run.id} is no longer held by this worker`);
    countFinishedNodes(changes.nodes, deps.metrics);
    if (facts && deps.tracing.enabled) {
      if (recorded) deps.tracing.nodesEnded(machine.run, facts, changes.nodes);
      // Also for a run not recorded: it forgets the run's context.
      if (over) deps.tracing.runEnded(machine.run, facts);
    }
  }

  return {
    /**
     * Writes the run's changes under `lease`. The writes of one run are serialised: branches running
     * side by side each persist their attempts, and a later write must never commit before an earlier
     * one (each takes the changes made up to its own turn).
     */
    persist(machine: RunMachine, lease: Lease): Promise<void> {
      const w = writesOf(machine);
      const previous = w.last;
      // The common case (one branch, or nothing written yet) writes at once: no chain to join. A
      // write queued behind one that succeeded and left nothing new (attempts started together:
      // the first write took them all) has nothing to make durable while the run stays held.
      const next = previous
        ? previous.then(
            () =>
              lease.locked_by !== null && !machine.hasChanges() && w.phase !== 'unwritten'
                ? undefined
                : write(machine, lease),
            () => write(machine, lease),
          )
        : write(machine, lease);
      w.last = next;
      return next;
    },
    /** A new run to be written at its first persist point; answers whether that write created it. */
    first(machine: RunMachine, row: WorkflowRunTable): Promise<boolean> {
      return new Promise<boolean>((resolve, reject) => {
        runs.set(machine, { phase: 'unwritten', first: { row, written: resolve, failed: reject } });
      });
    },
    /** Whether the run is new and not written yet. */
    unwritten: (machine: RunMachine) => runs.get(machine)?.phase === 'unwritten',
    /** Whether the run was new and its first write did not create it. */
    dropped: (machine: RunMachine) => runs.get(machine)?.phase === 'dropped',
    /**
     * The run's drive ended: a new run still unwritten fails its hand-over (nothing of it is stored,
     * and the event comes again). Answers whether it was one.
     */
    abandon(machine: RunMachine, err: unknown): boolean {
      const w = runs.get(machine);
      if (w?.phase !== 'unwritten' || w.first === undefined) return false;
      const fresh = w.first;
      endFirstWrite(w, false);
      fresh.failed(err);
      return true;
    },
  };
}

/** How the engine writes runs (createRunPersister). */
export type RunPersister = ReturnType<typeof createRunPersister>;
