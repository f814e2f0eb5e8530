import { Graph, layout } from '@dagrejs/dagre';

export interface GraphNodeIn {
  key: string;
  type: string;
  name?: string | null;
}
export interface GraphEdgeIn {
  id: string;
  from: string;
  to: string;
  label?: string | null;
  condition?: unknown;
  /** A failure branch (drawn dashed, in the failure colour, with "on failure"). */
  onFailure?: boolean;
}
export interface PlacedNode extends GraphNodeIn {
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface PlacedEdge extends GraphEdgeIn {
  points: { x: number; y: number }[];
  /** Where the edge's label (its label, else a short form of its condition) is drawn. */
  text: string | null;
  textAt: { x: number; y: number } | null;
}
export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const NODE_WIDTH = 168;
export const NODE_HEIGHT = 48;
const MARGIN = 16;

/** A condition short enough to read on an edge: `{"==":[{"var":"a"},1]}` becomes `a == 1`. */
export function conditionText(condition: unknown, max = 40): string | null {
  if (condition === null || condition === undefined) return null;
  const text = describe(condition);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function describe(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length !== 1) return JSON.stringify(value);
  const [op, args] = entries[0];
  if (op === 'var') return String(Array.isArray(args) ? args[0] : args);
  const list = Array.isArray(args) ? args : [args];
  if (list.length === 2 && /^(==|===|!=|!==|<|<=|>|>=|\+|-|\*|\/|%|in|and|or)$/.test(op)) {
    return `${describe(list[0])} ${op} ${describe(list[1])}`;
  }
  if (op === '!' && list.length === 1) return `!${describe(list[0])}`;
  return `${op}(${list.map(describe).join(', ')})`;
}

/**
 * Lays a workflow graph out top to bottom with dagre (its ranks follow the edges, so the trigger's
 * side is at the top and JOINs sit below all their inputs). Edges to unknown nodes are left out.
 */
/** An edge's text: its label, else a short form of its condition; a failure branch says so first. */
function edgeText(edge: GraphEdgeIn): string | null {
  const text = edge.label || conditionText(edge.condition);
  if (!edge.onFailure) return text;
  return text ? `on failure: ${text}` : 'on failure';
}

export function layoutGraph(nodes: GraphNodeIn[], edges: GraphEdgeIn[]): GraphLayout {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 48, edgesep: 16, marginx: MARGIN, marginy: MARGIN });
  for (const node of nodes) g.setNode(node.key, { width: NODE_WIDTH, height: NODE_HEIGHT });
  const keys = new Set(nodes.map((n) => n.key));
  const kept = edges.filter((e) => keys.has(e.from) && keys.has(e.to));
  for (const edge of kept) {
    const text = edgeText(edge);
    g.setEdge(
      edge.from,
      edge.to,
      text ? { width: text.length * 6.5, height: 14, labelpos: 'c' } : {},
      edge.id,
    );
  }
  layout(g);
  const graph = g.graph();
  return {
    nodes: nodes.map((node) => {
      const placed = g.node(node.key);
      return { ...node, x: placed.x, y: placed.y, width: NODE_WIDTH, height: NODE_HEIGHT };
    }),
    edges: kept.map((edge) => {
      const placed = g.edge({ v: edge.from, w: edge.to, name: edge.id });
      const text = edgeText(edge);
      return {
        ...edge,
        points: placed.points ?? [],
        text,
        textAt: text && placed.x !== undefined ? { x: placed.x, y: placed.y } : null,
      };
    }),
    width: Math.max(graph.width ?? 0, NODE_WIDTH + 2 * MARGIN),
    height: Math.max(graph.height ?? 0, NODE_HEIGHT + 2 * MARGIN),
  };
}
