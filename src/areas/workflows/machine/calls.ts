import { describeThrown } from '../jsonlogic.js';
import type { RunMachine } from '../machine.js';
import type { PlanNode } from '../plan.js';
import type { ChildOutcome, ChildWait, Invoke, NodeState } from '../run-state.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from '../tables.js';

/**
 * The nodes whose attempts the engine makes (ACTION, CALL): their inputs when reached, the simulated
 * attempt, and the child runs of CALLs and of FOREACH items that call (docs/workflows.md "CALL").
 */

/** A child run to create with the parent's next write (CALL, FOREACH with call). */
export interface ChildSpawn {
  run: WorkflowRunTable;
  nodes: WorkflowRunNodeTable[];
}

/** A CALL waiting for its child run carries `run:<child id>` as its wait key. */
export const CHILD_WAIT = 'run:';

/** The child run a running CALL waits for, or null. */
export const awaitedChild = (st: NodeState): string | null =>
  st.status === 'running' && st.wait_kind === 'child' && st.wait_key !== null
    ? st.wait_key.slice(CHILD_WAIT.length)
    : null;

/** A CALL node's input: the subscription called, the child's trigger data, and its run once started. */
export interface CallInput {
  subscription_id: string;
  input: unknown;
  run_id: string | null;
}

/**
 * An ACTION or a CALL is reached: its input is evaluated now (an ACTION's input_mapping, a CALL's
 * child trigger data) and the engine may start it. An input that cannot be evaluated fails the node
 * at once, despite a retry_policy: it reads a context that no retry changes, and a retry must never
 * call without the input it was meant to have. True when the node changed state.
 */
export function reachInvoke(m: RunMachine, node: PlanNode, st: NodeState, now: Date): boolean {
  let data: unknown;
  try {
    data = (node.mapping as (c: unknown) => unknown)(m.context);
  } catch (err) {
    m.beginAttempt(st, now);
    const what = node.type === 'CALL' ? 'input' : 'input_mapping';
    m.attemptFailed(node, st, `${what}: ${describeThrown(err)}`, now, true);
    return true;
  }
  const call: CallInput | undefined =
    node.type === 'CALL'
      ? { subscription_id: node.call?.subscriptionId as string, input: data, run_id: null }
      : undefined;
  st.input = call ?? data;
  m.dirty.add(st);
  m.ready.set(node.key, { node, state: st, interrupted: false });
  return false;
}

/** The child runs the run waits for (it may be released with no timer while there are any). */
export function awaitedChildren(m: RunMachine): string[] {
  const out: string[] = [];
  for (const st of m.nodes.values()) {
    const child = awaitedChild(st);
    if (child !== null) out.push(child);
  }
  for (const items of m.itemRuns.values())
    for (const item of items.open) if (item.child_run_id !== null) out.push(item.child_run_id);
  return out;
}

/** A simulated attempt (docs/workflows.md "Simulation"): an ACTION echoes its input, a call runs its child in place. */
export function simulateInvoke(m: RunMachine, inv: Invoke, now: Date): void {
  m.beginInvoke(inv, now);
  const target = m.attemptOf(inv);
  if (inv.node.call === undefined) {
    const problem = m.simulatedInputProblem?.(inv.node.key, target.input);
    if (problem !== undefined) m.invokeFailed(inv, problem, now, true);
    else m.invokeSucceeded(inv, { simulated: true, input: target.input }, now);
    return;
  }
  const data = inv.item ? inv.item.input : (inv.state.input as CallInput).input;
  if (!inv.item && !inv.node.call.wait) {
    m.invokeSucceeded(inv, { run_id: null, simulated: true }, now);
    return;
  }
  const outcome = m.simulatedCall?.(inv.node.call.subscriptionId, data) ?? {
    status: 'completed' as const,
    error: null,
    outputs: {},
  };
  settleChild(m, inv, null, outcome, now, true);
}

/** A child run waited for: the engine reads its end unless this drive saw it running. */
export function noteChild(m: RunMachine, wait: ChildWait): void {
  if (!m.childrenSeen.has(wait.runId)) m.childWaits.set(wait.runId, wait);
}

/**
 * The engine made the child run of `inv` (checked, not written yet): it is written with the
 * node's (or item's) attempt, in one write. A CALL with wait false completes at once.
 */
export function childStarted(m: RunMachine, inv: Invoke, child: ChildSpawn, now: Date): void {
  if (!m.wants(inv)) return;
  m.beginInvoke(inv, now);
  m.spawns.push(child);
  const runId = child.run.id;
  if (inv.item) {
    inv.item.child_run_id = runId;
    m.childrenSeen.add(runId);
    m.markItem(inv.node, inv.item);
    return;
  }
  const st = inv.state;
  st.input = { ...(st.input as CallInput), run_id: runId };
  if (inv.node.call?.wait === false) {
    m.complete(st, { run_id: runId }, now.toISOString());
    return;
  }
  st.wait_kind = 'child';
  st.wait_key = `${CHILD_WAIT}${runId}`;
  m.childrenSeen.add(runId);
  m.dirty.add(st);
}

/** The engine read a child run waited for: still running (its end wakes the run), or ended. */
export function childRead(
  m: RunMachine,
  wait: ChildWait,
  outcome: ChildOutcome | undefined,
  now: Date,
): void {
  m.childWaits.delete(wait.runId);
  m.childrenSeen.add(wait.runId);
  if (outcome === undefined) return;
  const inv: Invoke = { node: wait.node, state: wait.state, item: wait.item, interrupted: false };
  settleChild(m, inv, wait.runId, outcome, now, false);
}

export function settleChild(
  m: RunMachine,
  inv: Invoke,
  runId: string | null,
  outcome: ChildOutcome,
  now: Date,
  final: boolean,
): void {
  if (!m.wants(inv)) return;
  if (inv.item) {
    if (inv.item.child_run_id !== runId && runId !== null) return;
    inv.item.child_run_id = null;
  } else {
    if (runId !== null && awaitedChild(inv.state) !== runId) return;
    inv.state.wait_kind = null;
    inv.state.wait_key = null;
  }
  const name = runId === null ? 'the simulated child run' : `child run ${runId}`;
  if (outcome.status === 'completed') {
    const output = { run_id: runId, status: 'completed', outputs: outcome.outputs };
    m.invokeSucceeded(inv, m.simulate ? { ...output, simulated: true } : output, now);
    return;
  }
  const code = outcome.status === 'failed' ? 'WORKFLOW.CHILD_RUN_FAILED' : 'WORKFLOW.CHILD_RUN_CANCELLED';
  const message = `${code}: ${name} ${outcome.status === 'failed' ? 'failed' : 'was cancelled'}: ${outcome.error ?? 'no reason given'}`;
  m.invokeFailed(inv, message, now, final);
}
