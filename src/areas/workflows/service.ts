import type { RetentionDefaults } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Tracer } from '../../lib/tracing.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventEnricher } from '../events/publish.js';
import type { Pruner } from '../retention/job.js';
import { requireRun } from './control.js';
import { exportRuns, type RunExportFilter } from './export.js';
import { FLOW_WINDOW_KEPT_MS } from './flow-control.js';
import * as flows from './flow-store.js';
import type { GraphSource } from './graph-source.js';
import * as items from './item-store.js';
import { CompiledCache, describeThrown, expressionProblem } from './jsonlogic.js';
import { availablePaths } from './paths.js';
import type { Plan } from './plan.js';
import { oldestFinishedRun, type RetentionSettingsSource, runPass } from './prune.js';
import { type ExpressionContext, eventContext, nodeError } from './run-state.js';
import { createRunTracing } from './run-tracing.js';
import { createSimulator, type Simulation } from './simulation.js';
import * as runs from './store.js';
import {
  type RunFilters,
  toNodeState,
  toRun,
  toRunNode,
  type WorkflowRun,
  type WorkflowRunNode,
} from './store.js';

export interface WorkflowServiceDeps {
  store: Store;
  clock: Clock;
  subscriptions: Pick<GraphSource, 'getActive' | 'graphVersion'> & RetentionSettingsSource;
  /** The engine's plan cache (one compiled plan per graph version). */
  planOf: (subscriptionId: string, version: number) => Promise<Plan>;
  /** The publisher's enricher: a simulated event is enriched as a published one is. */
  enrich?: EventEnricher;
  /** What a simulation asks of the plugins area: an ACTION's input checked as an invocation would. */
  actions?: {
    inputCheck(instanceId: string, action: string): Promise<(input: unknown) => string | undefined>;
  };
  /** Runs answer the trace their spans are in (docs/observability.md). */
  tracer?: Tracer;
  /** SVC_TRACE_URL_TEMPLATE: where a trace is shown, `{trace_id}` standing for its id. */
  traceUrlTemplate?: string;
}

/** Runs and introspection (docs/workflows.md "Runs and introspection") and the simulation endpoint. */
export interface WorkflowService {
  list(page: Page, filters: RunFilters): Promise<ListResult<WorkflowRun>>;
  get(id: string): Promise<WorkflowRun>;
  nodes(id: string): Promise<{ nodes: WorkflowRunNode[] }>;
  /** The expression context a node saw (or would see), and the paths available in it. */
  context(id: string, nodeKey: string): Promise<{ context: ExpressionContext; available_paths: string[] }>;
  /** POST /workflow/evaluate: a JSONLogic expression against given data or a run node's context. */
  evaluate(body: {
    expression: unknown;
    data?: unknown;
    workflow_run_id?: string;
    node_key?: string;
  }): Promise<{ result: object; data_used: unknown; available_paths: string[] }>;
  /** `waitedFor`: the events simulated WAIT_EVENTs may take (docs/workflows.md "Simulation"). */
  simulate(subscriptionId: string, event: CloudEvent, waitedFor?: readonly CloudEvent[]): Promise<Simulation>;
  /** Runs created in [since, until) with their nodes, oldest first, streamed (`svc export runs`). */
  exportRuns(filter: RunExportFilter): AsyncIterable<WorkflowRun & { nodes: WorkflowRunNode[] }>;
  /** Finished runs, kept by each subscription's retention or else the server's, for the prune job. */
  pruner(defaults: Pick<RetentionDefaults, 'completedRunsSeconds' | 'failedRunsSeconds'>): Pruner;
  /** The prune job's pass over flow control's windows: entries older than the longest period (a day). */
  flowWindowPruner(): Pruner;
}

export function createWorkflowService(deps: WorkflowServiceDeps): WorkflowService {
  const expressions = new CompiledCache(500);

  const runOrThrow = (id: string) => requireRun(deps.store.db, id);
  const simulator = createSimulator(deps);
  /** Runs are answered with the trace their spans are in (the same ids every process computes). */
  const tracing = createRunTracing(deps.tracer, deps.traceUrlTemplate);

  /**
   * The context a node of a run saw (or would see): the trigger event and the outputs of the nodes
   * that completed before it in traversal order.
   */
  async function contextAt(runId: string, nodeKey: string): Promise<ExpressionContext> {
    const row = await runOrThrow(runId);
    const nodes = (await runs.nodesOfRun(deps.store.db, runId)).map(toNodeState);
    const target = nodes.find((n) => n.key === nodeKey);
    if (!target) {
      throw new AppError('WORKFLOW.NODE_NOT_FOUND', `Run ${runId} has no node with key "${nodeKey}"`, {
        node_key: nodeKey,
        available_keys: nodes.map((n) => n.key),
      });
    }
    const context: ExpressionContext = {
      event: eventContext(JSON.parse(row.trigger_event) as CloudEvent),
      nodes: {},
    };
    const before = nodes.filter((n) => n.position < target.position);
    // A failure that on_failure edges handle is in the context as `error` (docs/workflows.md "Failure branches").
    const handling = before.some((n) => n.status === 'failed')
      ? await failureHandlers(row.event_subscription_id, row.graph_version)
      : new Set<string>();
    for (const n of before) {
      if (n.status === 'completed') context.nodes[n.key] = { output: n.output };
      else if (n.status === 'failed' && handling.has(n.node_id))
        context.nodes[n.key] = { output: null, error: nodeError(n.error) };
    }
    return context;
  }

  /** The ids of a graph version's nodes that have on_failure edges (none when it cannot be read). */
  async function failureHandlers(subscriptionId: string, version: number): Promise<Set<string>> {
    try {
      const { edges } = await deps.subscriptions.graphVersion(subscriptionId, version);
      return new Set(edges.filter((e) => e.on_failure).map((e) => e.from_node_id));
    } catch {
      return new Set();
    }
  }

  /**
   * A graph version's nodes, for the inputs it holds (withGraphInputs); none when it cannot be read
   * (a run of a damaged graph is still answered, those inputs null).
   */
  async function graphNodes(subscriptionId: string, version: number) {
    try {
      return (await deps.subscriptions.graphVersion(subscriptionId, version)).nodes;
    } catch {
      return [];
    }
  }

  function evaluate(expression: unknown, data: unknown): unknown {
    const problem = expressionProblem(expression);
    if (problem) {
      const field = problem.path ? `expression.${problem.path}` : 'expression';
      throw new AppError('WORKFLOW.EXPRESSION_INVALID', `${field}: ${problem.reason}`, { field });
    }
    let fn: (d: unknown) => unknown;
    try {
      fn = expressions.get(expression, 'expression');
      return fn(data);
    } catch (err) {
      throw new AppError('WORKFLOW.EXPRESSION_INVALID', describeThrown(err), { field: 'expression' });
    }
  }

  return {
    async *exportRuns(filter) {
      // Graph versions are immutable: each read once per export.
      const graphs = new Map<string, ReturnType<typeof graphNodes>>();
      for await (const run of exportRuns(deps.store.db, filter)) {
        if (!runs.needsGraphInputs(run.nodes)) {
          yield tracing.answered(run);
          continue;
        }
        const key = `${run.event_subscription_id}/${run.graph_version}`;
        let graph = graphs.get(key);
        if (!graph) {
          graph = graphNodes(run.event_subscription_id, run.graph_version);
          graphs.set(key, graph);
        }
        yield tracing.answered({ ...run, nodes: runs.withGraphInputs(run.nodes, await graph) });
      }
    },

    pruner: (defaults) => ({
      kind: 'runs',
      async pass(now) {
        const rules = (await deps.subscriptions.retentionSettings()).map((s) => ({
          subscriptionId: s.id,
          completedSeconds: s.retention.completed_runs_seconds ?? defaults.completedRunsSeconds,
          failedSeconds: s.retention.failed_runs_seconds ?? defaults.failedRunsSeconds,
        }));
        return runPass(deps.store, rules, now);
      },
      oldest: () => oldestFinishedRun(deps.store),
    }),

    flowWindowPruner: () => ({
      kind: 'flow_windows',
      async pass(now) {
        const before = iso(new Date(now.getTime() - FLOW_WINDOW_KEPT_MS));
        return async (limit) => {
          const n = await deps.store.write((db) => flows.pruneWindows(db, before, limit));
          const rows: Record<string, number> = n > 0 ? { flow_window: n } : {};
          return { records: n, rows };
        };
      },
      oldest: () => flows.oldestWindow(deps.store.db),
    }),

    async list(page: Page, filters: RunFilters) {
      const listed = await runs.listRuns(deps.store.db, page, filters);
      return { ...listed, items: listed.items.map((r) => tracing.answered(r)) };
    },

    async get(id: string): Promise<WorkflowRun> {
      return tracing.answered(toRun(await runOrThrow(id)));
    },

    async nodes(id: string) {
      const run = await runOrThrow(id);
      let nodes = (await runs.nodesOfRun(deps.store.db, id)).map(toRunNode);
      if (nodes.some((n) => n.node_type === 'FOREACH' && n.started_at !== null)) {
        const counts = await items.itemCounts(deps.store.db, id);
        nodes = nodes.map((n) => {
          if (n.node_type !== 'FOREACH' || n.started_at === null) return n;
          const c = counts.get(n.node_key) ?? {};
          const total = (n.input as { count?: number } | null)?.count ?? 0;
          const progress = {
            total,
            completed: c.completed ?? 0,
            failed: c.failed ?? 0,
            running: c.running ?? 0,
          };
          return { ...n, progress };
        });
      }
      if (!runs.needsGraphInputs(nodes)) return { nodes };
      const graph = await graphNodes(run.event_subscription_id, run.graph_version);
      return { nodes: runs.withGraphInputs(nodes, graph) };
    },

    async context(id: string, nodeKey: string) {
      const context = await contextAt(id, nodeKey);
      return { context, available_paths: availablePaths(context) };
    },

    /** POST /workflow/evaluate: direct mode (`data`) or from-run mode (`workflow_run_id` + `node_key`). */
    async evaluate(body: {
      expression: unknown;
      data?: unknown;
      workflow_run_id?: string;
      node_key?: string;
    }) {
      const direct = body.data !== undefined;
      const fromRun = body.workflow_run_id !== undefined || body.node_key !== undefined;
      if (direct && fromRun) {
        throw new AppError(
          'VALIDATION_ERROR',
          'Give either data (direct mode) or workflow_run_id and node_key (from-run mode), not both',
          {
            field: 'data',
          },
        );
      }
      if (!direct && !fromRun) {
        throw new AppError(
          'VALIDATION_ERROR',
          'Give data (direct mode) or workflow_run_id and node_key (from-run mode)',
          {
            field: 'data',
          },
        );
      }
      if (fromRun && body.workflow_run_id === undefined) {
        throw new AppError('VALIDATION_ERROR', 'workflow_run_id is required with node_key', {
          field: 'workflow_run_id',
        });
      }
      if (fromRun && body.node_key === undefined) {
        throw new AppError('VALIDATION_ERROR', 'node_key is required with workflow_run_id', {
          field: 'node_key',
        });
      }
      const data = direct
        ? body.data
        : await contextAt(body.workflow_run_id as string, body.node_key as string);
      const value = evaluate(body.expression, data);
      const result =
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? value
          : { value: value ?? null };
      return { result, data_used: data, available_paths: availablePaths(data) };
    },

    simulate: (subscriptionId, given, waitedFor = []) => simulator.simulate(subscriptionId, given, waitedFor),
  };
}
