import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, TimeRanges } from '../../http/list-schemas.js';
import { Id, JsonObject, Nullable, Timestamp } from '../../http/schemas.js';

/** Shapes of workflow runs, introspection, evaluation and simulation (docs/workflows.md "Runs and introspection"). */

export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped', 'cancelled'] as const;
export const NODE_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped'] as const;

const Any = Type.Unknown();

export const Run = Type.Object(
  {
    id: Type.String(),
    event_subscription_id: Type.String(),
    graph_version: Type.Integer({ description: 'The graph version the run started with (and finishes on).' }),
    event_id: Type.String(),
    event_type: Type.String(),
    trigger_event: JsonObject,
    status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s))),
    started_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
    error: Nullable(Type.String()),
    rerun_of: Nullable(
      Type.String({ description: 'The run this one repeats (POST /workflow_run/{id}/rerun).' }),
    ),
    pending_reason: Nullable(
      Type.Union([Type.Literal('concurrency'), Type.Literal('throttle'), Type.Literal('debounce')], {
        description: 'Why a pending run waits (docs/workflows.md "Flow control"); null once it started.',
      }),
    ),
    flow_key: Nullable(
      Type.String({
        description:
          'The key of the limit a pending run waits on, as JSON text ("" when the whole subscription shares it).',
      }),
    ),
    priority: Type.Integer({ description: 'Among waiting runs, higher starts first (-100..100).' }),
    debounced_events: Nullable(
      Type.Integer({ description: 'Events a debounce folded into this run, its trigger included.' }),
    ),
    parent_run_id: Nullable(
      Type.String({
        description:
          'A child run (CALL, FOREACH with call): the run whose node started it (docs/workflows.md "CALL").',
      }),
    ),
    parent_node_key: Nullable(
      Type.String({ description: 'A child run: the key of the node that started it.' }),
    ),
    trace_id: Type.Optional(
      Nullable(
        Type.String({
          description:
            "The OpenTelemetry trace the run's spans are in (docs/observability.md); null when this svc does not trace.",
        }),
      ),
    ),
    trace_url: Type.Optional(
      Nullable(
        Type.String({
          description:
            'The trace in your tracing UI: SVC_TRACE_URL_TEMPLATE with the trace id; null without it.',
        }),
      ),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'WorkflowRun' },
);

const SkipReason = Type.Object({
  message: Type.String(),
  edges: Type.Array(
    Type.Object({
      edge_id: Type.String(),
      from_node_key: Type.String(),
      condition_jsonlogic: Any,
      not_taken: Type.Optional(
        Type.Union([Type.Literal('source_failed'), Type.Literal('source_did_not_fail')], {
          description:
            'Failure branches: an ordinary edge from a node that failed (source_failed), or an on_failure edge from one that did not; absent when the condition was false',
        }),
      ),
    }),
  ),
});

export const RunNode = Type.Object(
  {
    id: Type.String(),
    workflow_run_id: Type.String(),
    node_id: Type.String(),
    node_key: Type.String(),
    node_type: Type.String(),
    position: Type.Integer({ description: 'Traversal (Kahn) order of the node in the run.' }),
    status: Type.Union(NODE_STATUSES.map((s) => Type.Literal(s))),
    input: Any,
    output: Any,
    error: Nullable(Type.String()),
    skip_reason: Nullable(SkipReason),
    started_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
    attempts: Type.Integer(),
    resume_at: Nullable(Timestamp),
    waiting_for_limit: Type.Optional(
      Type.Object(
        {
          limit: Type.Union([Type.Literal('rate_limit'), Type.Literal('max_concurrency')]),
          plugin_instance_id: Type.String(),
        },
        {
          description:
            'An ACTION waiting for its plugin instance\'s limit (docs/plugins.md "Limits"): no attempt is counted; `resume_at` is when it asks again.',
        },
      ),
    ),
    progress: Type.Optional(
      Type.Object(
        {
          total: Type.Integer(),
          completed: Type.Integer(),
          failed: Type.Integer(),
          running: Type.Integer(),
        },
        { description: 'A FOREACH that started: its items done of total (docs/workflows.md "FOREACH").' },
      ),
    ),
    created_at: Timestamp,
  },
  { $id: 'WorkflowRunNode' },
);

export const RUN_SORT = [
  'created_at',
  'started_at',
  'completed_at',
  'status',
  'event_type',
  'event_subscription_id',
] as const;

export const RunQuery = ListQuery(RUN_SORT, {
  event_subscription_id: Type.Optional(Type.String({ minLength: 1 })),
  status: Type.Optional(Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)))),
  event_type: Type.Optional(Type.String({ minLength: 1 })),
  parent_run_id: Type.Optional(
    Type.String({ minLength: 1, description: 'The child runs of this run (CALL, FOREACH with call).' }),
  ),
  ...TimeRanges('started_at', 'completed_at'),
});
export const RunList = ListResponse('runs', Run);
export const RunNodeList = Type.Object({ nodes: Type.Array(RunNode) });

const Context = Type.Object({
  event: JsonObject,
  nodes: Type.Record(
    Type.String(),
    Type.Object({
      output: Any,
      error: Type.Optional(
        Type.Object(
          { code: Type.Optional(Type.String()), message: Type.String() },
          { description: 'A failed node with on_failure edges: what went wrong' },
        ),
      ),
    }),
  ),
});

export const ContextBody = Type.Object(
  { node_key: Type.String({ minLength: 1, maxLength: 200 }) },
  { examples: [{ node_key: 'derive' }], additionalProperties: false },
);
export const ContextResponse = Type.Object({ context: Context, available_paths: Type.Array(Type.String()) });

export const EvaluateBody = Type.Object(
  {
    expression: JsonObject,
    data: Type.Optional(JsonObject),
    workflow_run_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    node_key: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { examples: [{ expression: { '+': [{ var: 'a' }, 1] }, data: { a: 41 } }], additionalProperties: false },
);
export type EvaluateBody = Static<typeof EvaluateBody>;
export const EvaluateResponse = Type.Object({
  result: JsonObject,
  data_used: Any,
  available_paths: Type.Array(Type.String()),
});

/** A full CloudEvent envelope (extension attributes allowed, lower-case alphanumeric names). */
export const CloudEventIn = Type.Object(
  {
    specversion: Type.Literal('1.0'),
    id: Type.String({ minLength: 1, maxLength: 500 }),
    source: Type.String({ minLength: 1, maxLength: 1000 }),
    type: Type.String({ minLength: 1, maxLength: 500 }),
    subject: Type.Optional(Type.String({ maxLength: 1000 })),
    time: Type.Optional(Timestamp),
    datacontenttype: Type.Optional(Type.String({ maxLength: 200 })),
    dataschema: Type.Optional(Type.String({ maxLength: 1000 })),
    data: Type.Optional(Any),
  },
  { additionalProperties: false, patternProperties: { '^[a-z0-9]{1,20}$': Any } },
);

export const TestBody = Type.Object(
  {
    event: CloudEventIn,
    events: Type.Optional(
      Type.Array(CloudEventIn, {
        maxItems: 100,
        description:
          'Events a simulated WAIT_EVENT may take: the first of its event_type that brings its key resumes it; without one it times out (docs/workflows.md "Simulation")',
      }),
    ),
  },
  {
    examples: [
      {
        event: {
          specversion: '1.0',
          id: 'evt-1',
          source: '/svc/submissions',
          type: 'svc.submission.created',
          data: { answers: { score: 7 } },
        },
      },
    ],
    additionalProperties: false,
  },
);
export type TestBody = Static<typeof TestBody>;

const SimulatedNode = Type.Object({
  node_id: Type.String(),
  key: Type.String(),
  type: Type.String(),
  status: Type.Union(NODE_STATUSES.map((s) => Type.Literal(s))),
  input: Any,
  output: Any,
  error: Nullable(Type.String()),
  skip_reason: Nullable(SkipReason),
  attempts: Type.Integer(),
  context: Nullable(Context),
  available_paths: Type.Array(Type.String()),
});

export const SimulationResponse = Type.Object({
  subscription_id: Type.String(),
  event_id: Type.String(),
  status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s))),
  error: Nullable(Type.String()),
  routing: Type.Object({ matched: Type.Boolean(), reasons: Type.Array(Type.String()) }),
  nodes: Type.Array(SimulatedNode),
  edges_traversed: Type.Array(Type.String()),
});

export const RunParams = Type.Object({ id: Id }, { additionalProperties: false });

export const BulkCancelBody = Type.Object(
  {
    run_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 1000 }),
    ),
    event_subscription_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  {
    additionalProperties: false,
    description: 'Either run_ids or event_subscription_id (every pending or running run of it).',
    examples: [{ event_subscription_id: '019a6f3e-9a44-7c10-8e21-5b0d3f6c2a17' }],
  },
);
export type BulkCancelBody = Static<typeof BulkCancelBody>;

export const BulkCancelResponse = Type.Object(
  {
    cancelled: Type.Array(Type.String(), { description: 'The runs this request cancelled.' }),
    has_more: Type.Boolean({ description: 'More than 1000 matched: send the request again.' }),
  },
  { additionalProperties: false },
);

export const ReplayBody = Type.Object(
  {
    from: Timestamp,
    to: Timestamp,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  {
    additionalProperties: false,
    examples: [{ from: '2026-11-24T00:00:00Z', to: '2026-11-24T12:00:00Z', limit: 100 }],
  },
);
export type ReplayBody = Static<typeof ReplayBody>;

export const ReplayResponse = Type.Object(
  {
    run_ids: Type.Array(Type.String(), { description: 'The new runs, one per replayed event.' }),
    skipped: Type.Integer({
      description: "Events of the range the subscription's filters or condition turn away.",
    }),
    next_from: Nullable(Timestamp),
  },
  { additionalProperties: false },
);
