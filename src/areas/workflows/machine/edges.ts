import { describeThrown, truthy } from '../jsonlogic.js';
import type { RunMachine } from '../machine.js';
import type { PlanNode } from '../plan.js';
import type { NodeState, SkipReason } from '../run-state.js';

/** Edges (docs/workflows.md "Execution rules"): which are taken, and the skips of nodes none reaches. */

/**
 * The skip rule (execution rule 2) over `edges`: a node is skipped only when it has incoming
 * edges, every one of them has a condition, and every condition is false. An edge without a
 * condition always passes. A JOIN decided early passes only the edges of finished predecessors.
 * Failure branches (docs/workflows.md "Failure branches"): an on_failure edge is taken only when
 * its source failed, and an ordinary edge from a node with on_failure edges only when it did not;
 * an edge not taken counts as one whose condition is false.
 */
export function reach(
  m: RunMachine,
  node: PlanNode,
  st: NodeState,
  nowIso: string,
  edges: readonly PlanNode['in'][number][],
): 'run' | 'skipped' | 'failed' {
  if (node.in.length === 0) return 'run';
  let passed = false;
  const falseEdges: SkipReason['edges'] = [];
  const passing: string[] = [];
  for (const edge of edges) {
    const why = notTaken(m, edge);
    if (why !== undefined) {
      falseEdges.push({
        edge_id: edge.id,
        from_node_key: edge.from,
        condition_jsonlogic: edge.conditionJson,
        not_taken: why,
      });
      continue;
    }
    let pass = true;
    if (edge.condition) {
      try {
        pass = truthy(edge.condition(m.context));
      } catch (err) {
        st.attempts = Math.max(st.attempts, 1);
        st.started_at ??= nowIso;
        m.finalFailure(node, st, `edge from "${edge.from}": ${describeThrown(err)}`, nowIso);
        return 'failed';
      }
    }
    if (pass) {
      passed = true;
      passing.push(edge.id);
    } else {
      falseEdges.push({
        edge_id: edge.id,
        from_node_key: edge.from,
        condition_jsonlogic: edge.conditionJson,
      });
    }
  }
  if (passed) {
    m.traversed.push(...passing);
    return 'run';
  }
  st.status = 'skipped';
  st.skip_reason = { message: skipMessage(falseEdges), edges: falseEdges };
  st.completed_at = nowIso;
  st.resume_at = null;
  st.wait_kind = null;
  m.dirty.add(st);
  m.observer?.('skip', st.key);
  return 'skipped';
}

/**
 * Why a failure-branch rule leaves `edge` untaken, whatever its condition: its source failed and
 * it is an ordinary edge of a node with on_failure edges, or it is an on_failure edge and its
 * source did not fail. Undefined: the edge's condition decides.
 */
export function notTaken(
  m: RunMachine,
  edge: PlanNode['in'][number],
): 'source_failed' | 'source_did_not_fail' | undefined {
  const failed = m.state(edge.from).status === 'failed';
  if (edge.onFailure) return failed ? undefined : 'source_did_not_fail';
  return failed && m.plan.byKey.get(edge.from)?.handlesFailure ? 'source_failed' : undefined;
}

/**
 * A predecessor as a JOIN counts it: a failure handled by on_failure edges is a branch not taken
 * (skipped), unless the JOIN is reached by one of those edges, where the failure is the branch.
 */
export function asJoinSees(m: RunMachine, join: PlanNode, key: string): NodeState {
  const st = m.state(key);
  if (st.status !== 'failed' || !m.plan.byKey.get(key)?.handlesFailure) return st;
  const byFailureEdge = join.in.some((e) => e.from === key && e.onFailure);
  return { ...st, status: byFailureEdge ? 'completed' : 'skipped' };
}

/** Whether an edge passes now; a condition that throws does not (reach() reports it). */
export function edgePasses(m: RunMachine, edge: PlanNode['in'][number]): boolean {
  if (notTaken(m, edge) !== undefined) return false;
  if (!edge.condition) return true;
  try {
    return truthy(edge.condition(m.context));
  } catch {
    return false;
  }
}

/** Records the passing edges among `edges` as traversed. */
export function traverse(m: RunMachine, edges: readonly PlanNode['in'][number][]): void {
  for (const e of edges) if (edgePasses(m, e)) m.traversed.push(e.id);
}

/** Why a node was skipped, naming each incoming edge not taken. */
function skipMessage(edges: SkipReason['edges']): string {
  const from = (list: SkipReason['edges']) => list.map((e) => `"${e.from_node_key}"`).join(', ');
  if (edges.every((e) => e.not_taken === undefined)) {
    return `every incoming edge has a condition and all ${edges.length} evaluated false (from ${from(edges)})`;
  }
  const parts: string[] = [];
  const failed = edges.filter((e) => e.not_taken === 'source_failed');
  const fine = edges.filter((e) => e.not_taken === 'source_did_not_fail');
  const falseOnes = edges.filter((e) => e.not_taken === undefined);
  if (failed.length > 0) parts.push(`${from(failed)} failed and its failure follows its on_failure edges`);
  if (fine.length > 0) parts.push(`${from(fine)} did not fail, so its on_failure edge is not followed`);
  if (falseOnes.length > 0) parts.push(`the condition from ${from(falseOnes)} evaluated false`);
  return `no incoming edge was taken: ${parts.join('; ')}`;
}
