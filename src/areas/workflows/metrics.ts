import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../db/store.js';
import { counter, histogram } from '../../lib/metrics.js';
import { waitingRuns } from './flow-store.js';

export interface WorkflowMetrics {
  runStarted(subscriptionId: string): void;
  /** A run the loop guards did not start (reason: depth, rate). */
  runRefused(subscriptionId: string, reason: string): void;
  runFinished(subscriptionId: string, status: string): void;
  /** A node reached a final status (completed, failed), having started at some point. */
  nodeFinished(type: string, status: string, seconds: number): void;
  /** A run held back by flow control started, having waited this long since it was created. */
  runWaited(subscriptionId: string, seconds: number): void;
}

/**
 * Workflow runs and nodes on /metrics (counted by the process that created or finished them), and
 * the runs flow control holds back (read from the store at each scrape: the whole deployment's).
 */
export function createWorkflowMetrics(registry: Registry, store: Store): WorkflowMetrics {
  new Gauge({
    name: 'svc_workflow_runs_waiting',
    help: 'Runs held back by flow control, by subscription and reason (concurrency, throttle, debounce)',
    labelNames: ['subscription_id', 'reason'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const w of await waitingRuns(store.db))
        this.set({ subscription_id: w.subscriptionId, reason: w.reason }, w.count);
    },
  });
  const started = counter(
    registry,
    'svc_workflow_runs_started_total',
    'Workflow runs created, by subscription',
    ['subscription_id'],
  );
  const finished = counter(
    registry,
    'svc_workflow_runs_finished_total',
    'Workflow runs that ended, by subscription and status (completed, failed)',
    ['subscription_id', 'status'],
  );
  const refused = counter(
    registry,
    'svc_workflow_runs_refused_total',
    'Runs not started by the loop guards, by subscription and reason (depth, rate)',
    ['subscription_id', 'reason'],
  );
  const nodes = histogram(
    registry,
    'svc_workflow_node_duration_seconds',
    'Time from a node starting to its final status, by node type and status',
    ['type', 'status'],
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300, 3600],
  );
  const waited = histogram(
    registry,
    'svc_workflow_run_wait_seconds',
    'Time a run held back by flow control waited before it started, by subscription',
    ['subscription_id'],
    [0.01, 0.1, 0.5, 1, 5, 30, 60, 300, 3600, 86400],
  );
  return {
    runWaited: (subscription_id, seconds) => waited.observe({ subscription_id }, seconds),
    runStarted: (subscription_id) => started.inc({ subscription_id }),
    runRefused: (subscription_id, reason) => refused.inc({ subscription_id, reason }),
    runFinished: (subscription_id, status) => finished.inc({ subscription_id, status }),
    nodeFinished: (type, status, seconds) => nodes.observe({ type, status }, seconds),
  };
}
