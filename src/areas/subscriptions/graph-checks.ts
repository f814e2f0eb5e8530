import { AppError } from '../../http/errors.js';
import type { EventTypeService } from '../events/event-types.js';
import type { NodeSpec } from '../workflows/graph.js';
import { mappingProblem } from '../workflows/mapping-check.js';
import type { ActionCatalog } from './service.js';

const MISSING_PLUGIN = new Set([
  'PLUGIN.INSTANCE_NOT_FOUND',
  'PLUGIN.ACTION_NOT_FOUND',
  'PLUGIN.DEFINITION_NOT_FOUND',
]);

/** What the checks of CALL need of the subscriptions area: a subscription's type and the ones its graph calls. */
export interface CallTargets {
  /** The active subscription's event type and the subscriptions its current graph calls; undefined when none. */
  target(id: string): Promise<{ event_type: string; calls: string[] } | undefined>;
}

/** The subscriptions a node calls (CALL, FOREACH with call). */
export function calledBy(n: Pick<NodeSpec, 'type' | 'config'>): string | undefined {
  if (n.type === 'CALL') return n.config?.subscription_id as string;
  if (n.type === 'FOREACH')
    return (n.config?.call as { subscription_id?: string } | undefined)?.subscription_id;
  return undefined;
}

/**
 * The save-time checks of a valid graph against what other areas hold (docs/workflows.md "Save-time
 * checks"): an ACTION's plugin instance and action exist and its mapping meets the action's
 * input_schema; a WAIT_EVENT's event type is registered; a CALL's subscription exists, its input
 * meets that subscription's data schema, and no chain of calls leads back to `subscriptionId`.
 * 400 WORKFLOW.INVALID_GRAPH naming the node and field; answers the warnings (a deprecated event
 * type waited on).
 */
export async function checkGraphReferences(
  nodes: readonly NodeSpec[],
  deps: {
    actions?: ActionCatalog;
    eventTypes: Pick<EventTypeService, 'checkNamed' | 'dataSchemaOf'>;
    calls?: CallTargets & { subscriptionId: string };
  },
): Promise<string[]> {
  const warnings: string[] = [];
  for (const [i, n] of nodes.entries()) {
    const at = `nodes.${i} (key "${n.key}")`;
    const callee = calledBy(n);
    if (callee !== undefined && deps.calls) await checkCall(n, i, callee, deps.calls, deps.eventTypes);
    if (n.type === 'FOREACH' && n.config?.action) {
      await checkAction(
        n.config.action as Record<string, unknown>,
        at,
        `nodes.${i}.config.action`,
        deps.actions,
      );
      continue;
    }
    if (n.type === 'WAIT_EVENT') {
      const field = `nodes.${i}.config.event_type`;
      try {
        warnings.push(...(await deps.eventTypes.checkNamed([n.config?.event_type as string], field)));
      } catch (err) {
        if (err instanceof AppError && err.code === 'EVENT.UNKNOWN_TYPE')
          throw new AppError('WORKFLOW.INVALID_GRAPH', `${at}: ${err.message}`, { ...err.details, field });
        throw err;
      }
    }
    if (n.type === 'ACTION') await checkAction(n.config ?? {}, at, `nodes.${i}.config`, deps.actions);
  }
  return warnings;
}

/** An action call (ACTION, FOREACH's action) at `field`: the action exists and the mapping meets its input_schema. */
async function checkAction(
  config: Record<string, unknown>,
  at: string,
  field: string,
  actions: ActionCatalog | undefined,
): Promise<void> {
  if (!actions) return;
  const action = config.plugin_action as string;
  try {
    const d = await actions.describeAction(config.plugin_instance_id as string, action);
    // The mapping against the action's input_schema, before any run: what is missing, and
    // literals of the wrong type.
    const problem = d.input_schema ? mappingProblem(config.input_mapping ?? {}, d.input_schema) : undefined;
    if (problem) {
      throw new AppError(
        'WORKFLOW.INVALID_GRAPH',
        `${at}: input_mapping.${problem.path} ${problem.message} (the input_schema of action "${action}")`,
        { field: `${field}.input_mapping.${problem.path}` },
      );
    }
  } catch (err) {
    if (err instanceof AppError && MISSING_PLUGIN.has(err.code)) {
      throw new AppError('WORKFLOW.INVALID_GRAPH', `${at}: ${err.message}`, { field });
    }
    throw err;
  }
}

/** How many subscriptions the recursion check follows at most (a chain beyond is the depth guard's). */
const MAX_CALL_CHAIN = 200;

/**
 * A CALL's (or FOREACH's call): the subscription exists, the input meets its type's data schema,
 * and it does not lead back to the subscription being saved (a cycle the depth guard would only stop
 * at run time).
 */
async function checkCall(
  n: NodeSpec,
  i: number,
  callee: string,
  calls: CallTargets & { subscriptionId: string },
  eventTypes: Pick<EventTypeService, 'dataSchemaOf'>,
): Promise<void> {
  const at = `nodes.${i} (key "${n.key}")`;
  const base = n.type === 'CALL' ? `nodes.${i}.config` : `nodes.${i}.config.call`;
  const target = callee === calls.subscriptionId ? { event_type: '', calls: [] } : await calls.target(callee);
  if (callee !== calls.subscriptionId) {
    if (!target)
      throw new AppError('WORKFLOW.INVALID_GRAPH', `${at}: subscription "${callee}" not found`, {
        field: `${base}.subscription_id`,
      });
    const schema = await eventTypes.dataSchemaOf(target.event_type);
    const input =
      (n.type === 'CALL' ? n.config?.input : (n.config?.call as { input?: unknown })?.input) ?? {};
    const problem = schema ? mappingProblem(input, schema as Record<string, unknown>) : undefined;
    if (problem) {
      throw new AppError(
        'WORKFLOW.INVALID_GRAPH',
        `${at}: input.${problem.path} ${problem.message} (the data_schema of ${target.event_type}, the event type of subscription "${callee}")`,
        { field: `${base}.input.${problem.path}` },
      );
    }
  }
  // Breadth first from the callee: the first path back to the saved subscription is a shortest one.
  const from = new Map<string, string | null>([[callee, null]]);
  const queue = [callee];
  while (queue.length > 0 && from.size <= MAX_CALL_CHAIN) {
    const id = queue.shift() as string;
    if (id === calls.subscriptionId) {
      const path: string[] = [];
      for (let p: string | null = id; p !== null; p = from.get(p) ?? null) path.unshift(p);
      throw new AppError(
        'WORKFLOW.INVALID_GRAPH',
        `${at}: the call makes a cycle: ${[calls.subscriptionId, ...path].join(' -> ')}; a workflow may not call itself, directly or through others`,
        { field: `${base}.subscription_id`, cycle: [calls.subscriptionId, ...path] },
      );
    }
    for (const next of (await calls.target(id))?.calls ?? []) {
      if (from.has(next)) continue;
      from.set(next, id);
      queue.push(next);
    }
  }
}
