import { auditInsert, auditUpdate } from '../../db/audit.js';
import { jsonText } from '../../db/json-text.js';
import type { Store } from '../../db/store.js';
import type { Collection } from '../../http/collection.js';
import { AppError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { EVENT_SOURCES } from '../events/definitions.js';
import type { EventTypeService } from '../events/event-types.js';
import type { EventPublisher } from '../events/publish.js';
import { type NodeInput, validateGraph } from '../workflows/graph.js';
import { nodePaths, pathsFromSchema } from '../workflows/paths.js';
import type { GraphEdge, GraphNode } from '../workflows/plan.js';
import { checkCondition, checkFlowControl } from './checks.js';
import { calledBy, checkGraphReferences } from './graph-checks.js';
import type { CreateSubscription, PutGraphBody, RunRetention, UpdateSubscription } from './schemas.js';
import * as st from './store.js';
import {
  publicSubscription,
  type RoutableSubscription,
  type Subscription,
  type SubscriptionPatch,
} from './store.js';
import type { WorkflowEdgeTable, WorkflowNodeTable } from './tables.js';

/** What the subscriptions area needs of the plugins area (ACTION nodes); see services.plugins. */
export interface ActionCatalog {
  describeAction(
    instanceId: string,
    action: string,
  ): Promise<{
    idempotent: boolean;
    timeout_seconds: number;
    input_schema?: Readonly<Record<string, unknown>>;
    output_schema?: unknown;
  }>;
}

export interface SubscriptionDeps {
  store: Store;
  clock: Clock;
  /** Validates ACTION nodes' plugin instance and action at save time, and gives their output paths. */
  actions?: ActionCatalog;
  /** The event type registry: event_type is checked when set; `event.data.*` paths come from its schema. */
  eventTypes: Pick<EventTypeService, 'checkNamed' | 'dataSchemaOf'>;
  /** Publishes svc.event_subscription.paused with the rate guard's pause. */
  publisher: EventPublisher;
}

export interface GraphView {
  subscription: Subscription;
  nodes: GraphNode[];
  edges: GraphEdge[];
  available_paths: string[];
  id_map?: Record<string, string>;
  warnings?: string[];
}

const ENVELOPE_PATHS = [
  'event',
  'event.id',
  'event.source',
  'event.type',
  'event.subject',
  'event.time',
  'event.data',
];

export type { RoutableSubscription };

const PAUSED_EVENT = 'svc.event_subscription.paused';

/** `warnings` (a deprecated event type) only when there are any. */
const warned = (warnings: string[]) => (warnings.length > 0 ? { warnings } : {});

/**
 * Event subscriptions and their graphs (docs/workflows.md "Subscriptions", "Graphs").
 * It is the workflow engine's GraphSource (routable, graphVersion).
 */
export interface SubscriptionService
  extends Collection<Subscription, CreateSubscription, UpdateSubscription, st.SubscriptionFilters> {
  getGraph(id: string): Promise<GraphView>;
  /** Replaces the graph (a new version); runs in flight finish on the version they started with. */
  putGraph(userId: string, id: string, body: PutGraphBody): Promise<GraphView>;
  routable(eventTypes: readonly string[]): Promise<RoutableSubscription[]>;
  /** For the runs API: the subscription even if deleted since. */
  getForRuns(id: string): Promise<RoutableSubscription | undefined>;
  getActive(id: string): Promise<RoutableSubscription>;
  graphVersion(subscriptionId: string, version: number): Promise<{ nodes: GraphNode[]; edges: GraphEdge[] }>;
  /** Enabled subscriptions on this event type, described: an event type in use is not deleted. */
  namingType(eventType: string): Promise<string[]>;
  /**
   * The rate guard's pause: disables an enabled subscription saying why and publishes
   * svc.event_subscription.paused in the same transaction; false when it was not enabled.
   */
  pause(id: string, reason: string): Promise<boolean>;
  /** Every subscription's run retention, deleted ones too: their runs stay until retention removes them. */
  retentionSettings(): Promise<Array<{ id: string; retention: RunRetention }>>;
}

export function createSubscriptionService(deps: SubscriptionDeps): SubscriptionService {
  const { store, clock } = deps;
  const now = () => iso(clock.now());

  const notFound = () => new AppError('EVENT_SUBSCRIPTION.NOT_FOUND', 'Event subscription not found');

  function patchOf(body: Partial<CreateSubscription>, field = ''): SubscriptionPatch {
    checkCondition(body.condition_jsonlogic, `${field}condition_jsonlogic`);
    const patch: SubscriptionPatch = {};
    if (body.name !== undefined) patch.name = body.name;
    if (body.event_type !== undefined) patch.event_type = body.event_type;
    if (body.description !== undefined) patch.description = body.description;
    if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
    // Enabling again is how a user lifts a rate-guard pause: the reason goes with it.
    if (body.enabled === true) {
      patch.paused_reason = null;
      patch.paused_at = null;
    }
    if (body.max_runs_per_minute !== undefined) patch.max_runs_per_minute = body.max_runs_per_minute;
    const retention = body.retention ?? {};
    if (retention.completed_runs_seconds !== undefined)
      patch.retention_completed_runs_seconds = retention.completed_runs_seconds;
    if (retention.failed_runs_seconds !== undefined)
      patch.retention_failed_runs_seconds = retention.failed_runs_seconds;
    if (body.flow_control !== undefined) {
      checkFlowControl(body.flow_control, `${field}flow_control`);
      patch.flow_control = jsonText(body.flow_control);
    }
    if (body.source_filter !== undefined) patch.source_filter = body.source_filter;
    if (body.subject_filter !== undefined) patch.subject_filter = body.subject_filter;
    if (body.condition_jsonlogic !== undefined)
      patch.condition_jsonlogic = jsonText(body.condition_jsonlogic);
    return patch;
  }

  /** A changed event_type must be registered; deprecated ones warn. */
  async function typeWarnings(eventType: string | undefined, field: string): Promise<string[]> {
    return eventType === undefined ? [] : deps.eventTypes.checkNamed([eventType], field);
  }

  async function getActive(id: string): Promise<RoutableSubscription> {
    const sub = await st.get(store.db, id);
    if (!sub) throw notFound();
    return sub;
  }

  /** The subscriptions' calls as the save of `subscriptionId`'s graph checks them (graph-checks.ts). */
  const callTargets = (subscriptionId: string) => {
    // One read per subscription per save, however many CALL nodes reach it.
    const read = new Map<string, Promise<{ event_type: string; calls: string[] } | undefined>>();
    const load = async (id: string) => {
      const sub = await st.get(store.db, id);
      if (!sub) return undefined;
      const graph = await st.currentGraph(store.db, id);
      const calls = graph.nodes.flatMap((n) => {
        const callee = calledBy(n);
        return callee === undefined ? [] : [callee];
      });
      return { event_type: sub.event_type, calls };
    };
    return {
      subscriptionId,
      target(id: string) {
        let found = read.get(id);
        if (!found) {
          found = load(id);
          read.set(id, found);
        }
        return found;
      },
    };
  };

  async function availablePaths(
    sub: { event_type: string },
    { nodes, edges }: { nodes: GraphNode[]; edges: GraphEdge[] },
  ): Promise<string[]> {
    const paths = [...ENVELOPE_PATHS];
    const schema = await deps.eventTypes.dataSchemaOf(sub.event_type);
    if (schema) paths.push(...pathsFromSchema(schema, 'event.data'));
    paths.push(...nodePaths(nodes, edges));
    for (const n of nodes) {
      if (n.type === 'WAIT_EVENT') {
        const waited = await deps.eventTypes.dataSchemaOf(n.config?.event_type as string);
        if (waited) paths.push(...pathsFromSchema(waited, `nodes.${n.key}.output.event.data`));
      }
      if (n.type === 'ACTION' && deps.actions) {
        try {
          const d = await deps.actions.describeAction(
            n.config?.plugin_instance_id as string,
            n.config?.plugin_action as string,
          );
          paths.push(...pathsFromSchema(d.output_schema, `nodes.${n.key}.output`));
        } catch {
          // An instance deleted since the save: no output paths to offer.
        }
      }
    }
    return [...new Set(paths)];
  }

  async function view(
    sub: RoutableSubscription,
    graph: { nodes: GraphNode[]; edges: GraphEdge[] },
  ): Promise<GraphView> {
    return {
      subscription: publicSubscription(sub),
      nodes: graph.nodes,
      edges: graph.edges,
      available_paths: await availablePaths(sub, graph),
    };
  }

  return {
    async create(userId: string, body: CreateSubscription): Promise<Subscription> {
      checkCondition(body.condition_jsonlogic, 'condition_jsonlogic');
      checkFlowControl(body.flow_control, 'flow_control');
      const warnings = await deps.eventTypes.checkNamed([body.event_type], 'event_type');
      const at = now();
      const row = {
        id: newId(),
        name: body.name,
        event_type: body.event_type,
        description: body.description ?? null,
        enabled: body.enabled === false ? 0 : 1,
        source_filter: body.source_filter ?? null,
        subject_filter: body.subject_filter ?? null,
        condition_jsonlogic: jsonText(body.condition_jsonlogic),
        max_runs_per_minute: body.max_runs_per_minute ?? null,
        retention_completed_runs_seconds: body.retention?.completed_runs_seconds ?? null,
        retention_failed_runs_seconds: body.retention?.failed_runs_seconds ?? null,
        flow_control: jsonText(body.flow_control),
        paused_reason: null,
        paused_at: null,
        graph_version: 0,
        ...auditInsert(at, userId),
      };
      await store.transaction((tx) => st.insert(tx.db, row));
      return { ...publicSubscription(st.toSubscription(row)), ...warned(warnings) };
    },

    list: (page: Page, filters: st.SubscriptionFilters) => st.list(store.db, page, filters),

    async get(id: string): Promise<Subscription> {
      return publicSubscription(await getActive(id));
    },

    async update(userId: string, id: string, body: UpdateSubscription): Promise<Subscription> {
      const patch = patchOf(body);
      const warnings = await typeWarnings(body.event_type, 'event_type');
      const updated = await store.transaction(async (tx) => {
        const current = await st.lock(tx, id);
        if (!current) throw notFound();
        await st.update(tx.db, id, { ...patch, ...auditUpdate(now(), userId) });
        return (await st.get(tx.db, id)) as RoutableSubscription;
      });
      return { ...publicSubscription(updated), ...warned(warnings) };
    },

    /** Soft delete: no new runs start; runs already running finish on their graph version. */
    async remove(userId: string, id: string): Promise<{ status: 'deleted' }> {
      await store.transaction(async (tx) => {
        const current = await st.lock(tx, id);
        if (!current) throw notFound();
        if (!(await st.softDelete(tx.db, id, now(), userId))) throw notFound();
      });
      return { status: 'deleted' };
    },

    async getGraph(id: string): Promise<GraphView> {
      const sub = await getActive(id);
      return view(sub, await st.currentGraph(store.db, id));
    },

    /**
     * PUT graph (docs/workflows.md "Graphs"): one transaction; validated first (nothing is written when
     * anything is wrong); old nodes and edges soft-deleted; new ones written as the next graph version
     * with server ids. Runs already started keep the version they started with.
     */
    async putGraph(userId: string, id: string, body: PutGraphBody): Promise<GraphView> {
      const patch = body.subscription ? patchOf(body.subscription, 'subscription.') : {};
      const warnings = await typeWarnings(body.subscription?.event_type, 'subscription.event_type');
      const replaceGraph = body.nodes !== undefined || body.edges !== undefined;
      const valid = replaceGraph
        ? validateGraph((body.nodes ?? []) as NodeInput[], body.edges ?? [])
        : undefined;
      if (valid)
        warnings.push(...(await checkGraphReferences(valid.nodes, { ...deps, calls: callTargets(id) })));
      const idMap: Record<string, string> = {};
      const { sub, graph } = await store.transaction(async (tx) => {
        const current = await st.lock(tx, id);
        if (!current) throw notFound();
        const at = now();
        const version = replaceGraph ? current.graph_version + 1 : current.graph_version;
        await st.update(tx.db, id, {
          ...patch,
          ...(replaceGraph ? { graph_version: version } : {}),
          ...auditUpdate(at, userId),
        } as SubscriptionPatch & { updated_at: string; updated_by: string });
        if (valid) {
          await st.softDeleteGraph(tx.db, id, at);
          const nodeRows: WorkflowNodeTable[] = valid.nodes.map((n, position) => {
            const serverId = newId();
            idMap[n.clientId ?? n.key] = serverId;
            return {
              id: serverId,
              event_subscription_id: id,
              graph_version: version,
              position,
              key: n.key,
              name: n.name,
              description: n.description,
              type: n.type,
              config: jsonText(n.config),
              retry_policy: jsonText(n.retry_policy),
              timeout_ms: n.timeout_ms,
              continue_on_error: n.continue_on_error ? 1 : 0,
              ...auditInsert(at, userId),
            };
          });
          const edgeRows: WorkflowEdgeTable[] = valid.edges.map((e, position) => {
            const serverId = newId();
            const clientId = (body.edges ?? [])[position]?.id;
            if (clientId !== undefined) idMap[clientId] = serverId;
            return {
              id: serverId,
              event_subscription_id: id,
              graph_version: version,
              position,
              from_node_id: nodeRows[e.from].id,
              to_node_id: nodeRows[e.to].id,
              label: e.label,
              condition_jsonlogic: jsonText(e.condition_jsonlogic),
              on_failure: e.on_failure ? 1 : 0,
              created_at: at,
              deleted_at: null,
            };
          });
          await st.insertGraph(tx.db, nodeRows, edgeRows);
        }
        return {
          sub: (await st.get(tx.db, id)) as RoutableSubscription,
          graph: await st.currentGraph(tx.db, id),
        };
      });
      const answer = await view(sub, graph);
      return {
        ...answer,
        subscription: { ...answer.subscription, ...warned(warnings) },
        id_map: idMap,
        ...warned(valid?.warnings ?? []),
      };
    },

    /** Enabled, non-deleted subscriptions of these event types (the router's indexed lookup). */
    routable: (eventTypes: readonly string[]) => st.routable(store.db, eventTypes),

    /** A subscription even when soft-deleted (runs and simulation of its graph versions). */
    async getForRuns(id: string): Promise<RoutableSubscription | undefined> {
      return st.get(store.db, id, { includeDeleted: true });
    },

    /** The active subscription with its graph version, or 404. */
    getActive,

    /** A saved graph version (immutable), for the engine's plan cache. */
    graphVersion: (subscriptionId: string, version: number) =>
      st.graphVersion(store.db, subscriptionId, version),

    pause: (id: string, reason: string) =>
      store.transaction(async (tx) => {
        const at = now();
        const name = await st.pause(tx.db, id, reason, at);
        if (name === undefined) return false;
        await deps.publisher.publish(tx, {
          type: PAUSED_EVENT,
          source: EVENT_SOURCES.event_subscription,
          subject: id,
          data: { event_subscription_id: id, name, reason, paused_at: at },
        });
        return true;
      }),

    async namingType(eventType: string): Promise<string[]> {
      const subs = await st.routable(store.db, [eventType]);
      return subs.map((s) => `subscription ${s.id} (${s.name})`);
    },

    retentionSettings: () => st.retentionSettings(store.db),
  };
}
