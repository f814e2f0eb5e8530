import type { RetryPolicy } from '../../worker/retry-policy.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { PlanNode } from './plan.js';

/**
 * The states a run and its nodes move through (docs/workflows.md "States"), as the run machine
 * (machine.ts) changes them and the engine persists them.
 */

/** `skipped`: never started (the loop guard refused it; its error says why). */
export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
export type NodeStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

export interface SkipReason {
  message: string;
  /**
   * The incoming edges, none taken: a condition evaluated false, or (failure branches) an ordinary
   * edge from a node that failed, or an on_failure edge from one that did not (`not_taken` says which).
   */
  edges: Array<{
    edge_id: string;
    from_node_key: string;
    condition_jsonlogic: unknown;
    not_taken?: 'source_failed' | 'source_did_not_fail';
  }>;
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
  /**
   * While `running` and waiting: when the wait ends (a DELAY's end, a retry, a JOIN's or a
   * WAIT_EVENT's timeout, a limit's turn); null while an attempt is in flight.
   */
  resume_at: string | null;
  /** While `running` and waiting: what for (WaitKind); null while an attempt is in flight. */
  wait_kind: WaitKind | null;
  /**
   * A WAIT_EVENT waiting: the key an event takes it by (event-waits.ts); a CALL waiting for its child
   * run: `run:<child run id>`; an ACTION waiting for its plugin instance's limit: `limit:...`
   * (LIMIT_WAIT); null otherwise.
   */
  wait_key: string | null;
}

/**
 * What a running node waits for: a DELAY's end (`delay`), its next attempt after a failure
 * (`retry`), a JOIN's timeout while branches are still to arrive (`join_timeout`), a WAIT_EVENT's
 * event or timeout (`event`), a CALL's child run (`child`), an ACTION's plugin limits (`limit`).
 */
export type WaitKind = 'delay' | 'retry' | 'join_timeout' | 'event' | 'child' | 'limit';

/**
 * An ACTION waiting for its plugin instance's limit carries `limit:<limit>:<instance id>` as its wait
 * key (docs/plugins.md "Limits").
 */
export const LIMIT_WAIT = 'limit:';

/** The limit an ACTION's wait key says it waits for, or undefined (run nodes' `waiting_for_limit`). */
export function limitWaitOf(
  waitKey: string | null,
): { limit: 'rate_limit' | 'max_concurrency'; plugin_instance_id: string } | undefined {
  if (!waitKey?.startsWith(LIMIT_WAIT)) return undefined;
  const [limit, instanceId] = waitKey.slice(LIMIT_WAIT.length).split(':');
  return { limit: limit as 'rate_limit' | 'max_concurrency', plugin_instance_id: instanceId as string };
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
  /** Completed nodes' outputs; a failed node with on_failure edges has `error` (and output null). */
  nodes: Record<string, { output: unknown; error?: NodeError }>;
}

/** A handled failure as the nodes after it see it: `nodes.<key>.error`. */
export interface NodeError {
  code?: string;
  message: string;
}

/** The error of a failed node as `{code?, message}`: an error text starting `AREA.CODE: ` has a code. */
export function nodeError(message: string | null): NodeError {
  const text = message ?? 'failed';
  const code = /^([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)+): /.exec(text)?.[1];
  return code === undefined ? { message: text } : { code, message: text };
}

/** One item of a FOREACH (docs/workflows.md "FOREACH"), made when it starts. */
export interface ItemState {
  /** Item record id (empty in a simulation). */
  id: string;
  index: number;
  status: 'running' | 'completed' | 'failed';
  /** The action's evaluated input, or the child's trigger data (call). */
  input: unknown;
  output: unknown;
  error: string | null;
  attempts: number;
  interruptions: number;
  /** While running: when the next retry is due; null while an attempt is in flight. */
  resume_at: string | null;
  /** call: the child run of the current attempt, while the item waits for it. */
  child_run_id: string | null;
  started_at: string | null;
  completed_at: string | null;
}

/**
 * An attempt that must run (after persisting): an ACTION's call, a CALL's child run, or one of a
 * FOREACH's items (`item`; `state` is then the FOREACH's). `interrupted`: found in flight after a crash.
 */
export interface Invoke {
  node: PlanNode;
  state: NodeState;
  interrupted: boolean;
  item?: ItemState;
}

/** What the engine keys an attempt in flight by: the node, or the node and the item. */
/** The key of a node's attempt, or of item `index` of a FOREACH node: `<node>` or `<node>#<index>`. */
export const attemptKey = (nodeKey: string, index?: number): string =>
  index === undefined ? nodeKey : `${nodeKey}#${index}`;

export const invokeKey = (inv: Pick<Invoke, 'node' | 'item'>): string =>
  attemptKey(inv.node.key, inv.item?.index);

/** A child run a CALL or a FOREACH item waits for, whose end the engine has not seen yet. */
export interface ChildWait {
  node: PlanNode;
  state: NodeState;
  item?: ItemState;
  runId: string;
}

/** How a child run ended, as its parent's node sees it. */
export interface ChildOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  error: string | null;
  /** The outputs of the child's completed nodes, by key. */
  outputs: Record<string, unknown>;
}

/** What `advance` leaves to the engine: attempts to start, the next timer, or nothing (the run ended). */
export interface Step {
  /** ACTION attempts that may start now (not those the engine already has in flight). */
  invokes: Invoke[];
  /** The earliest persisted timer of a waiting node (a DELAY, a retry backoff, a JOIN timeout). */
  wakeAt: string | null;
  /**
   * WAIT_EVENTs whose timeout passed: the engine takes each wait from the store first (an event may
   * have taken it meanwhile) and tells the machine which it was (`waitTimedOut` / `waitResolved`).
   */
  timeouts: NodeState[];
  /** Child runs waited for whose end is not known in this drive: the engine reads how each ended. */
  children: ChildWait[];
}

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

/**
 * A node's `retry_policy` as the one retry policy of background work (docs/reliability.md "Retry
 * policies"): no policy is one attempt. A crash interruption of an idempotent ACTION is retried
 * without counting an attempt, three times; after that the node fails.
 */
export function nodeRetryPolicy(retry: PlanNode['retry']): RetryPolicy {
  return {
    maxAttempts: retry?.max_attempts ?? 1,
    baseMs: (retry?.base_seconds ?? 0) * 1000,
    capMs: Number.POSITIVE_INFINITY,
    backoff: retry?.backoff === 'fixed' ? 'fixed' : 'exponential',
    maxInterruptions: 3,
  };
}

/** Whether a node has reached a final status. */
export const isFinished = (st: NodeState): boolean =>
  st.status === 'completed' || st.status === 'failed' || st.status === 'skipped';

/** The longest wait a server's Retry-After may impose (a day: longer is a lost cause, not a pause). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** When a retry is due: after the policy's delay, or a server's Retry-After (at most a day) if longer. */
export const retryAt = (delayMs: number, now: Date, retryAfterMs?: number): string =>
  new Date(now.getTime() + Math.max(delayMs, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS))).toISOString();
