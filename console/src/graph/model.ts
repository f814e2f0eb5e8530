import type { components } from '../api/schema';
import type { GraphEdgeIn, GraphNodeIn } from './layout';

type GraphRecord = components['schemas']['WorkflowGraph'];

/** A graph as `PUT /event_subscription/{id}/graph` takes it; edges name their nodes by key. */
export interface GraphInput {
  nodes: Array<{
    key: string;
    type: string;
    name?: string | null;
    description?: string | null;
    config?: Record<string, unknown> | null;
    retry_policy?: Record<string, unknown> | null;
    timeout_ms?: number | null;
    continue_on_error?: boolean;
  }>;
  edges: Array<{
    from_node_id: string;
    to_node_id: string;
    label?: string | null;
    condition_jsonlogic?: Record<string, unknown> | null;
    on_failure?: boolean;
  }>;
}

/** The stored graph in the editable form: ids replaced by keys, server-made fields left out. */
export function inputFromRecord(graph: GraphRecord): GraphInput {
  const keyOf = new Map(graph.nodes.map((n) => [n.id, n.key]));
  return {
    nodes: graph.nodes.map((n) => {
      const node: GraphInput['nodes'][number] = { key: n.key, type: n.type };
      if (n.name && n.name !== n.key) node.name = n.name;
      if (n.description) node.description = n.description;
      if (n.config && Object.keys(n.config).length > 0) node.config = n.config;
      if (n.retry_policy) node.retry_policy = n.retry_policy;
      if (n.timeout_ms !== null) node.timeout_ms = n.timeout_ms;
      if (n.continue_on_error) node.continue_on_error = true;
      return node;
    }),
    edges: graph.edges.map((e) => {
      const edge: GraphInput['edges'][number] = {
        from_node_id: keyOf.get(e.from_node_id) ?? e.from_node_id,
        to_node_id: keyOf.get(e.to_node_id) ?? e.to_node_id,
      };
      if (e.label) edge.label = e.label;
      if (e.condition_jsonlogic) edge.condition_jsonlogic = e.condition_jsonlogic;
      if (e.on_failure) edge.on_failure = true;
      return edge;
    }),
  };
}

/** What the graph drawing needs, from a draft that may be half-typed: anything unusable is dropped. */
export function drawableFromInput(input: unknown): { nodes: GraphNodeIn[]; edges: GraphEdgeIn[] } {
  const draft = (input ?? {}) as Partial<GraphInput>;
  const nodes = (Array.isArray(draft.nodes) ? draft.nodes : [])
    .filter((n) => n && typeof n.key === 'string' && n.key !== '')
    .map((n) => ({ key: n.key, type: String(n.type ?? '?'), name: n.name ?? null }));
  const edges = (Array.isArray(draft.edges) ? draft.edges : [])
    .filter((e) => e && typeof e.from_node_id === 'string' && typeof e.to_node_id === 'string')
    .map((e, i) => ({
      id: `e${i}`,
      from: e.from_node_id,
      to: e.to_node_id,
      label: e.label ?? null,
      condition: e.condition_jsonlogic ?? null,
      onFailure: e.on_failure === true,
    }));
  return { nodes: dedupe(nodes), edges };
}

function dedupe(nodes: GraphNodeIn[]): GraphNodeIn[] {
  const seen = new Set<string>();
  return nodes.filter((n) => !seen.has(n.key) && seen.add(n.key));
}

/**
 * The nodes a WORKFLOW.INVALID_GRAPH answer points at: `details.field` (`nodes.2.config.logic`,
 * `edges.0.to_node_id`) resolved against the draft that was sent, or `details.cycle`'s keys.
 */
export function nodesOfGraphError(details: Record<string, unknown> | undefined, sent: unknown): string[] {
  if (!details) return [];
  if (Array.isArray(details.cycle)) return details.cycle.map(String);
  const draft = (sent ?? {}) as Partial<GraphInput>;
  const field = typeof details.field === 'string' ? details.field : '';
  const node = /^nodes\.(\d+)(\.|$)/.exec(field);
  if (node) {
    const key = draft.nodes?.[Number(node[1])]?.key;
    return typeof key === 'string' ? [key] : [];
  }
  const edge = /^edges\.(\d+)(\.|$)/.exec(field);
  if (edge) {
    const e = draft.edges?.[Number(edge[1])];
    return e ? [e.from_node_id, e.to_node_id].filter((k) => typeof k === 'string') : [];
  }
  return [];
}

/** Save warnings by the node key they name (`nodes.<i> (key "k")...` or `... (field nodes.<i>...)`). */
export function warningsByNode(
  warnings: readonly string[] | undefined,
): Array<{ key: string | null; text: string }> {
  return (warnings ?? []).map((text) => ({ key: /\(key "([^"]+)"\)/.exec(text)?.[1] ?? null, text }));
}

/** The stored graph for drawing (a run's or a test's), edges keeping their ids. */
export function drawableFromRecord(graph: GraphRecord): { nodes: GraphNodeIn[]; edges: GraphEdgeIn[] } {
  const keyOf = new Map(graph.nodes.map((n) => [n.id, n.key]));
  return {
    nodes: graph.nodes.map((n) => ({ key: n.key, type: n.type, name: n.name })),
    edges: graph.edges.map((e) => ({
      id: e.id,
      from: keyOf.get(e.from_node_id) ?? e.from_node_id,
      to: keyOf.get(e.to_node_id) ?? e.to_node_id,
      label: e.label,
      condition: e.condition_jsonlogic,
      onFailure: e.on_failure,
    })),
  };
}
