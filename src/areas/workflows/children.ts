import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { traceAttributes } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventPublisher } from '../events/publish.js';
import { wakeReleased } from './claim-store.js';
import { cancelInTx } from './control.js';
import type { GraphSource } from './graph-source.js';
import * as items from './item-store.js';
import { describeThrown } from './jsonlogic.js';
import { awaitedChildren, childRead, childStarted } from './machine/calls.js';
import type { RunMachine } from './machine.js';
import type { Plan } from './plan.js';
import { newRun } from './router.js';
import { RUN_EVENT_SOURCE } from './run-events.js';
import type { ChildOutcome, ChildWait, Invoke } from './run-state.js';
import type { RunTracing } from './run-tracing.js';
import * as runs from './store.js';

/**
 * CALL's side outside the machine (docs/workflows.md "CALL"): a child run is checked (the
 * subscription, its type's data schema, the loop guard's depth) and made here, and written with the
 * parent's attempt; the parent reads how its children ended when it runs, and a child's end wakes a
 * parent waiting for it (store.ts, in the child's last write). Children a parent no longer waits for
 * (the parent ended) are cancelled.
 */
export interface ChildRunsDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  subscriptions: Pick<GraphSource, 'getActive'>;
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  /** The data check of the child's trigger event (events area): throws EVENT.INVALID. */
  checkData(eventType: string, data: unknown): Promise<void>;
  /** SVC_WORKFLOW_MAX_DEPTH: a child this many runs deep is not started. */
  maxDepth: number;
  publisher?: Pick<EventPublisher, 'publish'>;
  /** Runs were made due (a cancelled child's parent): the engine's next claim takes them. */
  woken(): void;
  /** The CALL node's span context: the child's trigger event carries it, so the child joins the trace. */
  tracing: RunTracing;
}

const errorText = (err: unknown) =>
  err instanceof AppError ? `${err.code}: ${err.message}` : describeThrown(err);

export function createChildRuns(deps: ChildRunsDeps) {
  const { store, clock } = deps;
  return {
    /**
     * Makes the child run of a CALL's (or a FOREACH item's) attempt: the machine records it and it is
     * written with the parent's next write. A refusal (no such subscription, data its type refuses,
     * too deep) fails the attempt for good; a store failure is retried by the node's retry_policy.
     */
    async start(machine: RunMachine, inv: Invoke): Promise<void> {
      const call = inv.node.call as NonNullable<Invoke['node']['call']>;
      const data = inv.item ? inv.item.input : (inv.state.input as { input: unknown }).input;
      const depth = machine.depth + 1;
      if (depth >= deps.maxDepth) {
        // The loop guard across calls (docs/workflows.md "Loop safety"): no retry makes it shallower.
        const now = clock.now();
        machine.beginInvoke(inv, now);
        machine.invokeFailed(
          inv,
          `WORKFLOW.DEPTH_EXCEEDED: the child run would be ${depth} runs deep (SVC_WORKFLOW_MAX_DEPTH ${deps.maxDepth}); a workflow that calls itself?`,
          now,
          true,
        );
        return;
      }
      try {
        const sub = await deps.subscriptions.getActive(call.subscriptionId);
        await deps.checkData(sub.event_type, data);
        const plan = await deps.planOf(sub.id, sub.graph_version);
        const now = clock.now();
        const at = iso(now);
        const event: CloudEvent = {
          specversion: '1.0',
          id: newId(),
          source: RUN_EVENT_SOURCE,
          type: sub.event_type,
          subject: machine.run.id,
          time: at,
          datacontenttype: 'application/json',
          data: data as Record<string, unknown>,
          svcdepth: depth,
          causationid: machine.run.id,
          ...traceAttributes(deps.tracing.node(machine.run.id, machine.event, inv.node.key)),
        };
        const child = newRun(plan, event, at, null, {
          runId: machine.run.id,
          nodeKey: inv.node.key,
          awaited: inv.item !== undefined || call.wait,
        });
        childStarted(machine, inv, { run: child.row, nodes: child.nodes }, now);
      } catch (err) {
        if (!machine.wants(inv)) return;
        const now = clock.now();
        machine.beginInvoke(inv, now);
        machine.invokeFailed(inv, errorText(err), now, err instanceof AppError);
      }
    },

    /** How the children waited for ended (undefined: still running), told to the machine. */
    async read(machine: RunMachine, waits: readonly ChildWait[]): Promise<void> {
      const outcomes = await items.childOutcomes(
        store.db,
        waits.map((w) => w.runId),
      );
      const now = clock.now();
      for (const w of waits) childRead(machine, w, outcomes.get(w.runId), now);
    },

    /** After releasing a run that waits for children: due now if one ended while it was held. */
    async afterRelease(machine: RunMachine): Promise<void> {
      const ids = awaitedChildren(machine);
      if (ids.length === 0) return;
      if (!(await items.anyEnded(store.db, ids))) return;
      if (await store.write((db) => wakeReleased(db, machine.run.id, iso(clock.now())))) deps.woken();
    },

    /** The run ended with awaited children in flight: they are cancelled, with their own children. */
    async cancelOrphans(machine: RunMachine): Promise<void> {
      if (machine.orphans.length === 0) return;
      const reason = `cancelled: its parent run ${machine.run.id} ${machine.run.status} while it ran`;
      const at = iso(clock.now());
      await store.transaction(async (tx) => {
        for (const id of machine.orphans) {
          const row = await runs.getRun(tx.db, id);
          if (row)
            await cancelInTx(
              tx,
              { publisher: deps.publisher, wake: deps.woken, tracing: deps.tracing },
              row,
              reason,
              at,
            );
        }
      });
      machine.orphans.length = 0;
    },
  };
}

export type ChildRuns = ReturnType<typeof createChildRuns>;
export type { ChildOutcome };
