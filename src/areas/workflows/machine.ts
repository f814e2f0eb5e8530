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
// Long file: the state machine is one class whose transitions share the run's state; each
// transition is short, and docs/workflows.md "States" reads best against it in one place.

import { depthOf } from '../../lib/causation.js';
import { newId } from '../../lib/ids.js';
import { isPlainObject } from '../../lib/objects.js';
import { nextAttempt } from '../../worker/retry-policy.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { ItemRun, kindOf, newItem } from './foreach.js';
import { joinTimeout, joinVerdict } from './join.js';
import { describeThrown, truthy } from './jsonlogic.js';
import { FOREACH_LIMITS } from './node-config.js';
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
  LIMIT_WAIT,
  type NodeState,
  nodeError,
  nodeRetryPolicy,
  type RunState,
  type SkipReason,
  type Step,
} from './run-state.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';
import { renderTemplate } from './template.js';
import { eventWaitKey, keyProblem, waitKey } from './wait-spec.js';

/** The longest wait a server's Retry-After may impose (a day: longer is a lost cause, not a pause). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** A child run to create with the parent's next write (CALL, FOREACH with call). */
export interface ChildSpawn {
  run: WorkflowRunTable;
  nodes: WorkflowRunNodeTable[];
}

/** A CALL node's input: the subscription called, the child's trigger data, and its run once started. */
interface CallInput {
  subscription_id: string;
  input: unknown;
  run_id: string | null;
}

/** A CALL waiting for its child run carries `run:<child id>` as its wait key. */
const CHILD_WAIT = 'run:';

/** The child run a running CALL waits for, or null. */
const awaitedChild = (st: NodeState): string | null =>
  st.status === 'running' && st.wait_key?.startsWith(CHILD_WAIT)
    ? st.wait_key.slice(CHILD_WAIT.length)
    : null;

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
  private readonly context: ExpressionContext;
  /** The causation depth of the triggering event: runs it leads to are one deeper. */
  readonly depth: number;
  /** ACTIONs reached (input computed) and not started yet: the engine starts them. */
  private readonly ready = new Map<string, Invoke>();
  /** WAIT_EVENTs whose timeout passed, for the engine to take from the store (`Step.timeouts`). */
  private readonly timeouts = new Map<string, NodeState>();
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
  private spawns: ChildSpawn[] = [];
  /** Child runs waited for whose end the engine must read (`Step.children`), by run id. */
  private readonly childWaits = new Map<string, ChildWait>();
  /** Child runs this drive knows to be still running: their end wakes the run. */
  private readonly childrenSeen = new Set<string>();
  /** Awaited child runs left in flight when the run ended: the engine cancels them. */
  readonly orphans: string[] = [];
  /** Whether an attempt of the run waited for a plugin instance's limit (its end gives up its place). */
  waitedForLimit = false;
  /** Attempts asking their instance's limits now, by invoke key: true once a slot freed for one meanwhile. */
  private readonly askingLimit = new Map<string, boolean>();
  /** What the engine has in flight in the current `advance`. */
  private inFlightNow: ReadonlySet<string> = NONE;

  constructor(
    readonly plan: Plan,
    readonly event: CloudEvent,
    readonly run: RunState,
    readonly nodes: Map<string, NodeState>,
    readonly simulate = false,
    /** FOREACH items as persisted, by node key (a resumed run). */
    private readonly persistedItems?: ReadonlyMap<string, readonly ItemState[]>,
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
        for (const inv of [...this.ready.values()]) this.simulateInvoke(inv, now);
        progressed = true;
      }
    }
    if (this.run.status === 'running' && this.plan.nodes.every((n) => isFinished(this.state(n.key)))) {
      // Every node finished (docs/workflows.md "States", running -> completed).
      this.endRun('completed', null, nowIso);
    }
    if (this.run.status !== 'running') {
      this.stopRunning(nowIso);
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

  /** The child runs the run waits for (it may be released with no timer while there are any). */
  awaitedChildren(): string[] {
    const out: string[] = [];
    for (const st of this.nodes.values()) {
      const child = awaitedChild(st);
      if (child !== null) out.push(child);
    }
    for (const items of this.itemRuns.values())
      for (const item of items.open) if (item.child_run_id !== null) out.push(item.child_run_id);
    return out;
  }

  /** One look at an unfinished node; true when it changed state. */
  private step(node: PlanNode, st: NodeState, now: Date, nowIso: string): boolean {
    if (node.type === 'JOIN') return this.stepJoin(node, st, now, nowIso);
    if (node.type === 'FOREACH') return this.stepForEach(node, st, now, nowIso);
    if (st.status === 'running') {
      const child = node.type === 'CALL' ? awaitedChild(st) : null;
      if (child !== null) {
        this.noteChild({ node, state: st, runId: child });
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
          if (st.error !== null) this.startDelay(node, st, now);
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
        this.execute(node, st, now);
        return true;
      }
      // In flight with no timer: the attempt was interrupted (the process stopped mid-attempt).
      if (node.type === 'ACTION') {
        this.ready.set(node.key, { node, state: st, interrupted: true });
        return false;
      }
      // A CALL's child is written with its start: one without a child never started one.
      if (node.type === 'CALL') {
        this.ready.set(node.key, { node, state: st, interrupted: false });
        return false;
      }
      // Every other type has no side effect, so re-running the attempt is safe.
      if (node.type === 'WAIT_EVENT') this.startWait(node, st, now);
      else this.execute(node, st, now);
      return true;
    }
    // pending: reached once every predecessor finished.
    if (!node.preds.every((k) => isFinished(this.state(k)))) return false;
    if (this.simulate) this.seen.set(node.key, this.currentContext());
    const reach = this.reach(node, st, nowIso, node.in);
    if (reach !== 'run') return true;
    if (node.type === 'ACTION') {
      try {
        st.input = (node.mapping as (c: unknown) => unknown)(this.context);
      } catch (err) {
        // Final despite a retry_policy: the mapping reads a context that no retry changes, and a
        // retry must never call the plugin without the input it was meant to have.
        this.beginAttempt(st, now);
        this.attemptFailed(node, st, `input_mapping: ${describeThrown(err)}`, now, true);
        return true;
      }
      this.dirty.add(st);
      this.ready.set(node.key, { node, state: st, interrupted: false });
      return false;
    }
    if (node.type === 'CALL') {
      let data: unknown;
      try {
        data = (node.mapping as (c: unknown) => unknown)(this.context);
      } catch (err) {
        this.beginAttempt(st, now);
        this.attemptFailed(node, st, `input: ${describeThrown(err)}`, now, true);
        return true;
      }
      const input: CallInput = {
        subscription_id: node.call?.subscriptionId as string,
        input: data,
        run_id: null,
      };
      st.input = input;
      this.dirty.add(st);
      this.ready.set(node.key, { node, state: st, interrupted: false });
      return false;
    }
    if (node.type === 'DELAY') this.startDelay(node, st, now);
    else if (node.type === 'WAIT_EVENT') this.startWait(node, st, now);
    else this.execute(node, st, now);
    return true;
  }

  private state(key: string): NodeState {
    return this.nodes.get(key) as NodeState;
  }

  /**
   * The skip rule (execution rule 2) over `edges`: a node is skipped only when it has incoming
   * edges, every one of them has a condition, and every condition is false. An edge without a
   * condition always passes. A JOIN decided early passes only the edges of finished predecessors.
   * Failure branches (docs/workflows.md "Failure branches"): an on_failure edge is taken only when
   * its source failed, and an ordinary edge from a node with on_failure edges only when it did not;
   * an edge not taken counts as one whose condition is false.
   */
  private reach(
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
      const notTaken = this.notTaken(edge);
      if (notTaken !== undefined) {
        falseEdges.push({
          edge_id: edge.id,
          from_node_key: edge.from,
          condition_jsonlogic: edge.conditionJson,
          not_taken: notTaken,
        });
        continue;
      }
      let pass = true;
      if (edge.condition) {
        try {
          pass = truthy(edge.condition(this.context));
        } catch (err) {
          st.attempts = Math.max(st.attempts, 1);
          st.started_at ??= nowIso;
          this.finalFailure(node, st, `edge from "${edge.from}": ${describeThrown(err)}`, nowIso);
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
      this.traversed.push(...passing);
      return 'run';
    }
    st.status = 'skipped';
    st.skip_reason = { message: skipMessage(falseEdges), edges: falseEdges };
    st.completed_at = nowIso;
    st.resume_at = null;
    this.dirty.add(st);
    this.observer?.('skip', st.key);
    return 'skipped';
  }

  /** Counts a new attempt: the node is running with its input; nothing is waiting. */
  beginAttempt(st: NodeState, now: Date): void {
    this.ready.delete(st.key);
    st.attempts++;
    st.status = 'running';
    st.started_at ??= now.toISOString();
    st.resume_at = null;
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
      if (inv.state.wait_key?.startsWith(LIMIT_WAIT)) inv.state.wait_key = null;
      this.beginAttempt(inv.state, now);
      return;
    }
    this.ready.delete(invokeKey(inv));
    item.attempts++;
    item.status = 'running';
    item.started_at ??= now.toISOString();
    item.resume_at = null;
    this.markItem(inv.node, item);
  }

  /** The attempt asks its plugin instance's limits (a slot freed meanwhile is remembered). */
  askLimit(inv: Invoke): void {
    this.askingLimit.set(invokeKey(inv), false);
  }

  /** The attempt may start: its limits admitted it. */
  limitAdmitted(inv: Invoke): void {
    this.askingLimit.delete(invokeKey(inv));
  }

  /**
   * The attempt may not start yet: its plugin instance's `limit` is reached (docs/plugins.md
   * "Limits"). It waits until `until` (now, when a slot freed for it while it asked) and counts no
   * attempt; the node says which limit it waits for.
   */
  limitWait(inv: Invoke, until: Date, limit: string, instanceId: string, now: Date): void {
    const key = invokeKey(inv);
    const freed = this.askingLimit.get(key) === true;
    this.askingLimit.delete(key);
    this.ready.delete(key);
    if (!this.wants(inv)) return;
    this.waitedForLimit = true;
    const at = (freed ? now : until).toISOString();
    if (inv.item !== undefined) {
      inv.item.resume_at = at;
      this.markItem(inv.node, inv.item);
      return;
    }
    const st = inv.state;
    st.status = 'running';
    st.resume_at = at;
    st.wait_key = `${LIMIT_WAIT}${limit}:${instanceId}`;
    this.dirty.add(st);
  }

  /**
   * A slot of the limit the attempt of node `nodeKey` (item `index` of a FOREACH) waits for freed:
   * it asks again now. False when it does not wait (any more).
   */
  limitFreed(nodeKey: string, index: number | undefined, now: Date): boolean {
    const asking = attemptKey(nodeKey, index);
    if (this.askingLimit.has(asking)) {
      this.askingLimit.set(asking, true);
      return true;
    }
    const st = this.nodes.get(nodeKey);
    if (!st || !this.accepts(st)) return false;
    const at = now.toISOString();
    if (index === undefined) {
      if (st.resume_at === null || !st.wait_key?.startsWith(LIMIT_WAIT)) return false;
      st.resume_at = at;
      this.dirty.add(st);
      return true;
    }
    const node = this.plan.nodes.find((n) => n.key === nodeKey);
    const item = node && [...(this.itemRuns.get(nodeKey)?.open ?? [])].find((i) => i.index === index);
    if (!node || !item || item.resume_at === null) return false;
    item.resume_at = at;
    this.markItem(node, item);
    return true;
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
    const item = inv.item;
    item.status = 'completed';
    item.output = value;
    item.error = null;
    item.completed_at = now.toISOString();
    item.resume_at = null;
    this.itemsOf(inv.node).finished(item);
    this.markItem(inv.node, item);
  }

  /** An attempt failed: its node's retry_policy decides (per item for a FOREACH). */
  invokeFailed(inv: Invoke, message: string, now: Date, final = false, retryAfterMs?: number): void {
    if (inv.item === undefined) {
      this.attemptFailed(inv.node, inv.state, message, now, final, retryAfterMs);
      return;
    }
    this.ready.delete(invokeKey(inv));
    const item = inv.item;
    if (!this.wants(inv)) return;
    const next = nextAttempt(nodeRetryPolicy(inv.node.retry), item.attempts - item.interruptions);
    item.error = message;
    item.child_run_id = null;
    if (!final && !this.simulate && next.retry) {
      const wait = Math.max(next.delayMs, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
      item.resume_at = new Date(now.getTime() + wait).toISOString();
    } else {
      item.status = 'failed';
      item.completed_at = now.toISOString();
      item.resume_at = null;
      this.itemsOf(inv.node).finished(item);
    }
    this.markItem(inv.node, item);
  }

  private markItem(node: PlanNode, item: ItemState): void {
    this.dirtyItems.set(item, node.key);
  }

  private itemsOf(node: PlanNode): ItemRun {
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
      const wait = Math.max(next.delayMs, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
      st.resume_at = new Date(now.getTime() + wait).toISOString();
      this.dirty.add(st);
      return;
    }
    this.finalFailure(node, st, message, now.toISOString());
  }

  private finalFailure(node: PlanNode, st: NodeState, message: string, nowIso: string): void {
    st.status = 'failed';
    st.error = message;
    st.completed_at = nowIso;
    st.resume_at = null;
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

  private endRun(status: 'completed' | 'failed', error: string | null, nowIso: string): void {
    this.run.status = status;
    this.run.error = error;
    this.run.completed_at = nowIso;
    this.runDirty = true;
  }

  /**
   * The run ended while other branches still had nodes running (waiting on a timer, or an ACTION the
   * engine was calling): they fail with a reason, so no node is left running under a finished run.
   * Pending nodes stay pending (remaining unvisited nodes are not executed: docs/workflows.md "States").
   */
  private stopRunning(nowIso: string): void {
    this.ready.clear();
    this.timeouts.clear();
    const why =
      this.run.status === 'failed'
        ? `stopped: the run failed (${this.run.error})`
        : 'stopped: the run completed (an END node was reached) while this node was still running';
    for (const [key, items] of this.itemRuns) {
      for (const item of [...items.open]) {
        if (item.child_run_id !== null) this.orphans.push(item.child_run_id);
        item.status = 'failed';
        item.error = why;
        item.completed_at = nowIso;
        item.resume_at = null;
        item.child_run_id = null;
        items.finished(item);
        this.dirtyItems.set(item, key);
      }
    }
    for (const st of this.nodes.values()) {
      if (st.status !== 'running') continue;
      const child = awaitedChild(st);
      if (child !== null) this.orphans.push(child);
      st.status = 'failed';
      st.error =
        st.resume_at === null && st.type === 'ACTION'
          ? `${why}; the attempt in flight was abandoned`
          : child !== null
            ? `${why}; its child run is cancelled`
            : why;
      st.completed_at = nowIso;
      st.resume_at = null;
      st.wait_key = null;
      this.dirty.add(st);
      this.observer?.('finish', st.key);
    }
  }

  private complete(st: NodeState, output: unknown, nowIso: string): void {
    st.status = 'completed';
    st.output = output;
    st.error = null;
    st.completed_at = nowIso;
    st.resume_at = null;
    st.wait_key = null;
    this.context.nodes[st.key] = { output };
    this.dirty.add(st);
    this.observer?.('finish', st.key);
  }

  /** COMPUTE, SWITCH, END: no side effects, executed in one step. */
  private execute(node: PlanNode, st: NodeState, now: Date): void {
    const nowIso = now.toISOString();
    this.beginAttempt(st, now);
    switch (node.type) {
      case 'COMPUTE': {
        st.input = { logic: node.config?.logic ?? null };
        let result: unknown;
        const started = performance.now();
        try {
          result = (node.logic as (c: unknown) => unknown)(this.context);
        } catch (err) {
          this.attemptFailed(node, st, describeThrown(err), now);
          return;
        }
        // An evaluation cannot be interrupted; one that ran past timeout_ms fails its attempt.
        const took = performance.now() - started;
        if (node.timeoutMs !== null && took > node.timeoutMs) {
          this.attemptFailed(
            node,
            st,
            `attempt ${st.attempts} timed out: the expression took ${Math.round(took)} ms, more than timeout_ms ${node.timeoutMs}`,
            now,
          );
          return;
        }
        // A scalar (or list, or null) result is wrapped so outputs are always objects.
        this.complete(st, isPlainObject(result) ? result : { result: result ?? null }, nowIso);
        return;
      }
      case 'SWITCH':
        // Routing is done by the outgoing edges' conditions; the node itself does nothing.
        st.input = null;
        this.complete(st, null, nowIso);
        return;
      case 'END':
        st.input = null;
        this.complete(st, null, nowIso);
        // An END node reached completes the run; nodes not yet run are not executed.
        this.endRun('completed', null, nowIso);
        return;
      default:
        this.attemptFailed(node, st, `node type ${node.type} cannot be executed here`, now, true);
    }
  }

  /**
   * A JOIN (docs/workflows.md "Branches and JOIN"): ALL completes once every
   * predecessor finished and none failed; ANY as soon as one completed; N_OF_M as soon as
   * `n_required` completed. It fails once every predecessor finished without that, or when its
   * `timeout_ms` (counted from the first predecessor to finish, a persisted timer) runs out first.
   */
  private stepJoin(node: PlanNode, st: NodeState, now: Date, nowIso: string): boolean {
    const timerAhead = st.resume_at !== null && st.resume_at > nowIso;
    // Once its timeout ran out, a JOIN is judged on the branches that arrived by then: one that
    // finished later (in the same step, after a pause of the worker) does not count.
    const cutoff = st.status === 'running' && st.error === null && !timerAhead ? st.resume_at : null;
    const finishedBy = (k: string) => {
      const p = this.state(k);
      return isFinished(p) && (cutoff === null || (p.completed_at as string) <= cutoff);
    };
    const finishedEdges = node.in.filter((e) => finishedBy(e.from));
    const all = node.preds.every(finishedBy);
    const verdict = joinVerdict(node, (k) => this.asJoinSees(node, k), finishedBy);
    // A failed attempt waiting for its retry (retry_policy applies to every node type).
    if (st.status === 'running' && st.error !== null && timerAhead) return false;
    if (verdict.state === 'waiting') {
      if (st.status === 'pending') {
        const timeoutMs = joinTimeout(node);
        // A branch arrives when its predecessor finished (not skipped) and its edge passes.
        const arrivals = finishedEdges
          .filter((e) => this.state(e.from).status !== 'skipped' && this.edgePasses(e))
          .map((e) => Date.parse(this.state(e.from).completed_at as string));
        if (timeoutMs === null || arrivals.length === 0) return false;
        // The first branch arrived: the JOIN waits, bounded by its timeout (a persisted timer).
        if (this.simulate) this.seen.set(node.key, this.currentContext());
        this.beginAttempt(st, now);
        st.input = null;
        st.resume_at = new Date(Math.min(...arrivals) + timeoutMs).toISOString();
        return true;
      }
      if (timerAhead || st.resume_at === null) return false;
      this.traverse(finishedEdges);
      this.attemptFailed(
        node,
        st,
        `JOIN ${verdict.mode} timed out: timeout_ms ${joinTimeout(node)} passed after the first predecessor finished (${verdict.summary})`,
        now,
        true,
      );
      return true;
    }
    if (st.status === 'pending') {
      if (this.simulate) this.seen.set(node.key, this.currentContext());
      if (this.reach(node, st, nowIso, all ? node.in : finishedEdges) !== 'run') return true;
      this.beginAttempt(st, now);
      st.input = null;
    } else if (st.error !== null) {
      // The retry of a failed JOIN is due: a new attempt, decided on the predecessors as they are.
      this.beginAttempt(st, now);
    } else {
      // Decided while its timeout was running.
      this.traverse(finishedEdges);
    }
    if (verdict.state === 'satisfied') this.complete(st, verdict.output, nowIso);
    else this.attemptFailed(node, st, verdict.message, now);
    return true;
  }

  /**
   * Why a failure-branch rule leaves `edge` untaken, whatever its condition: its source failed and
   * it is an ordinary edge of a node with on_failure edges, or it is an on_failure edge and its
   * source did not fail. Undefined: the edge's condition decides.
   */
  private notTaken(edge: PlanNode['in'][number]): 'source_failed' | 'source_did_not_fail' | undefined {
    const failed = this.state(edge.from).status === 'failed';
    if (edge.onFailure) return failed ? undefined : 'source_did_not_fail';
    return failed && this.plan.byKey.get(edge.from)?.handlesFailure ? 'source_failed' : undefined;
  }

  /**
   * A predecessor as a JOIN counts it: a failure handled by on_failure edges is a branch not taken
   * (skipped), unless the JOIN is reached by one of those edges, where the failure is the branch.
   */
  private asJoinSees(join: PlanNode, key: string): NodeState {
    const st = this.state(key);
    if (st.status !== 'failed' || !this.plan.byKey.get(key)?.handlesFailure) return st;
    const byFailureEdge = join.in.some((e) => e.from === key && e.onFailure);
    return { ...st, status: byFailureEdge ? 'completed' : 'skipped' };
  }

  /** Whether an edge passes now; a condition that throws does not (reach() reports it). */
  private edgePasses(edge: PlanNode['in'][number]): boolean {
    if (this.notTaken(edge) !== undefined) return false;
    if (!edge.condition) return true;
    try {
      return truthy(edge.condition(this.context));
    } catch {
      return false;
    }
  }

  /** Records the passing edges among `edges` as traversed. */
  private traverse(edges: readonly PlanNode['in'][number][]): void {
    for (const e of edges) if (this.edgePasses(e)) this.traversed.push(e.id);
  }

  /**
   * A WAIT_EVENT is reached (docs/workflows.md "WAIT_EVENT"): its key is evaluated now, on the
   * run's context, and it waits, `running`, until an event brings that key or its timeout passes.
   * A key that cannot be evaluated or is no scalar fails the node at once (no retry changes it).
   */
  private startWait(node: PlanNode, st: NodeState, now: Date): void {
    this.beginAttempt(st, now);
    const wait = node.wait as NonNullable<PlanNode['wait']>;
    const timeoutAt = new Date(now.getTime() + (node.config?.timeout_ms as number)).toISOString();
    let key: unknown;
    let problem: string | undefined;
    if (wait.run) {
      try {
        key = wait.run(this.context);
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
      this.attemptFailed(node, st, problem, now, true);
      return;
    }
    const waiting = waitKey(wait.spec.id, key);
    if (this.simulate) {
      // The simulation waits for nothing: the first of the given events that brings the key, else a timeout.
      const match = this.simulatedEvents.find((e) => eventWaitKey(wait.spec, wait.event, e).key === waiting);
      this.complete(
        st,
        { event: match ?? null, timed_out: match === undefined, simulated: true },
        now.toISOString(),
      );
      return;
    }
    // A persisted wait: the run is released until the timeout; an event that brings the key ends it sooner.
    st.resume_at = timeoutAt;
    st.wait_key = waiting;
    this.dirty.add(st);
  }

  /** The engine took a WAIT_EVENT's wait from the store at its timeout: no event came. */
  waitTimedOut(st: NodeState, now: Date): void {
    this.timeouts.delete(st.key);
    if (!this.accepts(st)) return;
    this.complete(st, { event: null, timed_out: true }, now.toISOString());
  }

  /** An event took the wait before its timeout (the store holds the node completed with `output`). */
  waitResolved(st: NodeState, output: unknown, completedAt: string): void {
    this.timeouts.delete(st.key);
    if (!this.accepts(st)) return;
    this.complete(st, output, completedAt);
  }

  /** The WAIT_EVENTs waiting now: what a release must check an event did not take meanwhile. */
  waitingForEvents(): NodeState[] {
    const out: NodeState[] = [];
    for (const st of this.nodes.values())
      if (st.type === 'WAIT_EVENT' && st.wait_key !== null && st.status === 'running') out.push(st);
    return out;
  }

  /** A simulated attempt (docs/workflows.md "Simulation"): an ACTION echoes its input, a call runs its child in place. */
  private simulateInvoke(inv: Invoke, now: Date): void {
    this.beginInvoke(inv, now);
    const target = this.attemptOf(inv);
    if (inv.node.call === undefined) {
      const problem = this.simulatedInputProblem?.(inv.node.key, target.input);
      if (problem !== undefined) this.invokeFailed(inv, problem, now, true);
      else this.invokeSucceeded(inv, { simulated: true, input: target.input }, now);
      return;
    }
    const data = inv.item ? inv.item.input : (inv.state.input as CallInput).input;
    if (!inv.item && !inv.node.call.wait) {
      this.invokeSucceeded(inv, { run_id: null, simulated: true }, now);
      return;
    }
    const outcome = this.simulatedCall?.(inv.node.call.subscriptionId, data) ?? {
      status: 'completed' as const,
      error: null,
      outputs: {},
    };
    this.settleChild(inv, null, outcome, now, true);
  }

  /** A child run waited for: the engine reads its end unless this drive saw it running. */
  private noteChild(wait: ChildWait): void {
    if (!this.childrenSeen.has(wait.runId)) this.childWaits.set(wait.runId, wait);
  }

  /**
   * The engine made the child run of `inv` (checked, not written yet): it is written with the
   * node's (or item's) attempt, in one write. A CALL with wait false completes at once.
   */
  childStarted(inv: Invoke, child: ChildSpawn, now: Date): void {
    if (!this.wants(inv)) return;
    this.beginInvoke(inv, now);
    this.spawns.push(child);
    const runId = child.run.id;
    if (inv.item) {
      inv.item.child_run_id = runId;
      this.childrenSeen.add(runId);
      this.markItem(inv.node, inv.item);
      return;
    }
    const st = inv.state;
    st.input = { ...(st.input as CallInput), run_id: runId };
    if (inv.node.call?.wait === false) {
      this.complete(st, { run_id: runId }, now.toISOString());
      return;
    }
    st.wait_key = `${CHILD_WAIT}${runId}`;
    this.childrenSeen.add(runId);
    this.dirty.add(st);
  }

  /** The engine read a child run waited for: still running (its end wakes the run), or ended. */
  childRead(wait: ChildWait, outcome: ChildOutcome | undefined, now: Date): void {
    this.childWaits.delete(wait.runId);
    this.childrenSeen.add(wait.runId);
    if (outcome === undefined) return;
    const inv: Invoke = { node: wait.node, state: wait.state, item: wait.item, interrupted: false };
    this.settleChild(inv, wait.runId, outcome, now, false);
  }

  private settleChild(
    inv: Invoke,
    runId: string | null,
    outcome: ChildOutcome,
    now: Date,
    final: boolean,
  ): void {
    if (!this.wants(inv)) return;
    if (inv.item) {
      if (inv.item.child_run_id !== runId && runId !== null) return;
      inv.item.child_run_id = null;
    } else {
      if (runId !== null && awaitedChild(inv.state) !== runId) return;
      inv.state.wait_key = null;
    }
    const name = runId === null ? 'the simulated child run' : `child run ${runId}`;
    if (outcome.status === 'completed') {
      const output = { run_id: runId, status: 'completed', outputs: outcome.outputs };
      this.invokeSucceeded(inv, this.simulate ? { ...output, simulated: true } : output, now);
      return;
    }
    const code = outcome.status === 'failed' ? 'WORKFLOW.CHILD_RUN_FAILED' : 'WORKFLOW.CHILD_RUN_CANCELLED';
    const message = `${code}: ${name} ${outcome.status === 'failed' ? 'failed' : 'was cancelled'}: ${outcome.error ?? 'no reason given'}`;
    this.invokeFailed(inv, message, now, final);
  }

  /**
   * A FOREACH (docs/workflows.md "FOREACH"): reached, it evaluates `items` (a list of at most
   * max_items) and starts items in order, at most `concurrency` at once, each an action call or a
   * child run with the item in its context; it completes with every item's result in item order,
   * or, with on_item_failure "fail", stops starting items at the first failure and fails once the
   * items in flight end.
   */
  private stepForEach(node: PlanNode, st: NodeState, now: Date, nowIso: string): boolean {
    const each = node.forEach as NonNullable<PlanNode['forEach']>;
    if (st.status === 'pending') {
      if (!node.preds.every((k) => isFinished(this.state(k)))) return false;
      if (this.simulate) this.seen.set(node.key, this.currentContext());
      if (this.reach(node, st, nowIso, node.in) !== 'run') return true;
      this.beginAttempt(st, now);
      const values = this.forEachItems(node, st, now);
      if (values === undefined) return true;
      st.input = { count: values.length, concurrency: each.concurrency, on_item_failure: each.onItemFailure };
      this.itemRuns.set(node.key, new ItemRun(values));
      this.scheduleItems(node, st, now);
      return true;
    }
    if (st.status !== 'running') return false;
    if (!this.itemRuns.has(node.key)) {
      // A resumed run: the list is evaluated again on the same context (completed outputs are kept).
      const values = this.forEachItems(node, st, now);
      if (values === undefined) return true;
      this.itemRuns.set(node.key, new ItemRun(values, this.persistedItems?.get(node.key) ?? []));
    }
    return this.scheduleItems(node, st, now);
  }

  /** The list a FOREACH goes over, or undefined after failing the node (not a list, too long). */
  private forEachItems(node: PlanNode, st: NodeState, now: Date): readonly unknown[] | undefined {
    const each = node.forEach as NonNullable<PlanNode['forEach']>;
    let values: unknown;
    try {
      values = each.items(this.context);
    } catch (err) {
      this.attemptFailed(node, st, `items: ${describeThrown(err)}`, now, true);
      return undefined;
    }
    if (!Array.isArray(values)) {
      this.attemptFailed(node, st, `items: must yield a list, it yielded ${kindOf(values)}`, now, true);
      return undefined;
    }
    if (values.length > each.maxItems) {
      this.attemptFailed(
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
  private scheduleItems(node: PlanNode, st: NodeState, now: Date): boolean {
    const each = node.forEach as NonNullable<PlanNode['forEach']>;
    const items = this.itemsOf(node);
    const nowIso = now.toISOString();
    let changed = false;
    for (const item of items.open) {
      const inv: Invoke = { node, state: st, item, interrupted: false };
      const key = invokeKey(inv);
      if (this.ready.has(key) || this.inFlightNow.has(key)) continue;
      if (item.child_run_id !== null) this.noteChild({ node, state: st, item, runId: item.child_run_id });
      else if (item.resume_at !== null) {
        if (item.resume_at <= nowIso) this.ready.set(key, inv);
      } else {
        // In flight with no timer after a resume: an action's attempt was interrupted (a child run is
        // written with its start, so a call item without one never started it).
        inv.interrupted = node.call === undefined && item.attempts > 0;
        this.ready.set(key, inv);
      }
    }
    const stopping = items.firstFailed !== undefined && each.onItemFailure === 'fail';
    while (!stopping && items.open.size < each.concurrency) {
      const index = items.nextIndex();
      if (index === undefined) break;
      const context = { ...this.context, item: items.values[index], index };
      let input: unknown;
      let problem: string | undefined;
      try {
        input = (node.mapping as (c: unknown) => unknown)(context);
      } catch (err) {
        problem = `${node.call ? 'call.input' : 'action.input_mapping'}: ${describeThrown(err)}`;
      }
      const item = newItem(this.simulate ? '' : newId(), index, input ?? null);
      items.add(item);
      this.markItem(node, item);
      const inv: Invoke = { node, state: st, item, interrupted: false };
      if (problem !== undefined) {
        this.beginInvoke(inv, now);
        this.invokeFailed(inv, problem, now, true);
        changed = true;
        if (each.onItemFailure === 'fail') break;
        continue;
      }
      this.ready.set(invokeKey(inv), inv);
    }
    if (items.open.size > 0 || (!stopping && items.nextIndex() !== undefined)) return changed;
    const failed = items.firstFailed;
    if (failed !== undefined && each.onItemFailure === 'fail') {
      const left = items.notStarted();
      this.finalFailure(
        node,
        st,
        `WORKFLOW.ITEM_FAILED: item ${failed.index} failed: ${failed.error}` +
          (left > 0 ? `; ${left} of ${items.values.length} items were not started` : ''),
        nowIso,
      );
    } else this.complete(st, { results: items.results() }, nowIso);
    return true;
  }

  private startDelay(node: PlanNode, st: NodeState, now: Date): void {
    this.beginAttempt(st, now);
    const nowMs = now.getTime();
    let untilMs = nowMs;
    const delayMs = node.config?.delay_ms as number | undefined;
    if (delayMs !== undefined) untilMs = nowMs + delayMs;
    if (node.template) {
      try {
        // With both delay_ms and until_template, the DELAY ends at the later of the two.
        untilMs = Math.max(untilMs, renderTemplate(node.template, this.context, now).at.getTime());
      } catch (err) {
        // A DELAY run node's input is {delay_ms: <number>} (docs/workflows.md "DELAY and
        // until_template"): nothing was scheduled, so 0, with the template that failed (additive) so
        // the input shows what could not be rendered.
        st.input = { delay_ms: 0, until_template: node.config?.until_template };
        this.attemptFailed(node, st, `until_template: ${describeThrown(err)}`, now);
        return;
      }
    }
    const until = new Date(untilMs).toISOString();
    // delay_ms is what this DELAY waits, computed when it is scheduled: the configured delay_ms, or
    // the time left until the rendered timestamp (0 if it is past), whichever is later. `until` is
    // additive: the instant it ends.
    const wait = Math.max(0, untilMs - nowMs);
    st.input = { delay_ms: wait, until };
    // Rendered: an earlier attempt's error no longer applies (and marks the wait as a delay, not a retry).
    st.error = null;
    if (this.simulate) {
      this.complete(st, { simulated: true, skipped_delay: true, until, delay_ms: wait }, now.toISOString());
      return;
    }
    if (wait === 0) {
      this.complete(st, { until, delay_ms: 0 }, now.toISOString());
      return;
    }
    // A persisted timer: the engine releases the run until `until`; no process sleeps through it.
    st.resume_at = until;
    this.dirty.add(st);
  }
}

const NONE: ReadonlySet<string> = new Set();

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
