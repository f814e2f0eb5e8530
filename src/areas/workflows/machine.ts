/**
 * The run state machine (SPEC "Workflow execution rules" 1-6 and the run / run-node state tables),
 * pure: it changes in-memory run and node states and says what must happen next (a `Barrier`); it
 * never touches the store, a plugin or a timer. The durable engine (engine.ts) persists the changes
 * and performs the barriers; the simulation (POST /event_subscription/{id}/test) runs the very same
 * machine with `simulate: true`, so both apply the same states.
 *
 * Traversal is sequential in Kahn order: when a node is reached, every predecessor has already
 * finished (completed, failed with continue_on_error, or skipped), which is what JOIN verifies.
 */
// Long file: the state machine is one class whose transitions share the run's state; each
// transition is short, and the states table of SPEC reads best against it in one place.
import type { CloudEvent } from '../events/cloudevent.js';
import { describeThrown, truthy } from './jsonlogic.js';
import type { Plan, PlanNode } from './plan.js';
import { renderTemplate } from './template.js';

export type RunStatus = 'pending' | 'running' | 'completed' | 'failed';
export type NodeStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

export interface SkipReason {
  message: string;
  /** The incoming edges, all conditional, whose conditions evaluated false. */
  edges: Array<{ edge_id: string; from_node_key: string; condition_jsonlogic: unknown }>;
}

export interface NodeState {
  /** Run-node record id (empty in a simulation). */
  id: string;
  node_id: string;
  key: string;
  type: string;
  position: number;
  status: NodeStatus;
  input: unknown;
  output: unknown;
  error: string | null;
  skip_reason: SkipReason | null;
  started_at: string | null;
  completed_at: string | null;
  /** Attempts made, including one interrupted by a crash. */
  attempts: number;
  /** Attempts interrupted by a crash (not counted against retry_policy.max_attempts). */
  interruptions: number;
  /** While `running`: when a DELAY ends or the next retry is due; null while an attempt is in flight. */
  resume_at: string | null;
}

export interface RunState {
  id: string;
  status: RunStatus;
  error: string | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface ExpressionContext {
  event: {
    id: string;
    source: string;
    type: string;
    subject: string | null;
    time: string | null;
    data: unknown;
  };
  nodes: Record<string, { output: unknown }>;
}

export type Barrier =
  /** An ACTION attempt must run (after persisting). `interrupted`: found in flight after a crash. */
  | { kind: 'invoke'; node: PlanNode; state: NodeState; interrupted: boolean }
  /** Nothing to do until `until` (a DELAY or a retry backoff). */
  | { kind: 'wait'; until: string }
  /** The run finished (completed or failed). */
  | { kind: 'end' };

/** How many crash interruptions of one idempotent ACTION are retried before the node fails. */
export const MAX_INTERRUPTIONS = 3;

export function eventContext(event: CloudEvent): ExpressionContext['event'] {
  return {
    id: event.id,
    source: event.source,
    type: event.type,
    subject: event.subject ?? null,
    time: event.time ?? null,
    data: event.data ?? null,
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Wait before attempt k+1 after k attempts (CONTRACTS §9). */
export function backoffMs(policy: PlanNode['retry'], attemptsMade: number): number {
  if (!policy) return 0;
  const factor = policy.backoff === 'exponential' ? 2 ** Math.max(0, attemptsMade - 1) : 1;
  return Math.round(policy.base_seconds * factor * 1000);
}

export class RunMachine {
  /** Node states changed since the last `takeChanges`. */
  readonly dirty = new Set<NodeState>();
  runDirty = false;
  /** Edges that passed when their target was reached, in traversal order. */
  readonly traversed: string[] = [];
  /** Simulation only: the context each node saw when it was reached. */
  readonly seen = new Map<string, ExpressionContext>();
  /** Optional trace of node transitions (attempt starts, finishes, skips), e.g. for tests and metrics. */
  observer?: (event: 'start' | 'finish' | 'skip', key: string) => void;
  private readonly context: ExpressionContext;
  private cursor = 0;

  constructor(
    readonly plan: Plan,
    event: CloudEvent,
    readonly run: RunState,
    readonly nodes: Map<string, NodeState>,
    readonly simulate = false,
  ) {
    this.context = { event: eventContext(event), nodes: {} };
    for (const n of plan.nodes) {
      const st = nodes.get(n.key);
      if (st?.status === 'completed') this.context.nodes[n.key] = { output: st.output };
    }
  }

  /** Fresh pending node states for a new run (one per graph node, SPEC run state table). */
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
      });
    }
    return map;
  }

  /** The expression context as it stands (event + outputs of completed nodes). */
  currentContext(): ExpressionContext {
    return { event: this.context.event, nodes: { ...this.context.nodes } };
  }

  takeChanges(): { run: boolean; nodes: NodeState[] } {
    const out = { run: this.runDirty, nodes: [...this.dirty] };
    this.dirty.clear();
    this.runDirty = false;
    return out;
  }

  /** Moves the run forward as far as it can go without I/O. */
  advance(now: Date): Barrier {
    const nowIso = now.toISOString();
    const nodes = this.plan.nodes;
    while (this.run.status === 'running' && this.cursor < nodes.length) {
      const node = nodes[this.cursor];
      const st = this.nodes.get(node.key) as NodeState;
      if (st.status === 'completed' || st.status === 'failed' || st.status === 'skipped') {
        this.cursor++;
        continue;
      }
      if (st.status === 'running') {
        if (st.resume_at !== null) {
          if (st.resume_at > nowIso) return { kind: 'wait', until: st.resume_at };
          if (node.type === 'DELAY') {
            // A wait that ended completes the DELAY; a retry of a failed until_template (the last
            // attempt's error is kept while waiting) renders it again.
            if (st.error !== null) {
              this.startDelay(node, st, now);
              continue;
            }
            const input = (st.input ?? {}) as { delay_ms?: number; until?: string };
            this.complete(st, { until: st.resume_at, delay_ms: input.delay_ms ?? 0 }, nowIso);
            continue;
          }
          // A retry is due.
          if (node.type === 'ACTION') return { kind: 'invoke', node, state: st, interrupted: false };
          this.execute(node, st, now);
          continue;
        }
        // In flight with no timer: the attempt was interrupted (the process stopped mid-attempt).
        if (node.type === 'ACTION') return { kind: 'invoke', node, state: st, interrupted: true };
        // Every other type has no side effect, so re-running the attempt is safe.
        this.execute(node, st, now);
        continue;
      }
      // pending: the traversal reaches the node.
      if (this.simulate) this.seen.set(node.key, this.currentContext());
      const reach = this.reach(node, st, nowIso);
      if (reach === 'skipped' || reach === 'failed') continue;
      if (node.type === 'ACTION') {
        try {
          st.input = (node.mapping as (c: unknown) => unknown)(this.context);
        } catch (err) {
          // Final despite a retry_policy: the mapping reads a context that no retry changes, and a
          // retry must never call the plugin without the input it was meant to have.
          this.beginAttempt(st, now);
          this.attemptFailed(node, st, `input_mapping: ${describeThrown(err)}`, now, true);
          continue;
        }
        if (this.simulate) {
          this.beginAttempt(st, now);
          this.complete(st, { simulated: true, input: st.input }, nowIso);
          continue;
        }
        this.dirty.add(st);
        return { kind: 'invoke', node, state: st, interrupted: false };
      }
      if (node.type === 'DELAY') {
        this.startDelay(node, st, now);
        continue;
      }
      this.execute(node, st, now);
    }
    if (this.run.status === 'running') {
      // Traversal ended: every node finished (SPEC run state table, running -> completed).
      this.run.status = 'completed';
      this.run.completed_at = nowIso;
      this.runDirty = true;
    }
    return { kind: 'end' };
  }

  /**
   * The skip rule (execution rule 2): a node is skipped only when it has incoming edges, every one of
   * them has a condition, and every condition is false. An edge without a condition always passes.
   */
  private reach(node: PlanNode, st: NodeState, nowIso: string): 'run' | 'skipped' | 'failed' {
    if (node.in.length === 0) return 'run';
    let passed = false;
    const falseEdges: SkipReason['edges'] = [];
    for (const edge of node.in) {
      let pass = true;
      if (edge.condition) {
        try {
          pass = truthy(edge.condition(this.context));
        } catch (err) {
          st.attempts = Math.max(st.attempts, 1);
          st.started_at = nowIso;
          this.finalFailure(node, st, `edge from "${edge.from}": ${describeThrown(err)}`, nowIso);
          return 'failed';
        }
      }
      if (pass) {
        passed = true;
        this.traversed.push(edge.id);
      } else {
        falseEdges.push({
          edge_id: edge.id,
          from_node_key: edge.from,
          condition_jsonlogic: edge.conditionJson,
        });
      }
    }
    if (passed) return 'run';
    st.status = 'skipped';
    st.skip_reason = {
      message: `every incoming edge has a condition and all ${falseEdges.length} evaluated false (from ${falseEdges
        .map((e) => `"${e.from_node_key}"`)
        .join(', ')})`,
      edges: falseEdges,
    };
    st.completed_at = nowIso;
    this.dirty.add(st);
    this.observer?.('skip', st.key);
    return 'skipped';
  }

  /** Counts a new attempt: the node is running with its input; nothing is waiting. */
  beginAttempt(st: NodeState, now: Date): void {
    st.attempts++;
    st.status = 'running';
    st.started_at ??= now.toISOString();
    st.resume_at = null;
    this.dirty.add(st);
    this.observer?.('start', st.key);
  }

  markInterrupted(st: NodeState): void {
    st.interruptions++;
    this.dirty.add(st);
  }

  actionSucceeded(st: NodeState, output: unknown, now: Date): void {
    this.complete(st, output === undefined ? null : output, now.toISOString());
  }

  /** An attempt failed: retry (per retry_policy) or fail the node. `final` skips the retry policy. */
  attemptFailed(node: PlanNode, st: NodeState, message: string, now: Date, final = false): void {
    const budget = node.retry?.max_attempts ?? 1;
    const made = st.attempts - st.interruptions;
    if (!final && !this.simulate && made < budget) {
      st.status = 'running';
      st.error = message;
      st.resume_at = new Date(now.getTime() + backoffMs(node.retry, made)).toISOString();
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
    this.dirty.add(st);
    this.observer?.('finish', st.key);
    if (!node.continueOnError) {
      // SPEC run state table: node failure with continue_on_error false -> run failed, stops at once.
      this.run.status = 'failed';
      this.run.error = `node "${node.key}" (${node.type}) failed: ${message}`;
      this.run.completed_at = nowIso;
      this.runDirty = true;
    }
  }

  private complete(st: NodeState, output: unknown, nowIso: string): void {
    st.status = 'completed';
    st.output = output;
    st.error = null;
    st.completed_at = nowIso;
    st.resume_at = null;
    this.context.nodes[st.key] = { output };
    this.dirty.add(st);
    this.observer?.('finish', st.key);
  }

  /** COMPUTE, SWITCH, JOIN, END: no side effects, executed in one step. */
  private execute(node: PlanNode, st: NodeState, now: Date): void {
    const nowIso = now.toISOString();
    this.beginAttempt(st, now);
    switch (node.type) {
      case 'COMPUTE': {
        st.input = { logic: node.config?.logic ?? null };
        let result: unknown;
        try {
          result = (node.logic as (c: unknown) => unknown)(this.context);
        } catch (err) {
          this.attemptFailed(node, st, describeThrown(err), now);
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
        this.run.status = 'completed';
        this.run.completed_at = nowIso;
        this.runDirty = true;
        return;
      case 'JOIN': {
        st.input = null;
        const verdict = this.join(node);
        if (verdict.ok) this.complete(st, verdict.output, nowIso);
        else this.attemptFailed(node, st, verdict.message, now);
        return;
      }
      default:
        this.attemptFailed(node, st, `node type ${node.type} cannot be executed here`, now, true);
    }
  }

  /** JOIN (CONTRACTS §9): ALL every non-skipped predecessor completed; ANY one; N_OF_M n_required. */
  private join(node: PlanNode): { ok: true; output: unknown } | { ok: false; message: string } {
    const mode = (node.config?.mode as string | undefined) ?? 'ALL';
    const nRequired = node.config?.n_required as number | undefined;
    const timeoutMs = node.config?.timeout_ms as number | undefined;
    const completed: string[] = [];
    const failed: string[] = [];
    const skipped: string[] = [];
    const late: string[] = [];
    const finishedAt = node.preds
      .map((k) => this.nodes.get(k) as NodeState)
      .filter((s) => s.status === 'completed' || s.status === 'failed')
      .map((s) => Date.parse(s.completed_at as string));
    const first = finishedAt.length > 0 ? Math.min(...finishedAt) : 0;
    for (const key of node.preds) {
      const s = this.nodes.get(key) as NodeState;
      if (s.status === 'skipped') skipped.push(key);
      else if (s.status === 'completed') {
        // JOIN timeout_ms: a branch finishing more than timeout_ms after the first one is too late.
        if (timeoutMs !== undefined && Date.parse(s.completed_at as string) > first + timeoutMs)
          late.push(key);
        else completed.push(key);
      } else failed.push(key);
    }
    const output = { mode, completed, failed, skipped, late };
    const list = (l: string[]) => (l.length ? l.map((k) => `"${k}"`).join(', ') : 'none');
    const summary = `completed: ${list(completed)}; failed: ${list(failed)}; skipped: ${list(skipped)}${
      late.length ? `; later than timeout_ms ${timeoutMs}: ${list(late)}` : ''
    }`;
    let ok: boolean;
    let need: string;
    if (mode === 'ANY') {
      ok = completed.length >= 1;
      need = 'at least one completed predecessor';
    } else if (mode === 'N_OF_M') {
      ok = completed.length >= (nRequired ?? 1);
      need = `${nRequired} completed predecessors`;
    } else {
      ok = failed.length === 0 && late.length === 0;
      need = 'every non-skipped predecessor completed';
    }
    if (ok && nRequired !== undefined && completed.length < nRequired) {
      ok = false;
      need = `${nRequired} completed predecessors (n_required)`;
    }
    return ok ? { ok: true, output } : { ok: false, message: `JOIN ${mode} needs ${need} (${summary})` };
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
        // SPEC run-node input for DELAY is {delay_ms: <number>}: nothing was scheduled, so 0, with
        // the template that failed (additive) so the input shows what could not be rendered.
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
