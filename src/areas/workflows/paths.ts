/**
 * `available_paths` (docs/workflows.md "available_paths"): every dot-notation path a `var` can
 * reach in some data, so a UI can offer them. Lists of objects are merged by key (no numeric
 * indices): `{a: [{x: 1}, {y: 2}]}` gives `a`, `a.x`, `a.y`.
 */
import { lookup } from './jsonlogic.js';
import type { GraphEdge, GraphNode } from './plan.js';

const MAX_PATHS = 5000;

/** Reads a dot path through own properties only (undefined when missing). */
export function getPath(data: unknown, path: string): unknown {
  return path === '' ? data : lookup(data, path.split('.'));
}

export function availablePaths(data: unknown, prefix = ''): string[] {
  const out = new Set<string>();
  walk(data, prefix, out, 0);
  return [...out];
}

function walk(value: unknown, path: string, out: Set<string>, depth: number): void {
  if (out.size >= MAX_PATHS || depth > 32) return;
  if (Array.isArray(value)) {
    // A list contributes its own path and the merged keys of its object items.
    for (const item of value) {
      if (item !== null && typeof item === 'object') walk(item, path, out, depth + 1);
    }
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value)) {
    const p = path ? `${path}.${key}` : key;
    out.add(p);
    walk(child, p, out, depth + 1);
  }
}

type Schema = Record<string, unknown> | boolean | undefined;

/**
 * Paths a JSON Schema promises (an event definition's `data_schema`), before any event exists:
 * `properties`, array `items` (merged, no indices) and the branches of `allOf`/`anyOf`/`oneOf`.
 */
export function pathsFromSchema(schema: unknown, prefix: string): string[] {
  const out = new Set<string>();
  schemaWalk(schema as Schema, prefix, out, 0);
  return [...out];
}

function schemaWalk(schema: Schema, path: string, out: Set<string>, depth: number): void {
  if (!schema || typeof schema !== 'object' || depth > 16 || out.size >= MAX_PATHS) return;
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = schema[k];
    if (Array.isArray(branches)) for (const b of branches) schemaWalk(b as Schema, path, out, depth + 1);
  }
  const items = schema.items;
  if (items && typeof items === 'object') {
    for (const item of Array.isArray(items) ? items : [items])
      schemaWalk(item as Schema, path, out, depth + 1);
  }
  const props = schema.properties;
  if (props && typeof props === 'object') {
    for (const [key, child] of Object.entries(props as Record<string, Schema>)) {
      const p = path ? `${path}.${key}` : key;
      out.add(p);
      schemaWalk(child, p, out, depth + 1);
    }
  }
}

/**
 * The `nodes.*` paths a graph's own nodes promise whatever their plugins answer: each node's
 * output, a COMPUTE's wrapped `result`, a WAIT_EVENT's event envelope and `timed_out`, a CALL's
 * child (`run_id`, `status`, `outputs`), a FOREACH's `results`, and the
 * `error` of a node with on_failure edges
 * (docs/workflows.md "Failure branches").
 */
export function nodePaths(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): string[] {
  const handling = new Set(edges.filter((e) => e.on_failure).map((e) => e.from_node_id));
  const out = ['nodes'];
  for (const n of nodes) {
    const at = `nodes.${n.key}`;
    out.push(at, `${at}.output`);
    if (n.type === 'COMPUTE') out.push(`${at}.output.result`);
    if (n.type === 'WAIT_EVENT')
      out.push(
        `${at}.output.timed_out`,
        `${at}.output.event`,
        ...['id', 'source', 'type', 'subject', 'time', 'data'].map((f) => `${at}.output.event.${f}`),
      );
    if (n.type === 'CALL')
      out.push(
        `${at}.output.run_id`,
        ...(n.config?.wait === false ? [] : [`${at}.output.status`, `${at}.output.outputs`]),
      );
    if (n.type === 'FOREACH') out.push(`${at}.output.results`);
    if (handling.has(n.id)) out.push(`${at}.error`, `${at}.error.code`, `${at}.error.message`);
  }
  return out;
}
