import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventHandler } from '../events/handlers.js';
import * as claims from './claim-store.js';
import { CompiledCache } from './jsonlogic.js';
import { waitResolved, waitTimedOut } from './machine/waits.js';
import type { RunMachine } from './machine.js';
import type { Plan } from './plan.js';
import type { NodeState } from './run-state.js';
import type { WorkflowRunTable } from './tables.js';
import { eventWaitKey, type WaitSpec } from './wait-spec.js';
import * as waits from './wait-store.js';

/**
 * WAIT_EVENT's side outside the run (docs/workflows.md "WAIT_EVENT"): every event the outbox hands
 * over is matched against the waits of its type, by key, one index lookup per (event, spec), never a
 * scan of the waiting runs; a match completes the node where it waits and makes its run due. The
 * engine asks here at a timeout (did an event take the wait first?) and when it releases a run that
 * waits (did an event take a wait while it held the run?).
 */
export interface EventWaits {
  /** The outbox drain's handler that resumes waiting runs. */
  handler: EventHandler;
  /** Records what a plan's WAIT_EVENTs wait on, before any of its runs can wait (once per plan). */
  register(plan: Plan): Promise<void>;
  /**
   * WAIT_EVENTs whose timeout passed: each wait is taken from the store first, and the machine told
   * whether it timed out or an event took it meanwhile (and what the event left).
   */
  settleTimeouts(machine: RunMachine, timeouts: readonly NodeState[]): Promise<void>;
  /** After releasing a run that waits: due now if an event took a wait while it was held. */
  afterRelease(runId: string, waiting: readonly NodeState[]): Promise<void>;
}

export interface EventWaitsDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** Runs were made due: the engine's next claim takes them. */
  woken(): void;
  /**
   * This process's engine, which drives resumed runs at once when it has room: they are held for it
   * in the transaction that takes their waits, with no claim of their own.
   */
  engine?: {
    workerId: string;
    leaseUntil(): string;
    /** How many more runs it takes now (0 while stopping). */
    room(): number;
    drive(rows: WorkflowRunTable[]): void;
  };
}

export function createEventWaits(deps: EventWaitsDeps): EventWaits {
  const { store, clock, log } = deps;
  const expressions = new CompiledCache(500);
  const evaluator = (spec: WaitSpec) =>
    spec.expression === null ? null : expressions.get(JSON.parse(spec.expression), 'correlation.event');

  async function resume(events: readonly CloudEvent[]): Promise<void> {
    const specs = await waits.specsFor(store.db, [...new Set(events.map((e) => e.type))]);
    if (specs.length === 0) return;
    // The first event of the batch to bring a key takes its waits; a later one finds none left.
    const byKey = new Map<string, CloudEvent>();
    for (const event of events) {
      for (const spec of specs) {
        if (spec.eventType !== event.type) continue;
        const { key, problem } = eventWaitKey(spec, evaluator(spec), event);
        if (problem) log.debug({ event_id: event.id, spec: spec.id, problem }, 'event waits: no key');
        if (key !== undefined && !byKey.has(key)) byKey.set(key, event);
      }
    }
    if (byKey.size === 0) return;
    const nodes = await waits.waitingOn(store.db, [...byKey.keys()]);
    if (nodes.length === 0) return;
    const at = iso(clock.now());
    const runIds = [...new Set(nodes.map((n) => n.workflow_run_id))];
    const engine = deps.engine;
    let held: WorkflowRunTable[] = [];
    const taken = await store.transaction(async (tx) => {
      if (engine) {
        const holder = { workerId: engine.workerId, leaseUntil: engine.leaseUntil(), room: engine.room() };
        held = await claims.holdOrWakeRuns(tx.db, tx.dialect, runIds, holder, at);
      } else await claims.wakeRuns(tx.db, runIds, at);
      let count = 0;
      for (const node of nodes) {
        const event = byKey.get(node.wait_key) as CloudEvent;
        const output = JSON.stringify({ event, timed_out: false });
        if (await waits.takeByEvent(tx.db, node, output, at)) count++;
      }
      return count;
    });
    if (held.length > 0) engine?.drive(held);
    if (taken > 0 && held.length < runIds.length) deps.woken();
  }

  return {
    handler: {
      name: 'workflow-waits',
      async handle(events) {
        await resume(events);
      },
    },

    async register(plan) {
      const specs = plan.nodes.flatMap((n) => (n.wait ? [n.wait.spec] : []));
      if (specs.length > 0) await store.write((db) => waits.registerSpecs(db, specs, iso(clock.now())));
    },

    async settleTimeouts(machine, timeouts) {
      for (const st of timeouts) {
        const taken = await store.write((db) => waits.takeByTimeout(db, st.id));
        if (taken.timedOut) waitTimedOut(machine, st, clock.now());
        else
          waitResolved(
            machine,
            st,
            taken.output === null ? null : JSON.parse(taken.output),
            taken.completedAt,
          );
      }
    },

    async afterRelease(runId, waiting) {
      if (waiting.length === 0) return;
      const ids = waiting.map((s) => s.id);
      if (!(await waits.anyTaken(store.db, ids))) return;
      if (await store.write((db) => claims.wakeReleased(db, runId, iso(clock.now())))) deps.woken();
    },
  };
}
