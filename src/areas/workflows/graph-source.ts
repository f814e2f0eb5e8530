import type { FlowControl } from './flow-control.js';
import type { GraphEdge, GraphNode } from './plan.js';

/**
 * What the engine and simulation need of the subscriptions area (services.subscriptions satisfies
 * it): the engine depends on this port, not on the area, as it does on ActionInvoker. Subscriptions
 * build on workflows (graph validation, expressions), never the reverse.
 */
export interface RoutedSubscription {
  id: string;
  event_type: string;
  enabled: boolean;
  source_filter: string | null;
  subject_filter: string | null;
  condition_jsonlogic: Record<string, unknown> | null;
  /** The rate guard's limit of runs started per minute; null: the server default. */
  max_runs_per_minute: number | null;
  /** How its runs are shaped (docs/workflows.md "Flow control"); null: not at all. */
  flow_control: FlowControl | null;
  /** The graph version new runs use. */
  graph_version: number;
}

export interface GraphSource {
  /** Enabled, active subscriptions on any of these event types. */
  routable(eventTypes: readonly string[]): Promise<RoutedSubscription[]>;
  /** An active subscription; throws its area's 404 otherwise. */
  getActive(id: string): Promise<RoutedSubscription>;
  /** The nodes and edges of one graph version (versions are immutable once written). */
  graphVersion(subscriptionId: string, version: number): Promise<{ nodes: GraphNode[]; edges: GraphEdge[] }>;
  /** Disables an enabled subscription saying why (the rate guard); false when it was not enabled. */
  pause(id: string, reason: string): Promise<boolean>;
}
