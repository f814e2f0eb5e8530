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

/**
 * The save-time checks of a valid graph against what other areas hold (docs/workflows.md "Save-time
 * checks"): an ACTION's plugin instance and action exist and its mapping meets the action's
 * input_schema; a WAIT_EVENT's event type is registered. 400 WORKFLOW.INVALID_GRAPH naming the node
 * and field; answers the warnings (a deprecated event type waited on).
 */
export async function checkGraphReferences(
  nodes: readonly NodeSpec[],
  deps: { actions?: ActionCatalog; eventTypes: Pick<EventTypeService, 'checkNamed'> },
): Promise<string[]> {
  const warnings: string[] = [];
  for (const [i, n] of nodes.entries()) {
    const at = `nodes.${i} (key "${n.key}")`;
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
    if (n.type !== 'ACTION' || !deps.actions) continue;
    const action = n.config?.plugin_action as string;
    try {
      const d = await deps.actions.describeAction(n.config?.plugin_instance_id as string, action);
      // The mapping against the action's input_schema, before any run: what is missing, and
      // literals of the wrong type.
      const problem = d.input_schema
        ? mappingProblem(n.config?.input_mapping ?? {}, d.input_schema)
        : undefined;
      if (problem) {
        throw new AppError(
          'WORKFLOW.INVALID_GRAPH',
          `${at}: input_mapping.${problem.path} ${problem.message} (the input_schema of action "${action}")`,
          { field: `nodes.${i}.config.input_mapping.${problem.path}` },
        );
      }
    } catch (err) {
      if (err instanceof AppError && MISSING_PLUGIN.has(err.code)) {
        throw new AppError('WORKFLOW.INVALID_GRAPH', `${at}: ${err.message}`, { field: `nodes.${i}.config` });
      }
      throw err;
    }
  }
  return warnings;
}
