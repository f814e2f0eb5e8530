export interface NodeRun {
  node_key: string;
  node_type: string;
  status: string;
  position: number;
  started_at: string | null;
  completed_at: string | null;
  attempts: number;
}

export interface TimelineRow<T extends NodeRun> {
  node: T;
  /** Offset of the start and width of the bar, as percentages of the run's span. */
  offset: number;
  width: number;
  /** Milliseconds from start to end (to now while running); null when the node never started. */
  durationMs: number | null;
}

/**
 * A run's nodes as timeline rows in traversal order: each node's bar placed on the span from the
 * first start to the last end (or now, while something still runs).
 */
export function timeline<T extends NodeRun>(
  nodes: readonly T[],
  now: number,
): { rows: TimelineRow<T>[]; spanMs: number } {
  const ordered = [...nodes].sort((a, b) => a.position - b.position);
  const starts = ordered.flatMap((n) => (n.started_at ? [Date.parse(n.started_at)] : []));
  const end = (n: T) => (n.completed_at ? Date.parse(n.completed_at) : n.started_at ? now : null);
  const ends = ordered.flatMap((n) => {
    const e = end(n);
    return e === null ? [] : [e];
  });
  if (starts.length === 0) {
    return { rows: ordered.map((node) => ({ node, offset: 0, width: 0, durationMs: null })), spanMs: 0 };
  }
  const first = Math.min(...starts);
  const spanMs = Math.max(Math.max(...ends) - first, 1);
  return {
    spanMs,
    rows: ordered.map((node) => {
      if (!node.started_at) return { node, offset: 0, width: 0, durationMs: null };
      const s = Date.parse(node.started_at);
      const e = end(node) ?? s;
      return {
        node,
        offset: ((s - first) / spanMs) * 100,
        width: Math.max(((e - s) / spanMs) * 100, 0),
        durationMs: e - s,
      };
    }),
  };
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Which run-control buttons apply to a run in this status (the API refuses the others with 409). */
export function runActions(status: string): { cancel: boolean; rerun: boolean; retry: boolean } {
  const finished = ['completed', 'failed', 'cancelled', 'skipped'].includes(status);
  return { cancel: !finished, rerun: finished, retry: status === 'failed' };
}

/** Whether a graph's node keys are exactly a run's (else the subscription's graph changed since the run). */
export function sameNodes(graphKeys: readonly string[], ran: readonly { node_key: string }[]): boolean {
  const keys = new Set(graphKeys);
  return keys.size === ran.length && ran.every((n) => keys.has(n.node_key));
}

/** What a run node waits for or how far it got, as the run view says it beside the node. */
export interface NodeNote {
  text: string;
  /** A child run the node started (CALL): the run view links to it. */
  runId?: string;
}

interface NotedNode {
  node_type: string;
  status: string;
  input?: unknown;
  progress?: { total: number; completed: number; failed: number; running: number };
  waiting_for_limit?: { limit: string; plugin_instance_id: string };
}

/**
 * A WAIT_EVENT's event type, key and deadline while it waits; a FOREACH's items done of total; a
 * CALL's child run; an ACTION waiting for its plugin instance's limit (docs/workflows.md
 * "WAIT_EVENT", "FOREACH", "CALL", "ACTION"). Null for other nodes.
 */
export function nodeNote(node: NotedNode): NodeNote | null {
  const input = (node.input ?? {}) as Record<string, unknown>;
  if (node.waiting_for_limit) {
    const limit = node.waiting_for_limit.limit === 'rate_limit' ? 'rate limit' : 'max concurrency';
    return { text: `waits for its plugin instance's ${limit}` };
  }
  if (node.node_type === 'WAIT_EVENT' && node.status === 'running' && typeof input.event_type === 'string') {
    const key =
      input.correlation_key === null || input.correlation_key === undefined
        ? ''
        : ` with key ${JSON.stringify(input.correlation_key)}`;
    return { text: `waits for ${input.event_type}${key} until ${String(input.timeout_at)}` };
  }
  if (node.node_type === 'FOREACH' && node.progress) {
    const p = node.progress;
    const failed = p.failed > 0 ? `, ${p.failed} failed` : '';
    return { text: `${p.completed + p.failed} / ${p.total} items${failed}` };
  }
  if (node.node_type === 'CALL' && typeof input.run_id === 'string')
    return { text: 'child run', runId: input.run_id };
  return null;
}
