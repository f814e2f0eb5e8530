import type { Logger } from 'pino';
import { depthOf } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventHandler, HandlerFailures } from '../events/handlers.js';
import { type FlowControl, NO_FLOW, shapesRuns } from './flow-control.js';
import type { GraphSource, RoutedSubscription } from './graph-source.js';
import { CompiledCache, describeThrown } from './jsonlogic.js';
import { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import type { Plan } from './plan.js';
import type { Allowance, RateGuard } from './rate-guard.js';
import { routingOf } from './routing.js';
import type { RunTracing } from './run-tracing.js';
import { nodeRow } from './store.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

export interface RouterDeps {
  clock: Clock;
  log: Logger;
  subscriptions: GraphSource;
  metrics: WorkflowMetrics;
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  /** Writes a new run and its pending nodes (the engine's write batcher); false when it exists. */
  createRun(item: { run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }): Promise<boolean>;
  /**
   * Drives a new run at once, before anything of it is written, when this process's engine has room:
   * it is written at its first persist point. Answers whether that write created it (false: the run
   * existed); null when there is no room.
   */
  startNow(machine: RunMachine, row: WorkflowRunTable): Promise<boolean> | null;
  /** Runs were created pending and due (no room to drive them): any engine's next claim takes them. */
  createdDue(): void;
  /**
   * A subscription with flow control takes its events here instead (flow-gate.ts): runs start, wait,
   * fold or are refused by its rules, and those started are driven by this process's engine.
   */
  routeFlow(
    sub: RoutedSubscription,
    flow: FlowControl,
    events: CloudEvent[],
  ): Promise<{ started: number; waiting: number; skipped: number; folded: number }>;
  /** SVC_WORKFLOW_MAX_DEPTH: an event this many runs deep starts no run (docs/workflows.md "Loop safety"). */
  maxDepth: number;
  /** Pauses a subscription that starts too many runs a minute (docs/workflows.md "Loop safety"). */
  rateGuard: RateGuard;
  /** The span of a run a guard skipped. */
  tracing: RunTracing;
}

/** The parent fields of a run no CALL started. */
export const NO_PARENT = { parent_run_id: null, parent_node_key: null, awaited_by_parent: 0 } as const;

/** A child run's parent (CALL, FOREACH with call): the run and node, and whether the node waits for its end. */
export interface ParentLink {
  runId: string;
  nodeKey: string;
  awaited: boolean;
}

/**
 * A new run of `plan` on `event`: its row (running, due now, unclaimed) and one pending node each.
 * `rerunOf` links a re-run to the run it repeats; `parent` a child run to the node that started it.
 */
export function newRun(
  plan: Plan,
  event: CloudEvent,
  at: string,
  rerunOf: string | null,
  parent?: ParentLink,
) {
  const runId = newId();
  const states = RunMachine.pendingStates(plan, () => newId());
  const row: WorkflowRunTable = {
    id: runId,
    event_subscription_id: plan.subscriptionId,
    graph_version: plan.version,
    event_id: event.id,
    event_type: event.type,
    trigger_event: JSON.stringify(event),
    status: 'running',
    started_at: at,
    completed_at: null,
    error: null,
    wake_at: at,
    rerun_of: rerunOf,
    causation_depth: depthOf(event),
    locked_by: null,
    ...NO_FLOW,
    ...(parent
      ? {
          parent_run_id: parent.runId,
          parent_node_key: parent.nodeKey,
          awaited_by_parent: parent.awaited ? 1 : 0,
        }
      : NO_PARENT),
    created_at: at,
    updated_at: at,
  };
  const nodes = [...states.values()].map((s) => nodeRow(runId, s, at));
  return { row, nodes, states };
}

/**
 * The router (docs/workflows.md "Routing"): an EventHandler the outbox drain calls. Per matching subscription it
 * makes one run and one run-node per node of the subscription's current graph version and hands it to
 * this process's engine, which writes it at its first persist point (`startNow`); with no room there
 * it writes the run pending and due. Either write is one a unique index on (subscription, event id)
 * makes idempotent, and the hand-over answers only after it.
 */
/** A run that records why an event started none: `skipped`, with the reason as its error, no nodes. */
export function skippedRun(
  sub: Pick<RoutedSubscription, 'id' | 'graph_version'>,
  event: CloudEvent,
  at: string,
  reason: string,
): WorkflowRunTable {
  return {
    id: newId(),
    event_subscription_id: sub.id,
    graph_version: sub.graph_version,
    event_id: event.id,
    event_type: event.type,
    trigger_event: JSON.stringify(event),
    status: 'skipped',
    started_at: null,
    completed_at: at,
    error: reason,
    wake_at: null,
    rerun_of: null,
    causation_depth: depthOf(event),
    locked_by: null,
    ...NO_FLOW,
    ...NO_PARENT,
    created_at: at,
    updated_at: at,
  };
}

const RATE_PAUSED = 'not started: the rate guard paused the subscription (see its paused_reason)';

export function createRouter(deps: RouterDeps): EventHandler {
  const conditions = new CompiledCache(500);

  /**
   * A loop guard's refusal: no run starts, but a run of its own, `skipped` with the reason, records
   * it (visible in GET /workflow_run), counted and logged.
   */
  async function refuse(
    sub: RoutedSubscription,
    event: CloudEvent,
    guard: 'depth' | 'rate',
    reason: string,
  ): Promise<void> {
    const at = iso(deps.clock.now());
    const run = skippedRun(sub, event, at, reason);
    const inserted = await deps.createRun({ run, nodes: [] });
    if (!inserted) return;
    deps.tracing.skipped(run, event);
    deps.metrics.runRefused(sub.id, guard);
    deps.log.warn(
      { subscription_id: sub.id, event_id: event.id, guard, caused_by: event.causationid },
      `workflow router: run not started: ${reason}`,
    );
  }

  /** Starts a run of `sub` on `event`: 'driven' (written by its engine), 'due' (created pending), or null (it existed). */
  async function startRun(sub: RoutedSubscription, event: CloudEvent): Promise<'driven' | 'due' | null> {
    const depth = depthOf(event);
    if (depth >= deps.maxDepth) {
      await refuse(
        sub,
        event,
        'depth',
        `not started: the event is ${depth} runs deep (SVC_WORKFLOW_MAX_DEPTH ${deps.maxDepth}); ` +
          `it was caused by run ${event.causationid ?? '(unknown)'}: a workflow that triggers itself?`,
      );
      return null;
    }
    const plan = await deps.planOf(sub.id, sub.graph_version);
    const { row, nodes, states } = newRun(plan, event, iso(deps.clock.now()), null);
    const runId = row.id;
    const at = row.created_at;
    const machine = new RunMachine(
      plan,
      event,
      { id: runId, status: 'running', error: null, started_at: at, completed_at: null },
      states,
    );
    // Driven at once and written at its first persist point; the event's hand-over waits for that.
    const first = deps.startNow(machine, row);
    if (first) return (await first) ? 'driven' : null;
    // No room in this process's engine: created pending and due, for the next claim of any engine.
    return (await deps.createRun({ run: row, nodes })) ? 'due' : null;
  }

  /** Whether `sub` takes `event`; a condition that cannot be evaluated skips it (logged). */
  function takes(sub: RoutedSubscription, event: CloudEvent): boolean {
    const routing = routingOf(conditions, sub, event);
    if (routing.failure !== undefined) {
      // It will not evaluate better on retry: skip this subscription for this event.
      deps.log.warn(
        { subscription_id: sub.id, event_id: event.id, reason: routing.failure },
        'workflow router: condition_jsonlogic failed; subscription skipped for this event',
      );
    }
    return routing.matched;
  }

  /** Per subscription of the batch, how many of its runs the rate guard lets start, and which. */
  async function allowances(pairs: { sub: RoutedSubscription; event: CloudEvent }[]) {
    const wanted = new Map<string, { sub: RoutedSubscription; all: number; caused: number }>();
    for (const { sub, event } of pairs) {
      const w = wanted.get(sub.id) ?? { sub, all: 0, caused: 0 };
      w.all += 1;
      if (depthOf(event) > 0) w.caused += 1;
      wanted.set(sub.id, w);
    }
    const out = new Map<string, Allowance>();
    await Promise.all(
      [...wanted.values()].map(async ({ sub, all, caused }) =>
        out.set(sub.id, await deps.rateGuard.allowance(sub, { all, caused })),
      ),
    );
    return out;
  }

  /** Whether the guard lets this run start, taking one from its subscription's allowance if it counts. */
  function admitted(allowance: Map<string, Allowance>, sub: RoutedSubscription, event: CloudEvent): boolean {
    const a = allowance.get(sub.id);
    if (a === undefined || (a.scope === 'caused' && depthOf(event) === 0)) return true;
    a.allowed -= 1;
    return a.allowed >= 0;
  }

  return {
    name: 'workflow-router',
    // One indexed lookup for the batch's event types, then one run per matching (subscription, event).
    async handle(events: readonly CloudEvent[]): Promise<HandlerFailures | undefined> {
      const subs = await deps.subscriptions.routable([...new Set(events.map((e) => e.type))]);
      if (subs.length === 0) return undefined;
      const pairs: { sub: RoutedSubscription; event: CloudEvent }[] = [];
      for (const event of events) {
        for (const sub of subs)
          if (sub.event_type === event.type && takes(sub, event)) pairs.push({ sub, event });
      }
      const failed = new Map<string, string[]>();
      const fail = (sub: RoutedSubscription, eventId: string, err: unknown) => {
        failed.set(eventId, [...(failed.get(eventId) ?? []), `${sub.id}: ${describeThrown(err)}`]);
        deps.log.error(
          { subscription_id: sub.id, event_id: eventId, err },
          'workflow router: run not created',
        );
      };
      // Subscriptions with flow control decide their batch together, in the flow gate.
      const shaped = new Map<string, { sub: RoutedSubscription; events: CloudEvent[] }>();
      const plain: typeof pairs = [];
      for (const p of pairs) {
        if (!shapesRuns(p.sub.flow_control)) {
          plain.push(p);
          continue;
        }
        const group = shaped.get(p.sub.id) ?? { sub: p.sub, events: [] };
        group.events.push(p.event);
        shaped.set(p.sub.id, group);
      }
      const allowance = await allowances(pairs);
      const flowed = [...shaped.values()].map(async ({ sub, events: batch }) => {
        // The loop guards first, as for any subscription.
        const shallow: CloudEvent[] = [];
        for (const event of batch) {
          if (!admitted(allowance, sub, event))
            await refuse(sub, event, 'rate', RATE_PAUSED).catch((err) => fail(sub, event.id, err));
          else if (depthOf(event) < deps.maxDepth) shallow.push(event);
          else await startRun(sub, event).catch((err) => fail(sub, event.id, err));
        }
        if (shallow.length === 0) return;
        try {
          const counts = await deps.routeFlow(sub, sub.flow_control as FlowControl, shallow);
          for (let i = 0; i < counts.started + counts.waiting; i++) deps.metrics.runStarted(sub.id);
        } catch (err) {
          for (const event of shallow) fail(sub, event.id, err);
        }
      });
      let due = false;
      // All at once: the write batcher commits the runs submitted together in one transaction.
      await Promise.all([
        ...flowed,
        ...plain.map(async ({ sub, event }) => {
          try {
            if (!admitted(allowance, sub, event)) {
              await refuse(sub, event, 'rate', RATE_PAUSED);
              return;
            }
            const run = await startRun(sub, event);
            if (run) {
              due ||= run === 'due';
              deps.metrics.runStarted(sub.id);
            }
          } catch (err) {
            fail(sub, event.id, err);
          }
        }),
      ]);
      if (due) deps.createdDue();
      // Failures are isolated per subscription; an event's task is retried for its failed ones only
      // (runs created already are not created twice: one run per subscription and event id).
      return new Map(
        [...failed].map(([eventId, reasons]) => [
          eventId,
          new Error(`workflow runs not created for ${reasons.length} subscription(s): ${reasons.join('; ')}`),
        ]),
      );
    },
  };
}
