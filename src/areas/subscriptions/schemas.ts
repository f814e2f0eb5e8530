import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import {
  Description,
  Id,
  JsonObject,
  Nullable,
  patchBody,
  RetentionSeconds,
  retentionSchemas,
  Timestamp,
  Warnings,
} from '../../http/schemas.js';
import { FlowControl } from '../workflows/flow-control.js';

/** Request and response shapes of /event_subscription and its graph (docs/workflows.md "Graphs"). */

const Name = Type.String({ minLength: 1, maxLength: 200 });
const EventType = Type.String({ minLength: 1, maxLength: 200 });
const Filter = Type.String({ minLength: 1, maxLength: 500 });

/** How long this subscription's finished runs are kept (docs/reliability.md "Retention"). */
export const RunRetention = retentionSchemas({
  completed_runs_seconds: RetentionSeconds(
    'completed, skipped and cancelled runs, with their nodes,',
    'SVC_RETENTION_COMPLETED_RUNS_SECONDS',
  ),
  failed_runs_seconds: RetentionSeconds('failed runs', 'SVC_RETENTION_FAILED_RUNS_SECONDS'),
});
export type RunRetention = Static<typeof RunRetention.answer>;

const SubscriptionFields = {
  name: Name,
  event_type: EventType,
  description: Description,
  enabled: Type.Optional(Type.Boolean()),
  source_filter: Type.Optional(Nullable(Filter)),
  subject_filter: Type.Optional(Nullable(Filter)),
  condition_jsonlogic: Type.Optional(Nullable(JsonObject)),
  max_runs_per_minute: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description:
          'Runs started per minute (every run, at any depth) before the rate guard pauses the subscription; null: the server default, SVC_WORKFLOW_MAX_RUNS_PER_MINUTE, which counts only runs caused by runs',
      }),
    ),
  ),
  retention: RunRetention.body,
  flow_control: Type.Optional(
    Type.Union([FlowControl, Type.Null()], {
      description:
        'How runs are shaped (docs/workflows.md "Flow control"): concurrency, throttle, rate_limit, debounce, priority. A PATCH replaces it whole; null removes it.',
    }),
  ),
};

export const CreateSubscription = Type.Object(SubscriptionFields, {
  examples: [
    {
      name: 'Alert on high scores',
      event_type: 'svc.submission.created',
      condition_jsonlogic: { '>': [{ var: 'event.data.answers.score' }, 5] },
    },
  ],
  additionalProperties: false,
});
export type CreateSubscription = Static<typeof CreateSubscription>;

export const UpdateSubscription = patchBody(CreateSubscription, [{ enabled: false }]);
export type UpdateSubscription = Static<typeof UpdateSubscription>;

export const Subscription = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    event_type: Type.String(),
    description: Nullable(Type.String()),
    enabled: Type.Boolean(),
    source_filter: Nullable(Type.String()),
    subject_filter: Nullable(Type.String()),
    condition_jsonlogic: Nullable(JsonObject),
    max_runs_per_minute: Nullable(Type.Integer()),
    retention: RunRetention.answer,
    flow_control: Nullable(FlowControl),
    /** Why the rate guard paused it (enabled is then false); cleared by enabling it again. */
    paused_reason: Nullable(Type.String()),
    paused_at: Nullable(Timestamp),
    warnings: Warnings,
    created_at: Timestamp,
    updated_at: Timestamp,
    updated_by: Nullable(Type.String()),
    deleted_at: Nullable(Timestamp),
  },
  { $id: 'EventSubscription' },
);

export const SUBSCRIPTION_SORT = ['created_at', 'updated_at', 'name', 'event_type', 'enabled'] as const;

export const SubscriptionQuery = ListQuery(SUBSCRIPTION_SORT, {
  event_type: Type.Optional(Type.String({ minLength: 1 })),
  enabled: Type.Optional(QueryBoolean),
  name: Type.Optional(Search('the name')),
  search: Type.Optional(Search('the name')),
});
export const SubscriptionList = ListResponse('event_subscriptions', Subscription);

const RetryPolicyIn = Type.Object(
  {
    max_attempts: Type.Integer(),
    backoff: Type.Optional(Type.String()),
    base_seconds: Type.Optional(Type.Number()),
  },
  { additionalProperties: false },
);

export const NodeIn = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    key: Type.String({ maxLength: 200 }),
    name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    description: Description,
    type: Type.String({ maxLength: 50 }),
    config: Type.Optional(Nullable(JsonObject)),
    retry_policy: Type.Optional(Nullable(RetryPolicyIn)),
    timeout_ms: Type.Optional(Nullable(Type.Integer())),
    continue_on_error: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const EdgeIn = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    from_node_id: Type.String({ minLength: 1, maxLength: 200 }),
    to_node_id: Type.String({ minLength: 1, maxLength: 200 }),
    label: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    condition_jsonlogic: Type.Optional(Nullable(JsonObject)),
    on_failure: Type.Optional(
      Type.Boolean({
        description:
          'A failure branch (docs/workflows.md "Failure branches"): followed only when the source node fails after its retries; the run then does not fail.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const PutGraphBody = Type.Object(
  {
    subscription: Type.Optional(Type.Object(UpdateSubscription.properties, { additionalProperties: false })),
    nodes: Type.Optional(Type.Array(NodeIn, { maxItems: 500 })),
    edges: Type.Optional(Type.Array(EdgeIn, { maxItems: 2000 })),
  },
  {
    examples: [
      {
        nodes: [
          {
            key: 'derive',
            type: 'COMPUTE',
            // A template: its keys are kept, its values evaluated (docs/workflows.md "Templates").
            config: {
              logic: {
                score: { var: 'event.data.answers.score' },
                doubled: { '*': [{ var: 'event.data.answers.score' }, 2] },
              },
            },
          },
          { key: 'done', type: 'END' },
        ],
        edges: [{ from_node_id: 'derive', to_node_id: 'done' }],
      },
    ],
    additionalProperties: false,
  },
);
export type PutGraphBody = Static<typeof PutGraphBody>;

export const RetryPolicy = Type.Object({
  max_attempts: Type.Integer(),
  backoff: Type.String(),
  base_seconds: Type.Number(),
});

export const Node = Type.Object({
  id: Type.String(),
  event_subscription_id: Type.String(),
  key: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  config: Nullable(JsonObject),
  retry_policy: Nullable(RetryPolicy),
  timeout_ms: Nullable(Type.Integer()),
  continue_on_error: Type.Boolean(),
  created_at: Timestamp,
});

export const Edge = Type.Object({
  id: Type.String(),
  event_subscription_id: Type.String(),
  from_node_id: Type.String(),
  to_node_id: Type.String(),
  label: Nullable(Type.String()),
  condition_jsonlogic: Nullable(JsonObject),
  on_failure: Type.Boolean(),
  created_at: Timestamp,
});

export const Graph = Type.Object(
  {
    subscription: Subscription,
    nodes: Type.Array(Node),
    edges: Type.Array(Edge),
    /** Dot paths expressions can use: the event envelope, `event.data.*` from the event definition's
     * data schema, and `nodes.<key>.output` (with an ACTION's output_schema properties). */
    available_paths: Type.Array(Type.String()),
    /** PUT only: client node/edge ids (or keys) to the server ids. */
    id_map: Type.Optional(Type.Record(Type.String(), Type.String())),
    /** PUT only, when there are any: a template key close to an operator (docs/workflows.md "Templates"). */
    warnings: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Present when the graph was saved with something to know: a template key one typo away from an operator.',
      }),
    ),
  },
  { $id: 'WorkflowGraph' },
);

export const SubscriptionParams = Type.Object({ id: Id }, { additionalProperties: false });
