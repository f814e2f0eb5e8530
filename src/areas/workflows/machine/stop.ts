import type { RunMachine } from '../machine.js';
import { awaitedChild } from './calls.js';
import { stopItems } from './foreach-step.js';

/**
 * The run ended while other branches still had nodes running (waiting on a timer, or an ACTION the
 * engine was calling): they fail with a reason, so no node is left running under a finished run.
 * Pending nodes stay pending (remaining unvisited nodes are not executed: docs/workflows.md "States").
 */
export function stopRunning(m: RunMachine, nowIso: string): void {
  m.ready.clear();
  m.timeouts.clear();
  const why =
    m.run.status === 'failed'
      ? `stopped: the run failed (${m.run.error})`
      : 'stopped: the run completed (an END node was reached) while this node was still running';
  stopItems(m, why, nowIso);
  for (const st of m.nodes.values()) {
    if (st.status !== 'running') continue;
    const child = awaitedChild(st);
    if (child !== null) m.orphans.push(child);
    st.status = 'failed';
    st.error =
      st.resume_at === null && st.type === 'ACTION'
        ? `${why}; the attempt in flight was abandoned`
        : child !== null
          ? `${why}; its child run is cancelled`
          : why;
    st.completed_at = nowIso;
    st.resume_at = null;
    st.wait_kind = null;
    st.wait_key = null;
    m.dirty.add(st);
    m.observer?.('finish', st.key);
  }
}
