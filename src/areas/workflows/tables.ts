import type { WaitKind } from './run-state.js';

/** Workflow runs and run nodes (migration 0006_workflows). */
export interface WorkflowRunTable {
  id: string;
  event_subscription_id: string;
  /** The graph version the run started with; it finishes on it even if the graph is saved again. */
  graph_version: number;
  event_id: string;
  event_type: string;
  /** The full CloudEvent as JSON text. */
  trigger_event: string;
  status: 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
  started_at: string | null;
  completed_at: string | null;
  error: string | null;
  /**
   * When a worker should look at the run: while a worker executes it, the end of that worker's lease
   * (renewed by heartbeats); while it waits, the DELAY end or retry time; null once finished.
   */
  wake_at: string | null;
  /** The run this one repeats (POST /workflow_run/{id}/rerun); null for a run an event started. */
  rerun_of: string | null;
  /** Runs that led to the trigger event (its `svcdepth`); the rate guard counts runs caused by runs. */
  causation_depth: number;
  /** The worker executing the run (null while waiting or finished). */
  locked_by: string | null;
  /** Flow control (migration 0019): why a pending run waits, and the key of the queue it waits in. */
  pending_reason: 'concurrency' | 'throttle' | 'debounce' | null;
  flow_key: string | null;
  /** The concurrency key it runs under (counted while running); null without a concurrency limit. */
  concurrency_key: string | null;
  /** A debounced run's latest start (the first event folded in plus max_wait_ms). */
  flow_deadline: string | null;
  /** Events a debounce folded into the run, its trigger included; null without debounce. */
  debounced_events: number | null;
  /** Among waiting runs of a queue, higher starts first (-100..100). */
  priority: number;
  /** A child run (CALL, FOREACH with call: migration 0022): the run and node that started it. */
  parent_run_id: string | null;
  parent_node_key: string | null;
  /** 1 when that node waits for this run's end (wait true): the end wakes the parent. */
  awaited_by_parent: number;
  created_at: string;
  updated_at: string;
}

/** Starts (throttle) and admissions (rate_limit) per key, counted over a sliding window. */
export interface FlowWindowTable {
  id: string;
  subscription_id: string;
  part: 'throttle' | 'rate_limit';
  key: string;
  at: string;
}

export interface WorkflowRunNodeTable {
  id: string;
  workflow_run_id: string;
  node_id: string;
  node_key: string;
  node_type: string;
  /** Traversal (Kahn) position: orders nodes created in the same instant. */
  position: number;
  status: 'pending' | 'running' | 'completed' | 'failed' | 'skipped';
  input: string | null;
  output: string | null;
  error: string | null;
  /** Why the node was skipped (JSON: message and the false edges). */
  skip_reason: string | null;
  started_at: string | null;
  completed_at: string | null;
  attempts: number;
  interruptions: number;
  /** While running and waiting: when the wait ends; null while an attempt is in flight. */
  resume_at: string | null;
  /** While running and waiting: what for (run-state.ts WaitKind). */
  wait_kind: WaitKind | null;
  /**
   * A WAIT_EVENT waiting for its event: `<spec id>:<key as JSON>` (event-waits.ts); null otherwise,
   * and once an event or the timeout took the wait.
   */
  wait_key: string | null;
  created_at: string;
  updated_at: string;
}

/** One item of a FOREACH (docs/workflows.md "FOREACH"): durable one by one, in flight before its call. */
export interface WorkflowRunItemTable {
  id: string;
  workflow_run_id: string;
  node_key: string;
  item_index: number;
  status: 'running' | 'completed' | 'failed';
  /** The action's evaluated input, or the child's trigger data (call). */
  input: string | null;
  output: string | null;
  error: string | null;
  attempts: number;
  interruptions: number;
  /** While running: when the next retry is due; null while an attempt is in flight. */
  resume_at: string | null;
  /** call: the child run of the current attempt. */
  child_run_id: string | null;
  started_at: string | null;
  completed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** An event-side expression WAIT_EVENT nodes wait on, per event type (event-waits.ts). */
export interface WorkflowWaitSpecTable {
  /** A digest of (event_type, expression): the same spec from every graph and process. */
  id: string;
  event_type: string;
  /** correlation.event as JSON text; null: waits without correlation (the next event of the type). */
  expression: string | null;
  created_at: string;
}

export interface WorkflowTables {
  workflow_run: WorkflowRunTable;
  workflow_run_node: WorkflowRunNodeTable;
  flow_window: FlowWindowTable;
  workflow_wait_spec: WorkflowWaitSpecTable;
  workflow_run_item: WorkflowRunItemTable;
}
