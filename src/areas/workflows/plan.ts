/**
 * A saved graph version compiled for execution: nodes in Kahn order with their in-edges, every
 * expression compiled once (edge conditions, COMPUTE logic, input mappings, until templates). Plans
 * are cached per (subscription, graph version): a saved version never changes (PUT graph writes a new
 * version), so a plan never goes stale and expressions are never re-parsed per event.
 */
import { Lru } from '../../lib/lru.js';
import { kahnOrder, type NodeSpec, type RetryPolicy } from './graph.js';
import { type Compiled, compile, isExpression } from './jsonlogic.js';
import type { NodeType } from './node-config.js';
import { parseTemplate, type TemplatePart } from './template.js';
import { type WaitSpec, waitSpecOf } from './wait-spec.js';

/** A saved node of a graph version: its validated spec with the ids the store gave it. */
export interface GraphNode extends Omit<NodeSpec, 'clientId'> {
  id: string;
  event_subscription_id: string;
  created_at: string;
}

export interface GraphEdge {
  id: string;
  event_subscription_id: string;
  from_node_id: string;
  to_node_id: string;
  label: string | null;
  condition_jsonlogic: Record<string, unknown> | null;
  on_failure: boolean;
  created_at: string;
}

export interface PlanEdge {
  id: string;
  from: string;
  to: string;
  condition: Compiled | null;
  conditionJson: Record<string, unknown> | null;
  /** A failure branch: passes only when `from` failed after its retries. */
  onFailure: boolean;
}

export type Mapping = (context: unknown) => unknown;

export interface PlanNode {
  id: string;
  key: string;
  type: NodeType;
  /** Position in traversal order. */
  index: number;
  config: Record<string, unknown> | null;
  retry: RetryPolicy | null;
  timeoutMs: number | null;
  continueOnError: boolean;
  /** It has on_failure edges: its failure follows them instead of failing the run. */
  handlesFailure: boolean;
  in: PlanEdge[];
  /** Distinct predecessor keys. */
  preds: string[];
  logic?: Mapping;
  mapping?: Mapping;
  template?: TemplatePart[];
  /** WAIT_EVENT: what it waits on, and its two correlation expressions compiled (none: no correlation). */
  wait?: { spec: WaitSpec; run: Compiled | null; event: Compiled | null };
  /** CALL, FOREACH with call: the subscription called, and whether the node waits for the child's end. */
  call?: { subscriptionId: string; wait: boolean };
  /** FOREACH: its items expression and limits; `mapping` is the action's input mapping or the call's input. */
  forEach?: {
    items: Mapping;
    concurrency: number;
    maxItems: number;
    onItemFailure: 'fail' | 'continue';
    /** The action each item runs (absent with call). */
    action?: { pluginInstanceId: string; pluginAction: string };
  };
}

export interface Plan {
  subscriptionId: string;
  version: number;
  nodes: PlanNode[];
  byKey: Map<string, PlanNode>;
  edges: PlanEdge[];
}

/** Input mapping: JSONLogic objects are evaluated, other values pass through, containers recurse. */
export function compileMapping(value: unknown, where: string, topWhere = where): Mapping {
  if (isExpression(value)) {
    const fn = compile(value, topWhere);
    return (ctx) => fn(ctx);
  }
  if (Array.isArray(value)) {
    const items = value.map((v, i) => compileMapping(v, `${where}.${i}`));
    return (ctx) => items.map((f) => f(ctx));
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, compileMapping(v, `${where}.${k}`)] as const);
    return (ctx) => {
      const out: Record<string, unknown> = {};
      for (const [k, f] of entries) out[k] = f(ctx);
      return out;
    };
  }
  return () => value;
}

/** Compiles a saved graph version. Nodes are given in saved order (their `position`). */
export function buildPlan(
  subscriptionId: string,
  version: number,
  nodes: GraphNode[],
  edges: GraphEdge[],
): Plan {
  const indexById = new Map(nodes.map((n, i) => [n.id, i]));
  const pairs = edges.map(
    (e) => [indexById.get(e.from_node_id) ?? -1, indexById.get(e.to_node_id) ?? -1] as const,
  );
  if (pairs.some(([a, b]) => a < 0 || b < 0))
    throw new Error(`graph version ${version} has an edge to a missing node`);
  const order = kahnOrder(nodes.length, pairs);
  if (order.length < nodes.length) throw new Error(`graph version ${version} has a cycle`);
  const planEdges: PlanEdge[] = edges.map((e, i) => ({
    id: e.id,
    from: nodes[pairs[i][0]].key,
    to: nodes[pairs[i][1]].key,
    condition: e.condition_jsonlogic
      ? compile(
          e.condition_jsonlogic,
          `edge ${nodes[pairs[i][0]].key} -> ${nodes[pairs[i][1]].key} condition`,
        )
      : null,
    conditionJson: e.condition_jsonlogic,
    onFailure: e.on_failure === true,
  }));
  const handling = new Set(planEdges.filter((e) => e.onFailure).map((e) => e.from));
  const planNodes = order.map((i, index): PlanNode => {
    const n = nodes[i];
    const incoming = planEdges.filter((e) => e.to === n.key);
    const node: PlanNode = {
      id: n.id,
      key: n.key,
      type: n.type,
      index,
      config: n.config,
      retry: n.retry_policy,
      timeoutMs: n.timeout_ms,
      continueOnError: n.continue_on_error,
      handlesFailure: handling.has(n.key),
      in: incoming,
      preds: [...new Set(incoming.map((e) => e.from))],
    };
    // A COMPUTE whose logic is one expression reports its errors without a location prefix.
    if (n.type === 'COMPUTE') node.logic = compileMapping(n.config?.logic ?? null, 'logic', '');
    if (n.type === 'ACTION') node.mapping = compileMapping(n.config?.input_mapping ?? {}, 'input_mapping');
    if (n.type === 'DELAY' && typeof n.config?.until_template === 'string') {
      node.template = parseTemplate(n.config.until_template);
    }
    if (n.type === 'CALL') {
      node.mapping = compileMapping(n.config?.input ?? {}, 'input');
      node.call = { subscriptionId: n.config?.subscription_id as string, wait: n.config?.wait !== false };
    }
    if (n.type === 'FOREACH') {
      const c = n.config as Record<string, unknown>;
      const action = c.action as Record<string, unknown> | undefined;
      const call = c.call as Record<string, unknown> | undefined;
      node.mapping = action
        ? compileMapping(action.input_mapping ?? {}, 'action.input_mapping')
        : compileMapping(call?.input ?? {}, 'call.input');
      if (call) node.call = { subscriptionId: call.subscription_id as string, wait: true };
      node.forEach = {
        items: compileMapping(c.items, 'items', 'items'),
        concurrency: c.concurrency as number,
        maxItems: c.max_items as number,
        onItemFailure: c.on_item_failure === 'continue' ? 'continue' : 'fail',
        ...(action
          ? {
              action: {
                pluginInstanceId: action.plugin_instance_id as string,
                pluginAction: action.plugin_action as string,
              },
            }
          : {}),
      };
    }
    if (n.type === 'WAIT_EVENT') {
      const correlation = n.config?.correlation as { run: unknown; event: unknown } | undefined;
      node.wait = {
        spec: waitSpecOf(n.config),
        run: correlation ? compile(correlation.run, 'correlation.run') : null,
        event: correlation ? compile(correlation.event, 'correlation.event') : null,
      };
    }
    return node;
  });
  return {
    subscriptionId,
    version,
    nodes: planNodes,
    byKey: new Map(planNodes.map((n) => [n.key, n])),
    edges: planEdges,
  };
}

/**
 * How many (subscription, graph version) plans one engine keeps. Every active subscription that
 * events route to needs its plan on each run, so the bound must exceed the number of active
 * subscriptions: below it the LRU thrashes (events spread over more subscriptions than it holds make
 * nearly every lookup a miss) and each event pays a graph load and a recompile. A compiled 5-node
 * plan takes about 9 KB of heap, so 4096 plans cost some 35 MB at most, well inside a worker's budget.
 */
export const PLAN_CACHE_SIZE = 4096;

/** A bounded LRU of plans keyed by `<subscription id>:<graph version>`. */
export class PlanCache {
  private readonly plans: Lru<Promise<Plan>>;
  constructor(max = PLAN_CACHE_SIZE) {
    this.plans = new Lru(max);
  }

  get(subscriptionId: string, version: number, load: () => Promise<Plan>): Promise<Plan> {
    const key = `${subscriptionId}:${version}`;
    return this.plans.getOrCreate(key, () => {
      const plan = load();
      // A failed load is not cached.
      plan.catch(() => this.plans.delete(key));
      return plan;
    });
  }
}
