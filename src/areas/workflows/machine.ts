/**
 * The run state machine (docs/workflows.md "Execution rules" and the run and run-node "States"),
 * pure: it changes in-memory run and node states and says what must happen next (a `Step`); it
 * never touches the store, a plugin or a timer. The durable engine (engine.ts) persists the changes
 * and performs the barriers; the simulation (POST /event_subscription/{id}/test) runs the very same
 * machine with `simulate: true`, so both apply the same states.
 *
 * Nodes run as soon as they are ready, so independent branches overlap: a node is ready when every
 * predecessor has finished (completed, failed with continue_on_error, or skipped); a JOIN ANY or
 * N_OF_M is ready as soon as enough predecessors completed (docs/workflows.md "Branches and JOIN").
 * Kahn order is the order nodes are looked at, not a sequence: `advance` answers every ACTION that
 * may start now, and the engine runs them side by side.
 */
// Long file: the run's state and the transitions every node type shares (attempts, retries,
// completion, failure, the run's end) read best against docs/workflows.md "States" in one place.

import { depthOf } from '../../lib/causation.js';
import { nextAttempt } from '../../worker/retry-policy.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { ItemRun } from './foreach.js';
import { awaitedChild, type ChildSpawn, noteChild, reachInvoke, simulateInvoke } from './machine/calls.js';
import { reach } from './machine/edges.js';
import { execute } from './machine/execute.js';
import { beginItem, itemFailed, itemSucceeded, stepForEach } from './machine/foreach-step.js';
import { stepJoin } from './machine/join-step.js';
import { stopRunning } from './machine/stop.js';
import { startDelay, startWait } from './machine/waits.js';
import type { Plan, PlanNode } from './plan.js';
import {
  attemptKey,
  type ChildOutcome,
  type ChildWait,
  type ExpressionContext,
  eventContext,
  type Invoke,
  type ItemState,
  invokeKey,
  isFinished,
  type NodeState,
  nodeError,
  nodeRetryPolicy,
  type RunState,
  retryAt,
  type Step,
} from './run-state.js';

/**
 * A run's state and the transitions every node type shares. The transitions of each kind of node
 * live beside it, in machine/: edges and skips, JOIN, DELAY and WAIT_EVENT, ACTION and CALL (and
 * child runs), FOREACH, plugin limits. They change the same state, so members they use are not
 * private; code outside the machine changes a run only through these transitions.
 */
export class RunMachine {
  /** Node states changed since the last `takeChanges`. */
  readonly dirty = new Set<NodeState>();
  runDirty = false;
  /** Edges that passed when their target was reached, in the order targets were reached. */
  readonly traversed: string[] = [];
  /** Simulation only: the context each node saw when it was reached. */
  readonly seen = new Map<string, ExpressionContext>();
  /**
   * Simulation only: why an ACTION's evaluated input would be refused by its action's input_schema,
   * so the test bench fails where a real run would (undefined: it would be accepted).
   */
  simulatedInputProblem?: (nodeKey: string, input: unknown) => string | undefined;
  /** Optional trace of node transitions (attempt starts, finishes, skips), e.g. for tests and metrics. */
  observer?: (event: 'start' | 'finish' | 'skip', key: string) => void;
  readonly context: ExpressionContext;
  /** The causation depth of the triggering event: runs it leads to are one deeper. */
  readonly depth: number;
  /** ACTIONs reached (input computed) and not started yet: the engine starts them. */
  readonly ready = new Map<string, Invoke>();
  /** WAIT_EVENTs whose timeout passed, for the engine to take from the store (`Step.timeouts`). */
  readonly timeouts = new Map<string, NodeState>();
  /** Simulation only: the events a simulated WAIT_EVENT may take (POST .../test `events`). */
  simulatedEvents: readonly CloudEvent[] = [];
  /** Simulation only: a child run simulated in place (CALL, FOREACH with call). */
  simulatedCall?: (subscriptionId: string, input: unknown) => ChildOutcome;
  /** FOREACH items, by node key (docs/workflows.md "FOREACH"). */
  readonly itemRuns = new Map<string, ItemRun>();
  /** Item states changed since the last `takeChanges`, with their node's key. */
  readonly dirtyItems = new Map<ItemState, string>();
  /** The run whose node waits for this one's end (an awaited child): the end wakes it. */
  parentRunId: string | null = null;
  /** Child runs to create with the next write. */
  spawns: ChildSpawn[] = [];
  /** Child runs waited for whose end the engine must read (`Step.children`), by run id. */
  readonly childWaits = new Map<string, ChildWait>();
  /** Child runs this drive knows to be still running: their end wakes the run. */
  readonly childrenSeen = new Set<string>();
  /** Awaited child runs left in flight when the run ended: the engine cancels them. */
  readonly orphans: string[] = [];
  /** Whether an attempt of the run waited for a plugin instance's limit (its end gives up its place). */
  waitedForLimit = false;
  /** Attempts asking their instance's limits now, by invoke key: true once a slot freed for one meanwhile. */
  readonly askingLimit = new Map<string, boolean>();
  /** What the engine has in flight in the current `advance`. */
  inFlightNow: ReadonlySet<string> = NONE;

  constructor(
    readonly plan: Plan,
    readonly event: CloudEvent,
    readonly run: RunState,
    readonly nodes: Map<string, NodeState>,
    readonly simulate = false,
    /** FOREACH items as persisted, by node key (a resumed run). */
    readonly persistedItems?: ReadonlyMap<string, readonly ItemState[]>,
  ) {
    this.context = { event: eventContext(event), nodes: {} };
    this.depth = depthOf(event);
    for (const n of plan.nodes) {
      const st = nodes.get(n.key);
      if (st?.status === 'completed') this.context.nodes[n.key] = { output: st.output };
      else if (st?.status === 'failed' && n.handlesFailure)
        this.context.nodes[n.key] = { output: null, error: nodeError(st.error) };
    }
  }

  /** Fresh pending node states for a new run (one per graph node, docs/workflows.md "States"). */
  static pendingStates(plan: Plan, ids: (node: PlanNode) => string): Map<string, NodeState> {
    const map = new Map<string, NodeState>();
    for (const n of plan.nodes) {
      map.set(n.key, {
        id: ids(n),
        node_id: n.id,
        key: n.key,
        type: n.type,
        position: n.index,
        status: 'pending',
        input: null,
        output: null,
        error: null,
        skip_reason: null,
        started_at: null,
        completed_at: null,
        attempts: 0,
        interruptions: 0,
        resume_at: null,
        wait_kind: null,
        wait_key: null,
      });
    }
    return map;
  }

  /** The expression context as it stands (event + outputs of completed nodes). */
  currentContext(): ExpressionContext {
    return { event: this.context.event, nodes: { ...this.context.nodes } };
  }

  takeChanges(): {
    run: boolean;
    nodes: NodeState[];
    items: Array<{ nodeKey: string; item: ItemState }>;
    spawns: ChildSpawn[];
  } {
    const out = {
      run: this.runDirty,
      nodes: [...this.dirty],
      items:
        this.dirtyItems.size === 0 ? [] : [...this.dirtyItems].map(([item, nodeKey]) => ({ nodeKey, item })),
      spawns: this.spawns,
    };
    this.dirty.clear();
    this.dirtyItems.clear();
    if (this.spawns.length > 0) this.spawns = [];
    this.runDirty = false;
    return out;
  }

  /** Whether anything is left for the next write. */
  hasChanges(): boolean {
    return this.runDirty || this.dirty.size > 0 || this.dirtyItems.size > 0 || this.spawns.length > 0;
  }

  /**
   * Moves every branch forward as far as it can go without I/O: runs the side-effect-free nodes that
   * are ready (COMPUTE, SWITCH, JOIN, END, DELAYs that ended, skips), and answers the ACTIONs that
   * may start and the earliest timer. `inFlight`: ACTIONs the engine is running now. When the run
   * ends (every node finished, an END reached, or a node failed without continue_on_error), nodes
   * still running are stopped (`stopRunning`) and the answer is empty.
   */
  advance(now: Date, inFlight: ReadonlySet<string> = NONE): Step {
    const nowIso = now.toISOString();
    this.inFlightNow = inFlight;
    let progressed = true;
    while (this.run.status === 'running' && progressed) {
      progressed = false;
      for (const node of this.plan.nodes) {
        if (this.run.status !== 'running') break;
        if (inFlight.has(node.key) || this.ready.has(node.key) || this.timeouts.has(node.key)) continue;
        const st = this.nodes.get(node.key) as NodeState;
        if (isFinished(st)) continue;
        if (this.step(node, st, now, nowIso)) progressed = true;
      }
      if (this.simulate && !progressed && this.ready.size > 0 && this.run.status === 'running') {
        // A simulation calls no plugin: the ACTIONs that are ready answer together, as if every
        // call took the same time, after the side-effect-free nodes that were ready with them.
        for (const inv of [...this.ready.values()]) simulateInvoke(this, inv, now);
        progressed = true;
      }
    }
    if (this.run.status === 'running' && this.plan.nodes.every((n) => isFinished(this.state(n.key)))) {
      // Every node finished (docs/workflows.md "States", running -> completed).
      this.endRun('completed', null, nowIso);
    }
    if (this.run.status !== 'running') {
      stopRunning(this, nowIso);
      return { invokes: [], wakeAt: null, timeouts: [], children: [] };
    }
    let wakeAt: string | null = null;
    const earliest = (at: string | null) => {
      if (at !== null && (wakeAt === null || at < wakeAt)) wakeAt = at;
    };
    for (const n of this.plan.nodes) {
      const st = this.state(n.key);
      if (st.status === 'running' && st.resume_at !== null && !inFlight.has(n.key)) earliest(st.resume_at);
    }
    for (const [key, items] of this.itemRuns) {
      for (const item of items.open) {
        if (item.resume_at !== null && !inFlight.has(attemptKey(key, item.index))) earliest(item.resume_at);
      }
    }
    return {
      invokes: [...this.ready.values()].filter((i) => !inFlight.has(invokeKey(i))),
      wakeAt,
      timeouts: this.timeouts.size === 0 ? [] : [...this.timeouts.values()],
      children: this.childWaits.size === 0 ? [] : [...this.childWaits.values()],
    };
  }

  /** One look at an unfinished node; true when it changed state. */
  step(node: PlanNode, st: NodeState, now: Date, nowIso: string): boolean {
    if (node.type === 'JOIN') return stepJoin(this, node, st, now, nowIso);
    if (node.type === 'FOREACH') return stepForEach(this, node, st, now, nowIso);
    if (st.status === 'running') {
      const child = node.type === 'CALL' ? awaitedChild(st) : null;
      if (child !== null) {
        noteChild(this, { node, state: st, runId: child });
        return false;
      }
      if (st.resume_at !== null) {
        if (st.resume_at > nowIso) return false;
        if (node.type === 'WAIT_EVENT') {
          // The timeout passed, unless an event took the wait meanwhile: the engine asks the store.
          this.timeouts.set(node.key, st);
          return false;
        }
        if (node.type === 'DELAY') {
          // A wait that ended completes the DELAY; a retry of a failed until_template (the last
          // attempt's error is kept while waiting) renders it again.
          if (st.wait_kind === 'retry') startDelay(this, node, st, now);
          else {
            const input = (st.input ?? {}) as { delay_ms?: number; until?: string };
            this.complete(st, { until: st.resume_at, delay_ms: input.delay_ms ?? 0 }, nowIso);
          }
          return true;
        }
        // A retry is due (a CALL's starts a new child run).
        if (node.type === 'ACTION' || node.type === 'CALL') {
          this.ready.set(node.key, { node, state: st, interrupted: false });
          return false;
        }
        execute(this, node, st, now);
        return true;
      }
      // In flight with no timer: an ACTION's attempt was interrupted (the process stopped
      // mid-attempt); a CALL's child is written with its start, so one without a child never started.
      if (node.type === 'ACTION' || node.type === 'CALL') {
        this.ready.set(node.key, { node, state: st, interrupted: node.type === 'ACTION' });
        return false;
      }
      // Every other type has no side effect, so re-running the attempt is safe.
      if (node.type === 'WAIT_EVENT') startWait(this, node, st, now);
      else execute(this, node, st, now);
      return true;
    }
    // pending: reached once every predecessor finished.
    if (!node.preds.every((k) => isFinished(this.state(k)))) return false;
    if (this.simulate) this.seen.set(node.key, this.currentContext());
    if (reach(this, node, st, nowIso, node.in) !== 'run') return true;
    if (node.type === 'ACTION' || node.type === 'CALL') return reachInvoke(this, node, st, now);
    if (node.type === 'DELAY') startDelay(this, node, st, now);
    else if (node.type === 'WAIT_EVENT') startWait(this, node, st, now);
    else execute(this, node, st, now);
    return true;
  }

  state(key: string): NodeState {
    return this.nodes.get(key) as NodeState;
  }

  /** Counts a new attempt: the node is running with its input; nothing is waiting. */
  beginAttempt(st: NodeState, now: Date): void {
    this.ready.delete(st.key);
    st.attempts++;
    st.status = 'running';
    st.started_at ??= now.toISOString();
    st.resume_at = null;
    st.wait_kind = null;
    st.wait_key = null;
    this.dirty.add(st);
    this.observer?.('start', st.key);
  }

  /** Whether an attempt of `st` may still start: the run goes on and the node is not finished. */
  accepts(st: NodeState): boolean {
    return this.run.status === 'running' && !isFinished(st);
  }

  /** Whether the attempt `inv` may still start or be recorded: its node (and item) are not finished. */
  wants(inv: Invoke): boolean {
    return this.accepts(inv.state) && (inv.item === undefined || inv.item.status === 'running');
  }

  /** The node's or the item's attempt state (attempts, interruptions, input). */
  attemptOf(inv: Invoke): NodeState | ItemState {
    return inv.item ?? inv.state;
  }

  /** Starts an attempt of an ACTION, a CALL or a FOREACH item (`beginAttempt` for the item). */
  beginInvoke(inv: Invoke, now: Date): void {
    const item = inv.item;
    if (item === undefined) {
      this.beginAttempt(inv.state, now);
      return;
    }
    beginItem(this, inv, item, now);
  }

  markInterrupted(inv: Invoke): void {
    const target = this.attemptOf(inv);
    target.interruptions++;
    if (inv.item) this.markItem(inv.node, inv.item);
    else this.dirty.add(inv.state);
  }

  /** An attempt answered; ignored when the run ended meanwhile (the node was stopped). */
  invokeSucceeded(inv: Invoke, output: unknown, now: Date): void {
    if (!this.wants(inv)) return;
    const value = output === undefined ? null : output;
    if (inv.item === undefined) {
      this.complete(inv.state, value, now.toISOString());
      return;
    }
    itemSucceeded(this, inv, inv.item, value, now);
  }

  /** An attempt failed: its node's retry_policy decides (per item for a FOREACH). */
  invokeFailed(inv: Invoke, message: string, now: Date, final = false, retryAfterMs?: number): void {
    if (inv.item === undefined) {
      this.attemptFailed(inv.node, inv.state, message, now, final, retryAfterMs);
      return;
    }
    itemFailed(this, inv, inv.item, message, now, final, retryAfterMs);
  }

  markItem(node: PlanNode, item: ItemState): void {
    this.dirtyItems.set(item, node.key);
  }

  itemsOf(node: PlanNode): ItemRun {
    return this.itemRuns.get(node.key) as ItemRun;
  }

  /**
   * An attempt failed: retry (per retry_policy) or fail the node. `final` skips the retry policy;
   * `retryAfterMs` (an HTTP Retry-After) makes the next attempt wait at least that long.
   */
  attemptFailed(
    node: PlanNode,
    st: NodeState,
    message: string,
    now: Date,
    final = false,
    retryAfterMs?: number,
  ): void {
    this.ready.delete(st.key);
    if (this.run.status !== 'running' || isFinished(st)) return;
    const next = nextAttempt(nodeRetryPolicy(node.retry), st.attempts - st.interruptions);
    if (!final && !this.simulate && next.retry) {
      st.status = 'running';
      st.error = message;
      st.wait_key = null;
      st.wait_kind = 'retry';
      st.resume_at = retryAt(next.delayMs, now, retryAfterMs);
      this.dirty.add(st);
      return;
    }
    this.finalFailure(node, st, message, now.toISOString());
  }

  finalFailure(node: PlanNode, st: NodeState, message: string, nowIso: string): void {
    st.status = 'failed';
    st.error = message;
    st.completed_at = nowIso;
    st.resume_at = null;
    st.wait_kind = null;
    st.wait_key = null;
    this.dirty.add(st);
    this.observer?.('finish', st.key);
    if (node.handlesFailure) {
      // A failure branch takes over: the nodes after it read what went wrong.
      this.context.nodes[st.key] = { output: null, error: nodeError(message) };
      return;
    }
    if (!node.continueOnError) {
      // docs/workflows.md "States": node failure with continue_on_error false -> run failed, stops at once.
      this.endRun('failed', `node "${node.key}" (${node.type}) failed: ${message}`, nowIso);
    }
  }

  endRun(status: 'completed' | 'failed', error: string | null, nowIso: string): void {
    this.run.status = status;
    this.run.error = error;
    this.run.completed_at = nowIso;
    this.runDirty = true;
  }

  complete(st: NodeState, output: unknown, nowIso: string): void {
    st.status = 'completed';
    st.output = output;
    st.error = null;
    st.completed_at = nowIso;
    st.resume_at = null;
    st.wait_kind = null;
    st.wait_key = null;
    this.context.nodes[st.key] = { output };
    this.dirty.add(st);
    this.observer?.('finish', st.key);
  }
}

const NONE: ReadonlySet<string> = new Set();
