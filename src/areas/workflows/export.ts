import { createdAfter, pagesByCreation } from '../../db/keyset.js';
import type { Db } from '../../db/store.js';
import { nodesOfRuns, toRun, toRunNode, type WorkflowRun, type WorkflowRunNode } from './store.js';

/** Which runs `svc export runs` writes: created in [since, until), of one subscription if given. */
export interface RunExportFilter {
  since: string;
  until: string;
  subscriptionId?: string;
}

// A page of runs with their nodes is what the export holds at once: kept small, so a large run (big
// event data, big outputs) still leaves the heap level.
const PAGE = 50;

/**
 * Runs as `GET /workflow_run/{id}` answers them, each with its nodes as `GET /workflow_run/{id}/node`
 * lists them, oldest first. Read a page at a time by (created_at, id), so memory stays level however
 * many runs match (docs/reliability.md "Export").
 */
export async function* exportRuns(
  db: Db,
  filter: RunExportFilter,
): AsyncGenerator<WorkflowRun & { nodes: WorkflowRunNode[] }> {
  const pages = pagesByCreation((after, size) => {
    let q = db
      .selectFrom('workflow_run')
      .selectAll()
      .where('created_at', '>=', filter.since)
      .where('created_at', '<', filter.until);
    if (filter.subscriptionId) q = q.where('event_subscription_id', '=', filter.subscriptionId);
    if (after) q = q.where(createdAfter(after));
    return q.orderBy('created_at').orderBy('id').limit(size).execute();
  }, PAGE);
  for await (const rows of pages) {
    const nodes = new Map<string, WorkflowRunNode[]>();
    for (const n of await nodesOfRuns(
      db,
      rows.map((r) => r.id),
    )) {
      const list = nodes.get(n.workflow_run_id) ?? [];
      list.push(toRunNode(n));
      nodes.set(n.workflow_run_id, list);
    }
    // In the node list's order: creation, then traversal position.
    const ordered = (list: WorkflowRunNode[]) =>
      list.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.position - b.position);
    for (const r of rows) yield { ...toRun(r), nodes: ordered(nodes.get(r.id) ?? []) };
  }
}
