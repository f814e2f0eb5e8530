import { isPlainObject } from '../../lib/objects.js';
/**
 * Workflow graphs: the rules a graph must satisfy to be saved (docs/workflows.md "Graphs", "Node
 * types") and the topological order the engine traverses (Kahn, docs/workflows.md "Execution rules").
 * Pure: no store, no HTTP. A violation throws AppError WORKFLOW.INVALID_GRAPH (400) whose message
 * names the node and field, and whose details say where (`field`) and, for a cycle, which nodes.
 */
// Long file: one rule per node type and field, each short, read together as the graph contract;
// split, the contract would be scattered over files that always change together.

import { AppError } from '../../http/errors.js';
import { backoffMs } from '../../worker/retry-policy.js';
import { closestOperator, compileError, expressionProblem, isExpression } from './jsonlogic.js';
import { parseTemplate, TemplateError } from './template.js';

export const NODE_TYPES = ['ACTION', 'COMPUTE', 'SWITCH', 'JOIN', 'DELAY', 'END'] as const;
export type NodeType = (typeof NODE_TYPES)[number];
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
}

export interface ValidGraph {
  nodes: NodeSpec[];
  edges: EdgeSpec[];
  /** Node indexes in traversal (Kahn) order. */
  order: number[];
  /** What the save accepted but the author may not have meant: a template key close to an operator. */
  warnings: string[];
}

const invalid = (message: string, details: Record<string, unknown>): AppError =>
  new AppError('WORKFLOW.INVALID_GRAPH', message, details);

const isInt = (v: unknown, min: number): v is number => Number.isSafeInteger(v) && (v as number) >= min;

/**
 * The longest single wait a graph may ask for: a delay_ms, a timeout or one retry backoff. Waits are
 * persisted as timestamps, and an unbounded one (delay_ms up to 2^53) lies past the last date a
 * timestamp can hold; a year is far beyond any sane wait. A DELAY to a later moment says so with
 * until_template.
 */
export const MAX_WAIT_MS = 365 * 24 * 3600 * 1000;
const isWait = (v: unknown, min: number): v is number => isInt(v, min) && v <= MAX_WAIT_MS;

export function normaliseType(type: string): NodeType | undefined {
  const upper = type.trim().toUpperCase();
  return (NODE_TYPES as readonly string[]).includes(upper) ? (upper as NodeType) : undefined;
}

/** Validates one node's config for its type; returns the normalised config. */
/**
 * Where a value sits in the request: `path` is the machine-readable `details.field`
 * (`nodes.2.config.logic`), `label` the readable prefix of the message (`nodes.2 (key "a").config.logic`).
 */
interface Where {
  path: string;
  label: string;
}

const within = (at: Where, suffix: string): Where => ({
  path: `${at.path}.${suffix}`,
  label: `${at.label}.${suffix}`,
});

export function validateConfig(
  type: NodeType,
  config: Record<string, unknown> | null | undefined,
  at: Where,
  warnings: string[] = [],
): Record<string, unknown> | null {
  const fail = (field: string, message: string) =>
    invalid(`${at.label}: ${message}`, { field: `${at.path}.${field}` });
  const allowOnly = (c: Record<string, unknown>, allowed: string[]) => {
    for (const k of Object.keys(c)) {
      if (!allowed.includes(k)) {
        throw fail(
          `config.${k}`,
          `${type} config does not take "${k}" (allowed: ${allowed.join(', ') || 'none'})`,
        );
      }
    }
  };
  if (config !== null && config !== undefined && !isPlainObject(config))
    throw fail('config', 'config must be an object');
  const c = config ?? null;
  switch (type) {
    case 'ACTION': {
      if (!c) throw fail('config', 'ACTION requires config with plugin_instance_id and plugin_action');
      allowOnly(c, ['plugin_instance_id', 'plugin_action', 'input_mapping']);
      for (const f of ['plugin_instance_id', 'plugin_action']) {
        if (typeof c[f] !== 'string' || (c[f] as string).length === 0) {
          throw fail(`config.${f}`, `ACTION config.${f} is required (a non-empty string)`);
        }
      }
      if (c.input_mapping !== undefined && c.input_mapping !== null) {
        if (!isPlainObject(c.input_mapping))
          throw fail('config.input_mapping', 'config.input_mapping must be an object');
        checkMapping(c.input_mapping, within(at, 'config.input_mapping'), warnings, 0, true);
      }
      return { ...c, input_mapping: c.input_mapping ?? null };
    }
    case 'COMPUTE': {
      if (!c || !('logic' in c) || c.logic === undefined || c.logic === null) {
        throw fail('config.logic', 'COMPUTE requires config.logic (a JSONLogic expression)');
      }
      allowOnly(c, ['logic']);
      // Same rule as input mappings: operator objects are evaluated, other objects are templates.
      checkMapping(c.logic, within(at, 'config.logic'), warnings);
      return c;
    }
    case 'SWITCH': {
      if (!c) return null;
      allowOnly(c, ['mode']);
      if (c.mode === undefined || c.mode === null) return { mode: 'FIRST_TRUE' };
      const mode = typeof c.mode === 'string' ? c.mode.toUpperCase() : undefined;
      if (mode !== 'FIRST_TRUE' && mode !== 'ALL_TRUE') {
        throw fail('config.mode', 'SWITCH config.mode must be FIRST_TRUE or ALL_TRUE');
      }
      return { mode };
    }
    case 'JOIN': {
      if (!c) return null;
      allowOnly(c, ['mode', 'n_required', 'timeout_ms']);
      const mode =
        c.mode === undefined || c.mode === null
          ? 'ALL'
          : typeof c.mode === 'string'
            ? c.mode.toUpperCase()
            : '';
      if (!['ALL', 'ANY', 'N_OF_M'].includes(mode))
        throw fail('config.mode', 'JOIN config.mode must be ALL, ANY or N_OF_M');
      const out: Record<string, unknown> = { mode };
      if (mode === 'N_OF_M') {
        if (!isInt(c.n_required, 1))
          throw fail('config.n_required', 'JOIN N_OF_M requires config.n_required (an integer >= 1)');
        out.n_required = c.n_required;
      } else if (c.n_required !== undefined && c.n_required !== null) {
        if (!isInt(c.n_required, 1))
          throw fail('config.n_required', 'JOIN config.n_required must be an integer >= 1');
        out.n_required = c.n_required;
      }
      if (c.timeout_ms !== undefined && c.timeout_ms !== null) {
        if (!isWait(c.timeout_ms, 0))
          throw fail(
            'config.timeout_ms',
            `JOIN config.timeout_ms must be an integer between 0 and ${MAX_WAIT_MS} (365 days)`,
          );
        out.timeout_ms = c.timeout_ms;
      }
      return out;
    }
    case 'DELAY': {
      const hasDelay = c?.delay_ms !== undefined && c?.delay_ms !== null;
      const hasTemplate = c?.until_template !== undefined && c?.until_template !== null;
      if (!c || (!hasDelay && !hasTemplate)) {
        throw fail('config', 'DELAY requires config.delay_ms or config.until_template');
      }
      allowOnly(c, ['delay_ms', 'until_template']);
      const out: Record<string, unknown> = {};
      if (hasDelay) {
        if (!isWait(c.delay_ms, 0))
          throw fail(
            'config.delay_ms',
            `DELAY config.delay_ms must be an integer between 0 and ${MAX_WAIT_MS} (365 days); use until_template for a later moment`,
          );
        out.delay_ms = c.delay_ms;
      }
      if (hasTemplate) {
        if (typeof c.until_template !== 'string')
          throw fail('config.until_template', 'DELAY config.until_template must be a string');
        try {
          parseTemplate(c.until_template);
        } catch (err) {
          if (err instanceof TemplateError)
            throw fail('config.until_template', `DELAY config.until_template: ${err.message}`);
          throw err;
        }
        out.until_template = c.until_template;
      }
      return out;
    }
    case 'END': {
      if (c && Object.keys(c).length > 0) throw fail('config', 'END takes no config (null or {})');
      return null;
    }
  }
}

const MAX_TEMPLATE_DEPTH = 64;

/**
 * A template (COMPUTE logic, ACTION input mapping), docs/workflows.md "Templates": an object is an
 * operation if and only if it has exactly one key naming an operator svc knows, and must then be a
 * valid expression; every other object and every list is a template, its keys kept and its values
 * evaluated the same way; `preserve` keeps a literal as it is. A template key one typo away from an
 * operator ({"vr": ...}) is kept, with a warning. `fields`: the top of an input mapping, whose keys
 * name the input's fields even when one of them is spelled like an operator.
 */
function checkMapping(value: unknown, at: Where, warnings: string[], depth = 0, fields = false): void {
  if (depth > MAX_TEMPLATE_DEPTH) {
    throw invalid(`${at.label}: nested more than ${MAX_TEMPLATE_DEPTH} levels deep`, { field: at.path });
  }
  if (!fields && isExpression(value)) {
    const problem = expressionProblem(value);
    if (problem) {
      throw invalid(`${at.label}: not a valid JSONLogic expression: ${compileError(value)}`, {
        field: problem.path ? `${at.path}.${problem.path}` : at.path,
      });
    }
    const err = compileError(value, at.label);
    if (err) throw invalid(`${at.label}: not a valid JSONLogic expression: ${err}`, { field: at.path });
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) checkMapping(v, within(at, String(i)), warnings, depth + 1);
  } else if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const meant = !fields && keys.length === 1 ? closestOperator(keys[0]) : undefined;
    if (meant !== undefined) {
      warnings.push(
        `${at.label}: "${keys[0]}" is no operator, so this object is a template and "${keys[0]}" a key of its ` +
          `output; did you mean the operator "${meant}"? (field ${at.path})`,
      );
    }
    for (const [k, v] of Object.entries(value)) checkMapping(v, within(at, k), warnings, depth + 1);
  }
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
          type === 'DELAY' ? '; a DELAY waits for its config.delay_ms or until_template' : ''
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
    return { from, to, label: e.label ?? null, condition_jsonlogic: e.condition_jsonlogic ?? null };
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
