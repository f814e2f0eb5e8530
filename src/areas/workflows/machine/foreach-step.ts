import { newId } from '../../../lib/ids.js';
import { nextAttempt } from '../../../worker/retry-policy.js';
import { ItemRun, kindOf, newItem } from '../foreach.js';
import { describeThrown } from '../jsonlogic.js';
import type { RunMachine } from '../machine.js';
import { FOREACH_LIMITS } from '../node-config.js';
import type { PlanNode } from '../plan.js';
import {
  type Invoke,
  type ItemState,
  invokeKey,
  isFinished,
  type NodeState,
  nodeRetryPolicy,
  retryAt,
} from '../run-state.js';
import { noteChild } from './calls.js';
import { reach } from './edges.js';

/** FOREACH nodes (docs/workflows.md "FOREACH"): a list's items, each an attempt of its own. */

/**
 * A FOREACH (docs/workflows.md "FOREACH"): reached, it evaluates `items` (a list of at most
 * max_items) and starts items in order, at most `concurrency` at once, each an action call or a
 * child run with the item in its context; it completes with every item's result in item order,
 * or, with on_item_failure "fail", stops starting items at the first failure and fails once the
 * items in flight end.
 */
export function stepForEach(
  m: RunMachine,
  node: PlanNode,
  st: NodeState,
  now: Date,
  nowIso: string,
): boolean {
  const each = node.forEach as NonNullable<PlanNode['forEach']>;
  if (st.status === 'pending') {
    if (!node.preds.every((k) => isFinished(m.state(k)))) return false;
    if (m.simulate) m.seen.set(node.key, m.currentContext());
    if (reach(m, node, st, nowIso, node.in) !== 'run') return true;
    m.beginAttempt(st, now);
    const values = forEachItems(m, node, st, now);
    if (values === undefined) return true;
    st.input = { count: values.length, concurrency: each.concurrency, on_item_failure: each.onItemFailure };
    m.itemRuns.set(node.key, new ItemRun(values));
    scheduleItems(m, node, st, now);
    return true;
  }
  if (st.status !== 'running') return false;
  if (!m.itemRuns.has(node.key)) {
    // A resumed run: the list is evaluated again on the same context (completed outputs are kept).
    const values = forEachItems(m, node, st, now);
    if (values === undefined) return true;
    m.itemRuns.set(node.key, new ItemRun(values, m.persistedItems?.get(node.key) ?? []));
  }
  return scheduleItems(m, node, st, now);
}

/** The list a FOREACH goes over, or undefined after failing the node (not a list, too long). */
export function forEachItems(
  m: RunMachine,
  node: PlanNode,
  st: NodeState,
  now: Date,
): readonly unknown[] | undefined {
  const each = node.forEach as NonNullable<PlanNode['forEach']>;
  let values: unknown;
  try {
    values = each.items(m.context);
  } catch (err) {
    m.attemptFailed(node, st, `items: ${describeThrown(err)}`, now, true);
    return undefined;
  }
  if (!Array.isArray(values)) {
    m.attemptFailed(node, st, `items: must yield a list, it yielded ${kindOf(values)}`, now, true);
    return undefined;
  }
  if (values.length > each.maxItems) {
    m.attemptFailed(
      node,
      st,
      `items: ${values.length} items, more than max_items ${each.maxItems} (at most ${FOREACH_LIMITS.maxItems})`,
      now,
      true,
    );
    return undefined;
  }
  return values;
}

/** Readies the FOREACH's items that may run now; finishes the node once no item is left. */
export function scheduleItems(m: RunMachine, node: PlanNode, st: NodeState, now: Date): boolean {
  const each = node.forEach as NonNullable<PlanNode['forEach']>;
  const items = m.itemsOf(node);
  const nowIso = now.toISOString();
  let changed = false;
  for (const item of items.open) {
    const inv: Invoke = { node, state: st, item, interrupted: false };
    const key = invokeKey(inv);
    if (m.ready.has(key) || m.inFlightNow.has(key)) continue;
    if (item.child_run_id !== null) noteChild(m, { node, state: st, item, runId: item.child_run_id });
    else if (item.resume_at !== null) {
      if (item.resume_at <= nowIso) m.ready.set(key, inv);
    } else {
      // In flight with no timer after a resume: an action's attempt was interrupted (a child run is
      // written with its start, so a call item without one never started it).
      inv.interrupted = node.call === undefined && item.attempts > 0;
      m.ready.set(key, inv);
    }
  }
  const stopping = items.firstFailed !== undefined && each.onItemFailure === 'fail';
  while (!stopping && items.open.size < each.concurrency) {
    const index = items.nextIndex();
    if (index === undefined) break;
    const context = { ...m.context, item: items.values[index], index };
    let input: unknown;
    let problem: string | undefined;
    try {
      input = (node.mapping as (c: unknown) => unknown)(context);
    } catch (err) {
      problem = `${node.call ? 'call.input' : 'action.input_mapping'}: ${describeThrown(err)}`;
    }
    const item = newItem(m.simulate ? '' : newId(), index, input ?? null);
    items.add(item);
    m.markItem(node, item);
    const inv: Invoke = { node, state: st, item, interrupted: false };
    if (problem !== undefined) {
      m.beginInvoke(inv, now);
      m.invokeFailed(inv, problem, now, true);
      changed = true;
      if (each.onItemFailure === 'fail') break;
      continue;
    }
    m.ready.set(invokeKey(inv), inv);
  }
  if (items.open.size > 0 || (!stopping && items.nextIndex() !== undefined)) return changed;
  const failed = items.firstFailed;
  if (failed !== undefined && each.onItemFailure === 'fail') {
    const left = items.notStarted();
    m.finalFailure(
      node,
      st,
      `WORKFLOW.ITEM_FAILED: item ${failed.index} failed: ${failed.error}` +
        (left > 0 ? `; ${left} of ${items.values.length} items were not started` : ''),
      nowIso,
    );
  } else m.complete(st, { results: items.results() }, nowIso);
  return true;
}

/** Starts an attempt of a FOREACH item. */
export function beginItem(m: RunMachine, inv: Invoke, item: ItemState, now: Date): void {
  m.ready.delete(invokeKey(inv));
  item.attempts++;
  item.status = 'running';
  item.started_at ??= now.toISOString();
  item.resume_at = null;
  m.markItem(inv.node, item);
}

/** An item's attempt answered. */
export function itemSucceeded(m: RunMachine, inv: Invoke, item: ItemState, output: unknown, now: Date): void {
  item.status = 'completed';
  item.output = output;
  item.error = null;
  item.completed_at = now.toISOString();
  item.resume_at = null;
  m.itemsOf(inv.node).finished(item);
  m.markItem(inv.node, item);
}

/** An item's attempt failed: its node's retry_policy decides, per item. */
export function itemFailed(
  m: RunMachine,
  inv: Invoke,
  item: ItemState,
  message: string,
  now: Date,
  final: boolean,
  retryAfterMs?: number,
): void {
  m.ready.delete(invokeKey(inv));
  if (!m.wants(inv)) return;
  const next = nextAttempt(nodeRetryPolicy(inv.node.retry), item.attempts - item.interruptions);
  item.error = message;
  item.child_run_id = null;
  if (!final && !m.simulate && next.retry) item.resume_at = retryAt(next.delayMs, now, retryAfterMs);
  else {
    item.status = 'failed';
    item.completed_at = now.toISOString();
    item.resume_at = null;
    m.itemsOf(inv.node).finished(item);
  }
  m.markItem(inv.node, item);
}

/** The run ended: the items still open fail with `why` (their awaited child runs are orphans). */
export function stopItems(m: RunMachine, why: string, nowIso: string): void {
  for (const [key, items] of m.itemRuns) {
    for (const item of [...items.open]) {
      if (item.child_run_id !== null) m.orphans.push(item.child_run_id);
      item.status = 'failed';
      item.error = why;
      item.completed_at = nowIso;
      item.resume_at = null;
      item.child_run_id = null;
      items.finished(item);
      m.dirtyItems.set(item, key);
    }
  }
}
