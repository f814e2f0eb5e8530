import { joinTimeout, joinVerdict } from '../join.js';
import type { RunMachine } from '../machine.js';
import type { PlanNode } from '../plan.js';
import { isFinished, type NodeState } from '../run-state.js';
import { asJoinSees, edgePasses, reach, traverse } from './edges.js';

/**
 * A JOIN (docs/workflows.md "Branches and JOIN"): ALL completes once every
 * predecessor finished and none failed; ANY as soon as one completed; N_OF_M as soon as
 * `n_required` completed. It fails once every predecessor finished without that, or when its
 * `timeout_ms` (counted from the first predecessor to finish, a persisted timer) runs out first.
 */
export function stepJoin(m: RunMachine, node: PlanNode, st: NodeState, now: Date, nowIso: string): boolean {
  const timerAhead = st.resume_at !== null && st.resume_at > nowIso;
  // Once its timeout ran out, a JOIN is judged on the branches that arrived by then: one that
  // finished later (in the same step, after a pause of the worker) does not count.
  const cutoff = st.wait_kind === 'join_timeout' && !timerAhead ? st.resume_at : null;
  const finishedBy = (k: string) => {
    const p = m.state(k);
    return isFinished(p) && (cutoff === null || (p.completed_at as string) <= cutoff);
  };
  const finishedEdges = node.in.filter((e) => finishedBy(e.from));
  const all = node.preds.every(finishedBy);
  const verdict = joinVerdict(node, (k) => asJoinSees(m, node, k), finishedBy);
  // A failed attempt waiting for its retry (retry_policy applies to every node type).
  if (st.wait_kind === 'retry' && timerAhead) return false;
  if (verdict.state === 'waiting') {
    if (st.status === 'pending') {
      const timeoutMs = joinTimeout(node);
      // A branch arrives when its predecessor finished (not skipped) and its edge passes.
      const arrivals = finishedEdges
        .filter((e) => m.state(e.from).status !== 'skipped' && edgePasses(m, e))
        .map((e) => Date.parse(m.state(e.from).completed_at as string));
      if (timeoutMs === null || arrivals.length === 0) return false;
      // The first branch arrived: the JOIN waits, bounded by its timeout (a persisted timer).
      if (m.simulate) m.seen.set(node.key, m.currentContext());
      m.beginAttempt(st, now);
      st.input = null;
      st.resume_at = new Date(Math.min(...arrivals) + timeoutMs).toISOString();
      st.wait_kind = 'join_timeout';
      return true;
    }
    if (timerAhead || st.resume_at === null) return false;
    traverse(m, finishedEdges);
    m.attemptFailed(
      node,
      st,
      `JOIN ${verdict.mode} timed out: timeout_ms ${joinTimeout(node)} passed after the first predecessor finished (${verdict.summary})`,
      now,
      true,
    );
    return true;
  }
  if (st.status === 'pending') {
    if (m.simulate) m.seen.set(node.key, m.currentContext());
    if (reach(m, node, st, nowIso, all ? node.in : finishedEdges) !== 'run') return true;
    m.beginAttempt(st, now);
    st.input = null;
  } else if (st.wait_kind === 'retry') {
    // The retry of a failed JOIN is due: a new attempt, decided on the predecessors as they are.
    m.beginAttempt(st, now);
  } else {
    // Decided while its timeout was running.
    traverse(m, finishedEdges);
  }
  if (verdict.state === 'satisfied') m.complete(st, verdict.output, nowIso);
  else m.attemptFailed(node, st, verdict.message, now);
  return true;
}
