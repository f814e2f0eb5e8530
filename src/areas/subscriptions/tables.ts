/** Event subscriptions and their versioned graphs (migration 0006_workflows). */
export interface EventSubscriptionTable {
  id: string;
  name: string;
  event_type: string;
  description: string | null;
  enabled: number;
  source_filter: string | null;
  subject_filter: string | null;
  /** JSONLogic as JSON text. */
  condition_jsonlogic: string | null;
  /** The current graph version; every PUT graph writes a new one (0: no graph saved yet). */
  graph_version: number;
  /** Runs started per minute before the rate guard pauses it; null: SVC_WORKFLOW_MAX_RUNS_PER_MINUTE. */
  max_runs_per_minute: number | null;
  /** Set when the rate guard paused (disabled) it; cleared when it is enabled again. */
  paused_reason: string | null;
  paused_at: string | null;
  /** Seconds its completed, skipped and cancelled runs are kept; null: SVC_RETENTION_COMPLETED_RUNS_SECONDS. */
  retention_completed_runs_seconds: number | null;
  /** Seconds its failed runs are kept; null: SVC_RETENTION_FAILED_RUNS_SECONDS. */
  retention_failed_runs_seconds: number | null;
  /** docs/workflows.md "Flow control" as JSON text; null: none. */
  flow_control: string | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

/** Rows are immutable once written: a PUT graph soft-deletes them and writes a new version. */
export interface WorkflowNodeTable {
  id: string;
  event_subscription_id: string;
  graph_version: number;
  /** Order in the saved request (Kahn's tie-break). */
  position: number;
  key: string;
  name: string;
  description: string | null;
  type: string;
  config: string | null;
  retry_policy: string | null;
  timeout_ms: number | null;
  continue_on_error: number;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface WorkflowEdgeTable {
  id: string;
  event_subscription_id: string;
  graph_version: number;
  position: number;
  from_node_id: string;
  to_node_id: string;
  label: string | null;
  condition_jsonlogic: string | null;
  /** 1: followed only when the source node failed after its retries (a failure branch). */
  on_failure: number;
  created_at: string;
  deleted_at: string | null;
}

export interface SubscriptionTables {
  event_subscription: EventSubscriptionTable;
  workflow_node: WorkflowNodeTable;
  workflow_edge: WorkflowEdgeTable;
}
