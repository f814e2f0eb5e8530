import { isPlainObject } from '../../../lib/objects.js';
import { describeThrown } from '../jsonlogic.js';
import type { RunMachine } from '../machine.js';
import type { PlanNode } from '../plan.js';
import type { NodeState } from '../run-state.js';

/** COMPUTE, SWITCH, END: no side effects, executed in one step. */
export function execute(m: RunMachine, node: PlanNode, st: NodeState, now: Date): void {
  const nowIso = now.toISOString();
  m.beginAttempt(st, now);
  switch (node.type) {
    case 'COMPUTE': {
      st.input = { logic: node.config?.logic ?? null };
      let result: unknown;
      const started = performance.now();
      try {
        result = (node.logic as (c: unknown) => unknown)(m.context);
      } catch (err) {
        m.attemptFailed(node, st, describeThrown(err), now);
        return;
      }
      // An evaluation cannot be interrupted; one that ran past timeout_ms fails its attempt.
      const took = performance.now() - started;
      if (node.timeoutMs !== null && took > node.timeoutMs) {
        m.attemptFailed(
          node,
          st,
          `attempt ${st.attempts} timed out: the expression took ${Math.round(took)} ms, more than timeout_ms ${node.timeoutMs}`,
          now,
        );
        return;
      }
      // A scalar (or list, or null) result is wrapped so outputs are always objects.
      m.complete(st, isPlainObject(result) ? result : { result: result ?? null }, nowIso);
      return;
    }
    case 'SWITCH':
      // Routing is done by the outgoing edges' conditions; the node itself does nothing.
      st.input = null;
      m.complete(st, null, nowIso);
      return;
    case 'END':
      st.input = null;
      m.complete(st, null, nowIso);
      // An END node reached completes the run; nodes not yet run are not executed.
      m.endRun('completed', null, nowIso);
      return;
    default:
      m.attemptFailed(node, st, `node type ${node.type} cannot be executed here`, now, true);
  }
}
