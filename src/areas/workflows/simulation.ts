import { AppError } from '../../http/errors.js';
import { iso } from '../../lib/clock.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { CompiledCache, describeThrown } from './jsonlogic.js';
import { RunMachine } from './machine.js';
import { availablePaths } from './paths.js';
import type { Plan } from './plan.js';
import { routingOf } from './routing.js';
import { RUN_EVENT_SOURCE } from './run-events.js';
import type { ExpressionContext, NodeState, RunStatus } from './run-state.js';
import type { WorkflowServiceDeps } from './service.js';

/**
 * POST /event_subscription/{id}/test (docs/workflows.md "Simulation"): the run machine with
 * `simulate`, nothing persisted, no plugin called, a CALL's child run simulated in place on the
 * called subscription's current graph.
 */

export interface SimulatedNode {
  node_id: string;
  key: string;
  type: string;
  status: NodeState['status'];
  input: unknown;
  output: unknown;
  error: string | null;
  skip_reason: NodeState['skip_reason'];
  attempts: number;
  context: ExpressionContext | null;
  available_paths: string[];
}

/** POST /event_subscription/{id}/test: what a run of `event` would do, with nothing persisted or called. */
export interface Simulation {
  subscription_id: string;
  event_id: string;
  status: RunStatus;
  error: string | null;
  routing: { matched: boolean; reasons: string[] };
  nodes: SimulatedNode[];
  edges_traversed: string[];
}

/** How deep simulated calls nest (the loop guard's default depth). */
const SIMULATED_MAX_DEPTH = 8;

/** A subscription as a simulation runs it: its plan and its ACTIONs' input checks. */
interface Simulated {
  sub: { id: string; event_type: string };
  plan: Plan;
  checks: Map<string, (input: unknown) => string | undefined>;
}

export function createSimulator(deps: Omit<WorkflowServiceDeps, 'store'>) {
  const expressions = new CompiledCache(100);

  /**
   * Per ACTION of a plan, the check its input would meet when invoked; an instance or action gone
   * since the save fails the node as the real attempt would.
   */
  async function inputChecks(plan: Plan): Promise<Map<string, (input: unknown) => string | undefined>> {
    const checks = new Map<string, (input: unknown) => string | undefined>();
    if (!deps.actions) return checks;
    for (const n of plan.nodes) {
      const action =
        n.type === 'ACTION'
          ? { instance: n.config?.plugin_instance_id as string, name: n.config?.plugin_action as string }
          : n.forEach?.action
            ? { instance: n.forEach.action.pluginInstanceId, name: n.forEach.action.pluginAction }
            : undefined;
      if (action === undefined) continue;
      try {
        checks.set(n.key, await deps.actions.inputCheck(action.instance, action.name));
      } catch (err) {
        const message = err instanceof AppError ? `${err.code}: ${err.message}` : describeThrown(err);
        checks.set(n.key, () => message);
      }
    }
    return checks;
  }

  /**
   * The subscriptions a plan calls (CALL, FOREACH with call), directly or through others, loaded
   * before the simulation runs: the machine runs without I/O. A subscription gone is absent.
   */
  async function calledPlans(plan: Plan): Promise<Map<string, Simulated>> {
    const out = new Map<string, Simulated>();
    const queue = [plan];
    while (queue.length > 0 && out.size < 50) {
      const next = queue.shift() as Plan;
      for (const n of next.nodes) {
        const id = n.call?.subscriptionId;
        if (id === undefined || out.has(id)) continue;
        try {
          const sub = await deps.subscriptions.getActive(id);
          const called = await deps.planOf(sub.id, sub.graph_version);
          out.set(id, { sub, plan: called, checks: await inputChecks(called) });
          queue.push(called);
        } catch {
          // Deleted since the save: the simulated call fails saying so.
        }
      }
    }
    return out;
  }

  /** A simulated machine of `plan` on `event`, its calls simulated in place up to the loop guard's depth. */
  function simulatedMachine(
    target: Simulated,
    event: CloudEvent,
    waitedFor: readonly CloudEvent[],
    called: Map<string, Simulated>,
    depth: number,
  ): RunMachine {
    const run = {
      id: '',
      status: 'running' as const,
      error: null,
      started_at: iso(deps.clock.now()),
      completed_at: null,
    };
    const machine = new RunMachine(
      target.plan,
      event,
      run,
      RunMachine.pendingStates(target.plan, () => ''),
      true,
    );
    machine.simulatedEvents = waitedFor;
    machine.simulatedInputProblem = (key, input) => target.checks.get(key)?.(input);
    machine.simulatedCall = (subscriptionId, input) => {
      const child = called.get(subscriptionId);
      if (child === undefined)
        return { status: 'failed', error: `subscription ${subscriptionId} not found`, outputs: {} };
      if (depth + 1 >= SIMULATED_MAX_DEPTH)
        return {
          status: 'failed',
          error: `calls nested ${depth + 1} deep: a workflow that calls itself?`,
          outputs: {},
        };
      const childEvent: CloudEvent = {
        specversion: '1.0',
        id: '',
        source: RUN_EVENT_SOURCE,
        type: child.sub.event_type,
        time: iso(deps.clock.now()),
        datacontenttype: 'application/json',
        data: input as Record<string, unknown>,
      };
      const m = simulatedMachine(child, childEvent, waitedFor, called, depth + 1);
      m.advance(deps.clock.now());
      const outputs: Record<string, unknown> = {};
      for (const st of m.nodes.values()) if (st.status === 'completed') outputs[st.key] = st.output;
      return {
        status: m.run.status === 'completed' ? 'completed' : 'failed',
        error: m.run.error,
        outputs,
      };
    };
    return machine;
  }

  return {
    /**
     * POST /event_subscription/{id}/test: the same machine with `simulate`: nothing persisted, no
     * plugin called (an ACTION answers `{simulated: true, input}`; vault references stay unresolved
     * so no secret is returned), delays skipped, failures reported in the node with a 200.
     */
    async simulate(
      subscriptionId: string,
      given: CloudEvent,
      waitedFor: readonly CloudEvent[] = [],
    ): Promise<Simulation> {
      // The enrichment a published event gets (the publisher's enricher), so the graph sees the same paths.
      const event = deps.enrich ? { ...given, data: deps.enrich(given.type, given.data) } : given;
      const sub = await deps.subscriptions.getActive(subscriptionId);
      const plan = await deps.planOf(sub.id, sub.graph_version);
      const top = { sub, plan, checks: await inputChecks(plan) };
      const machine = simulatedMachine(top, event, waitedFor, await calledPlans(plan), 0);
      const states = machine.nodes;
      machine.advance(deps.clock.now());
      const routing = routingOf(expressions, sub, event);
      const nodes: SimulatedNode[] = plan.nodes.map((n) => {
        const s = states.get(n.key) as NodeState;
        const context = machine.seen.get(n.key) ?? null;
        return {
          node_id: n.id,
          key: n.key,
          type: n.type,
          status: s.status,
          input: s.input,
          output: s.output,
          error: s.error,
          skip_reason: s.skip_reason,
          attempts: s.attempts,
          context,
          available_paths: context ? availablePaths(context) : [],
        };
      });
      return {
        subscription_id: sub.id,
        event_id: event.id,
        status: machine.run.status,
        error: machine.run.error,
        routing,
        nodes,
        edges_traversed: machine.traversed,
      };
    },
  };
}
