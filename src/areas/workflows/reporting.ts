import type { Logger } from 'pino';
import type { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import type { NodeState } from './run-state.js';

/** One info line per finished run (what operators grep for first), and its count on /metrics. */
export function reportRunFinished({ run, plan }: RunMachine, log: Logger, metrics: WorkflowMetrics): void {
  const durationMs =
    run.started_at && run.completed_at ? Date.parse(run.completed_at) - Date.parse(run.started_at) : null;
  const line = {
    run_id: run.id,
    subscription_id: plan.subscriptionId,
    status: run.status,
    duration_ms: durationMs,
  };
  metrics.runFinished(plan.subscriptionId, run.status);
  if (run.status === 'failed') log.info({ ...line, error: run.error }, 'workflow run failed');
  else log.info(line, `workflow run ${run.status}`);
}

/** Counts the nodes of a durable write that reached a final status (each is written so once). */
export function countFinishedNodes(nodes: readonly NodeState[], metrics: WorkflowMetrics): void {
  for (const n of nodes) {
    if ((n.status === 'completed' || n.status === 'failed') && n.started_at && n.completed_at) {
      const seconds = (Date.parse(n.completed_at) - Date.parse(n.started_at)) / 1000;
      metrics.nodeFinished(n.type, n.status, Math.max(0, seconds));
    }
  }
}
