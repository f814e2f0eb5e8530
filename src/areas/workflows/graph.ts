/**
 * Workflow graphs: the rules a graph must satisfy to be saved (docs/workflows.md "Graphs", "Node
 * types") and the topological order the engine traverses (Kahn, docs/workflows.md "Execution rules").
 * Pure: no store, no HTTP. A violation throws AppError WORKFLOW.INVALID_GRAPH (400) whose message
 * names the node and field, and whose details say where (`field`) and, for a cycle, which nodes.
 */

import { backoffMs } from '../../worker/retry-policy.js';
import { compileError, expressionProblem } from './jsonlogic.js';
import {
  invalid,
  isInt,
  isWait,
  MAX_WAIT_MS,
  NODE_TYPES,
  type NodeType,
  validateConfig,
  type Where,
} from './node-config.js';

export const NODE_KEY_PATTERN = /^[A-Za-z0-9_-]{1,100}$/;
export const MAX_NODES = 500;
/** Node types a node-level timeout_ms applies to. */
const TIMED_TYPES: ReadonlySet<NodeType> = new Set(['ACTION', 'COMPUTE', 'JOIN']);
export const MAX_EDGES = 2000;

export interface RetryPolicy {
  max_attempts: number;
  backoff: 'fixed' | 'exponential';
  base_seconds: number;
}

/** A node as a client sends it (PUT graph). */
export interface NodeInput {
  id?: string;
  key: string;
  name?: string | null;
  description?: string | null;
  type: string;
  config?: Record<string, unknown> | null;
  retry_policy?: Partial<RetryPolicy> | null;
  timeout_ms?: number | null;
  continue_on_error?: boolean;
}

export interface EdgeInput {
  id?: string;
  from_node_id: string;
  to_node_id: string;
  label?: string | null;
  condition_jsonlogic?: Record<string, unknown> | null;
  on_failure?: boolean;
}

/** A node after validation: type upper case, config normalised, defaults filled. */
export interface NodeSpec {
  clientId: string | undefined;
  key: string;
  name: string;
  description: string | null;
  type: NodeType;
  config: Record<string, unknown> | null;
  retry_policy: RetryPolicy | null;
  timeout_ms: number | null;
  continue_on_error: boolean;
}

export interface EdgeSpec {
  /** Indexes into the validated nodes. */
  from: number;
  to: number;
  label: string | null;
  condition_jsonlogic: Record<string, unknown> | null;
  /** A failure branch: followed only when `from` failed after its retries. */
  on_failure: boolean;
}

export interface ValidGraph {
  nodes: NodeSpec[];
  edges: EdgeSpec[];
  /** Node indexes in traversal (Kahn) order. */
  order: number[];
  /** What the save accepted but the author may not have meant: a template key close to an operator. */
  warnings: string[];
}

export function normaliseType(type: string): NodeType | undefined {
  const upper = type.trim().toUpperCase();
  return (NODE_TYPES as readonly string[]).includes(upper) ? (upper as NodeType) : undefined;
}

export function normaliseRetryPolicy(
  policy: Partial<RetryPolicy> | null | undefined,
  at: Where,
): RetryPolicy | null {
  if (policy === null || policy === undefined) return null;
  const fail = (field: string, message: string) =>
    invalid(`${at.label}: ${message}`, { field: `${at.path}.retry_policy.${field}` });
  if (!isInt(policy.max_attempts, 1))
    throw fail('max_attempts', 'retry_policy.max_attempts must be an integer >= 1');
  if (policy.max_attempts > 100) throw fail('max_attempts', 'retry_policy.max_attempts must be at most 100');
  const backoff = policy.backoff ?? 'exponential';
  if (backoff !== 'fixed' && backoff !== 'exponential') {
    throw fail('backoff', 'retry_policy.backoff must be "fixed" or "exponential"');
  }
  const base = policy.base_seconds ?? 1;
  if (typeof base !== 'number' || !Number.isFinite(base) || base < 0 || base > 86_400) {
    throw fail('base_seconds', 'retry_policy.base_seconds must be a number between 0 and 86400');
  }
  // The longest wait is the one before the last attempt: base x 2^(max_attempts - 2) when exponential.
  const longest =
    backoffMs(
      { baseMs: base * 1000, capMs: Number.POSITIVE_INFINITY, backoff },
      Math.max(1, policy.max_attempts - 1),
    ) / 1000;
  if (longest * 1000 > MAX_WAIT_MS) {
    throw fail(
      'max_attempts',
      `retry_policy waits up to ${longest} s before its last attempt; the longest wait allowed is ${MAX_WAIT_MS / 1000} s (365 days): fewer attempts or a smaller base_seconds`,
    );
  }
  return { max_attempts: policy.max_attempts, backoff, base_seconds: base };
}

/**
 * Validates a whole graph: node fields and per-type config, unique keys and client ids, edges only
 * between nodes of the request (by client id, or by key when no node has that id), acyclic.
 */
export function validateGraph(nodesIn: NodeInput[], edgesIn: EdgeInput[]): ValidGraph {
  if (nodesIn.length > MAX_NODES) throw invalid(`a graph has at most ${MAX_NODES} nodes`, { field: 'nodes' });
  if (edgesIn.length > MAX_EDGES) throw invalid(`a graph has at most ${MAX_EDGES} edges`, { field: 'edges' });
  const keys = new Map<string, number>();
  const ids = new Map<string, number>();
  const warnings: string[] = [];
  const nodes = nodesIn.map((n, i): NodeSpec => {
    const where = `nodes.${i}`;
    if (typeof n.key !== 'string' || !NODE_KEY_PATTERN.test(n.key)) {
      throw invalid(
        `${where}: key must be 1-100 characters of A-Z, a-z, 0-9, "_" or "-" (got ${JSON.stringify(n.key)})`,
        {
          field: `${where}.key`,
        },
      );
    }
    const label = `${where} (key "${n.key}")`;
    if (keys.has(n.key)) {
      throw invalid(`${label}: key "${n.key}" is already used by nodes.${keys.get(n.key)}`, {
        field: `${where}.key`,
      });
    }
    keys.set(n.key, i);
    if (n.id !== undefined) {
      if (ids.has(n.id))
        throw invalid(`${label}: id "${n.id}" is already used by nodes.${ids.get(n.id)}`, {
          field: `${where}.id`,
        });
      ids.set(n.id, i);
    }
    const type = typeof n.type === 'string' ? normaliseType(n.type) : undefined;
    if (!type) {
      throw invalid(
        `${label}: type must be one of ${NODE_TYPES.join(', ')} (got ${JSON.stringify(n.type)})`,
        {
          field: `${where}.type`,
          allowed_values: [...NODE_TYPES],
        },
      );
    }
    const hasTimeout = n.timeout_ms !== undefined && n.timeout_ms !== null;
    if (hasTimeout && !isWait(n.timeout_ms, 1)) {
      throw invalid(`${label}: timeout_ms must be an integer between 1 and ${MAX_WAIT_MS} (365 days)`, {
        field: `${where}.timeout_ms`,
      });
    }
    // A timeout bounds an attempt (ACTION: the call; COMPUTE: the evaluation; JOIN: the wait for
    // branches from the first arrival). A SWITCH or an END has nothing to bound; a DELAY's wait is its config.
    if (hasTimeout && !TIMED_TYPES.has(type)) {
      throw invalid(
        `${label}: timeout_ms has no meaning on ${type} nodes (it bounds ACTION, COMPUTE and JOIN attempts${
          type === 'DELAY'
            ? '; a DELAY waits for its config.delay_ms or until_template'
            : type === 'WAIT_EVENT'
              ? '; a WAIT_EVENT waits at most its config.timeout_ms'
              : ''
        })`,
        { field: `${where}.timeout_ms`, allowed_types: [...TIMED_TYPES] },
      );
    }
    const config = validateConfig(type, n.config, { path: where, label }, warnings);
    if (
      type === 'JOIN' &&
      hasTimeout &&
      config?.timeout_ms !== undefined &&
      config.timeout_ms !== n.timeout_ms
    ) {
      throw invalid(`${label}: timeout_ms and config.timeout_ms are the same setting and differ; set one`, {
        field: `${where}.config.timeout_ms`,
      });
    }
    return {
      clientId: n.id,
      key: n.key,
      name: n.name ?? n.key,
      description: n.description ?? null,
      type,
      config,
      retry_policy: normaliseRetryPolicy(n.retry_policy, { path: where, label }),
      timeout_ms: n.timeout_ms ?? null,
      continue_on_error: n.continue_on_error ?? false,
    };
  });
  const resolve = (ref: string, where: string): number => {
    const byId = ids.get(ref);
    if (byId !== undefined) return byId;
    const byKey = keys.get(ref);
    if (byKey !== undefined) return byKey;
    throw invalid(`${where}: "${ref}" is not the id (or key) of a node in this request`, { field: where });
  };
  const edges = edgesIn.map((e, i): EdgeSpec => {
    const where = `edges.${i}`;
    const from = resolve(e.from_node_id, `${where}.from_node_id`);
    const to = resolve(e.to_node_id, `${where}.to_node_id`);
    if (e.condition_jsonlogic !== undefined && e.condition_jsonlogic !== null) {
      const err = compileError(e.condition_jsonlogic, 'condition_jsonlogic');
      if (err) {
        const inner = expressionProblem(e.condition_jsonlogic)?.path;
        throw invalid(`${where}: condition_jsonlogic is not a valid JSONLogic expression: ${err}`, {
          field: `${where}.condition_jsonlogic${inner ? `.${inner}` : ''}`,
        });
      }
    }
    const onFailure = e.on_failure ?? false;
    if (typeof onFailure !== 'boolean')
      throw invalid(`${where}: on_failure must be true or false`, { field: `${where}.on_failure` });
    if (onFailure) {
      const source = nodes[from];
      // Two answers to the same failure: continue_on_error goes on along the ordinary edges.
      if (source.continue_on_error) {
        throw invalid(
          `${where}: an on_failure edge leaves node "${source.key}", which has continue_on_error; a failure either follows the on_failure edges or continues along the ordinary ones: choose one`,
          { field: `${where}.on_failure` },
        );
      }
      if (source.type === 'END') {
        throw invalid(`${where}: an END node cannot fail, so it has no on_failure edges`, {
          field: `${where}.on_failure`,
        });
      }
    }
    return {
      from,
      to,
      label: e.label ?? null,
      condition_jsonlogic: e.condition_jsonlogic ?? null,
      on_failure: onFailure,
    };
  });
  for (const [i, n] of nodes.entries()) {
    const nRequired = n.type === 'JOIN' ? (n.config?.n_required as number | undefined) : undefined;
    if (nRequired !== undefined) {
      const incoming = new Set(edges.filter((e) => e.to === i).map((e) => e.from)).size;
      if (nRequired > incoming) {
        throw invalid(
          `nodes.${i} (key "${n.key}"): JOIN n_required is ${nRequired} but the node has ${incoming} predecessors`,
          {
            field: `nodes.${i}.config.n_required`,
          },
        );
      }
    }
  }
  const order = kahnOrder(
    nodes.length,
    edges.map((e) => [e.from, e.to]),
  );
  if (order.length < nodes.length) {
    const cycle = findCycle(
      nodes.length,
      edges.map((e) => [e.from, e.to]),
    ).map((i) => nodes[i].key);
    throw invalid(`the graph has a cycle: ${[...cycle, cycle[0]].join(' -> ')}`, { field: 'edges', cycle });
  }
  return { nodes, edges, order, warnings };
}

/**
 * Kahn's topological sort (execution rule 1). Among ready nodes the one listed first wins, so the
 * order is deterministic and follows the request order where the graph allows. Returns fewer than
 * `count` indexes when there is a cycle.
 */
export function kahnOrder(count: number, edges: ReadonlyArray<readonly [number, number]>): number[] {
  const inDegree = new Array<number>(count).fill(0);
  const out: number[][] = Array.from({ length: count }, () => []);
  for (const [from, to] of edges) {
    out[from].push(to);
    inDegree[to]++;
  }
  // Ready set as a sorted array: graphs are small (<= MAX_NODES), so insertion is cheap.
  const ready: number[] = [];
  for (let i = 0; i < count; i++) if (inDegree[i] === 0) ready.push(i);
  const order: number[] = [];
  while (ready.length > 0) {
    const n = ready.shift() as number;
    order.push(n);
    for (const m of out[n]) {
      if (--inDegree[m] === 0) {
        let at = ready.length;
        while (at > 0 && ready[at - 1] > m) at--;
        ready.splice(at, 0, m);
      }
    }
  }
  return order;
}

/** One cycle of the graph (node indexes in edge order), or [] when acyclic. */
export function findCycle(count: number, edges: ReadonlyArray<readonly [number, number]>): number[] {
  const out: number[][] = Array.from({ length: count }, () => []);
  for (const [from, to] of edges) out[from].push(to);
  const state = new Array<0 | 1 | 2>(count).fill(0);
  const stack: number[] = [];
  for (let start = 0; start < count; start++) {
    if (state[start] !== 0) continue;
    // Iterative DFS (no recursion limit on long chains).
    const iters: Array<{ node: number; next: number }> = [{ node: start, next: 0 }];
    state[start] = 1;
    stack.push(start);
    while (iters.length > 0) {
      const top = iters[iters.length - 1];
      if (top.next < out[top.node].length) {
        const m = out[top.node][top.next++];
        if (state[m] === 1) return stack.slice(stack.indexOf(m));
        if (state[m] === 0) {
          state[m] = 1;
          stack.push(m);
          iters.push({ node: m, next: 0 });
        }
      } else {
        state[top.node] = 2;
        stack.pop();
        iters.pop();
      }
    }
  }
  return [];
}
