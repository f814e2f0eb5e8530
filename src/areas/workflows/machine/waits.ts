import { describeThrown } from '../jsonlogic.js';
import type { RunMachine } from '../machine.js';
import type { PlanNode } from '../plan.js';
import type { NodeState } from '../run-state.js';
import { renderTemplate } from '../template.js';
import { eventWaitKey, keyProblem, waitKey } from '../wait-spec.js';

/** DELAY and WAIT_EVENT nodes (docs/workflows.md "DELAY and until_template", "WAIT_EVENT"): persisted waits. */

/**
 * A WAIT_EVENT is reached (docs/workflows.md "WAIT_EVENT"): its key is evaluated now, on the
 * run's context, and it waits, `running`, until an event brings that key or its timeout passes.
 * A key that cannot be evaluated or is no scalar fails the node at once (no retry changes it).
 */
export function startWait(m: RunMachine, node: PlanNode, st: NodeState, now: Date): void {
  m.beginAttempt(st, now);
  const wait = node.wait as NonNullable<PlanNode['wait']>;
  const timeoutAt = new Date(now.getTime() + (node.config?.timeout_ms as number)).toISOString();
  let key: unknown;
  let problem: string | undefined;
  if (wait.run) {
    try {
      key = wait.run(m.context);
      const notKey = keyProblem(key);
      if (notKey !== undefined) problem = `correlation.run: ${notKey}`;
    } catch (err) {
      // The compiled expression names itself (`correlation.run: ...`).
      problem = describeThrown(err);
    }
  }
  const correlationKey = problem === undefined ? (key ?? null) : null;
  st.input = { event_type: wait.spec.eventType, correlation_key: correlationKey, timeout_at: timeoutAt };
  if (problem !== undefined) {
    m.attemptFailed(node, st, problem, now, true);
    return;
  }
  const waiting = waitKey(wait.spec.id, key);
  if (m.simulate) {
    // The simulation waits for nothing: the first of the given events that brings the key, else a timeout.
    const match = m.simulatedEvents.find((e) => eventWaitKey(wait.spec, wait.event, e).key === waiting);
    m.complete(
      st,
      { event: match ?? null, timed_out: match === undefined, simulated: true },
      now.toISOString(),
    );
    return;
  }
  // A persisted wait: the run is released until the timeout; an event that brings the key ends it sooner.
  st.resume_at = timeoutAt;
  st.wait_kind = 'event';
  st.wait_key = waiting;
  m.dirty.add(st);
}

/** The engine took a WAIT_EVENT's wait from the store at its timeout: no event came. */
export function waitTimedOut(m: RunMachine, st: NodeState, now: Date): void {
  m.timeouts.delete(st.key);
  if (!m.accepts(st)) return;
  m.complete(st, { event: null, timed_out: true }, now.toISOString());
}

/** An event took the wait before its timeout (the store holds the node completed with `output`). */
export function waitResolved(m: RunMachine, st: NodeState, output: unknown, completedAt: string): void {
  m.timeouts.delete(st.key);
  if (!m.accepts(st)) return;
  m.complete(st, output, completedAt);
}

/**
 * The WAIT_EVENTs waiting now: what a release must check an event did not take meanwhile (one whose
 * key was cleared was taken at its timeout, and completes as timed out).
 */
export function waitingForEvents(m: RunMachine): NodeState[] {
  const out: NodeState[] = [];
  for (const st of m.nodes.values())
    if (st.wait_kind === 'event' && st.wait_key !== null && st.status === 'running') out.push(st);
  return out;
}

export function startDelay(m: RunMachine, node: PlanNode, st: NodeState, now: Date): void {
  m.beginAttempt(st, now);
  const nowMs = now.getTime();
  let untilMs = nowMs;
  const delayMs = node.config?.delay_ms as number | undefined;
  if (delayMs !== undefined) untilMs = nowMs + delayMs;
  if (node.template) {
    try {
      // With both delay_ms and until_template, the DELAY ends at the later of the two.
      untilMs = Math.max(untilMs, renderTemplate(node.template, m.context, now).at.getTime());
    } catch (err) {
      // A DELAY run node's input is {delay_ms: <number>} (docs/workflows.md "DELAY and
      // until_template"): nothing was scheduled, so 0, with the template that failed (additive) so
      // the input shows what could not be rendered.
      st.input = { delay_ms: 0, until_template: node.config?.until_template };
      m.attemptFailed(node, st, `until_template: ${describeThrown(err)}`, now);
      return;
    }
  }
  const until = new Date(untilMs).toISOString();
  // delay_ms is what this DELAY waits, computed when it is scheduled: the configured delay_ms, or
  // the time left until the rendered timestamp (0 if it is past), whichever is later. `until` is
  // additive: the instant it ends.
  const wait = Math.max(0, untilMs - nowMs);
  st.input = { delay_ms: wait, until };
  // Rendered: an earlier attempt's error no longer applies.
  st.error = null;
  if (m.simulate) {
    m.complete(st, { simulated: true, skipped_delay: true, until, delay_ms: wait }, now.toISOString());
    return;
  }
  if (wait === 0) {
    m.complete(st, { until, delay_ms: 0 }, now.toISOString());
    return;
  }
  // A persisted timer: the engine releases the run until `until`; no process sleeps through it.
  st.resume_at = until;
  st.wait_kind = 'delay';
  m.dirty.add(st);
}
