import type { PlanNode } from './plan.js';
import type { NodeState } from './run-state.js';

/**
 * A JOIN's verdict on its predecessors (docs/workflows.md "Branches and JOIN"): satisfied (with its
 * output), failed (with why), or still waiting for branches. `finishedBy` says which predecessors
 * count: after a timeout, only those that finished by then.
 */
export function joinVerdict(
  node: PlanNode,
  stateOf: (key: string) => NodeState,
  finishedBy: (key: string) => boolean,
):
  | { state: 'satisfied'; output: unknown; mode: string; summary: string }
  | { state: 'failed'; message: string; mode: string; summary: string }
  | { state: 'waiting'; mode: string; summary: string } {
  const mode = (node.config?.mode as string | undefined) ?? 'ALL';
  const nRequired = node.config?.n_required as number | undefined;
  const completed: string[] = [];
  const failed: string[] = [];
  const skipped: string[] = [];
  const pending: string[] = [];
  for (const key of node.preds) {
    const s = stateOf(key);
    if (!finishedBy(key)) pending.push(key);
    else if (s.status === 'completed') completed.push(key);
    else if (s.status === 'failed') failed.push(key);
    else skipped.push(key);
  }
  const all = pending.length === 0;
  const list = (l: string[]) => (l.length ? l.map((k) => `"${k}"`).join(', ') : 'none');
  const summary = `completed: ${list(completed)}; failed: ${list(failed)}; skipped: ${list(skipped)}${
    pending.length ? `; still running: ${list(pending)}` : ''
  }`;
  let ok: boolean;
  let need: string;
  if (mode === 'ANY') {
    ok = completed.length >= Math.max(1, nRequired ?? 1);
    need = nRequired
      ? `${nRequired} completed predecessors (n_required)`
      : 'at least one completed predecessor';
  } else if (mode === 'N_OF_M') {
    ok = completed.length >= (nRequired ?? 1);
    need = `${nRequired} completed predecessors`;
  } else {
    ok = all && failed.length === 0 && completed.length >= (nRequired ?? 0);
    need =
      nRequired !== undefined && failed.length === 0 && all
        ? `${nRequired} completed predecessors (n_required)`
        : 'every non-skipped predecessor completed';
  }
  if (ok) return { state: 'satisfied', output: { mode, completed, failed, skipped, pending }, mode, summary };
  if (!all) return { state: 'waiting', mode, summary };
  return { state: 'failed', message: `JOIN ${mode} needs ${need} (${summary})`, mode, summary };
}

/** A JOIN's timeout: the node's timeout_ms, or config.timeout_ms (the same setting, older spelling). */
export function joinTimeout(node: PlanNode): number | null {
  return node.timeoutMs ?? (node.config?.timeout_ms as number | undefined) ?? null;
}
