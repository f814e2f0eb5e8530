import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search, TimeRanges } from '../../http/list-schemas.js';
import { Id, JsonObject, Nullable, Timestamp } from '../../http/schemas.js';

export const TASK_STATUSES = ['PENDING', 'IN_PROGRESS', 'DONE', 'FAILED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const EventDefinition = Type.Object(
  {
    event_type: Type.String(),
    schema_version: Type.String({ description: '"1.0", then "2.0", ... each time data_schema changes.' }),
    description: Type.String(),
    source: Nullable(
      Type.String({
        description:
          'The source every event of a built-in type carries; null for a custom type (any source).',
      }),
    ),
    data_schema: Nullable(JsonObject),
    subject_template: Nullable(
      Type.String({
        description:
          'The data field holding the subject, e.g. {user_id}: the id of the resource; null for a custom type.',
      }),
    ),
    examples: Type.Array(JsonObject, { description: 'Complete example CloudEvents of this type.' }),
    deprecated: Type.Boolean(),
    builtin: Type.Boolean({ description: "One of svc's own types (svc.*), or registered by a user." }),
    created_at: Nullable(Timestamp),
    updated_at: Nullable(Timestamp),
  },
  { $id: 'EventDefinition', additionalProperties: false },
);

/** What a custom event type may be called: CloudEvents `type` characters that fit a URL path. */
export const CUSTOM_EVENT_TYPE = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$';

const DefinitionFields = {
  description: Type.String({ maxLength: 2000 }),
  data_schema: Nullable(
    Type.Object(
      {},
      { additionalProperties: true, description: "JSON Schema (draft-07 or 2019-09) of the events' data." },
    ),
  ),
  examples: Type.Array(JsonObject, {
    maxItems: 20,
    description: 'Complete example CloudEvents of the type; each must be valid and match data_schema.',
  }),
  deprecated: Type.Boolean({
    description: 'Still accepted; subscriptions and webhooks naming it get a warning.',
  }),
};

export const CreateEventDefinition = Type.Object(
  {
    event_type: Type.String({
      pattern: CUSTOM_EVENT_TYPE,
      description: 'Reverse-DNS style, e.g. com.example.order.created; the svc. prefix is reserved.',
    }),
    description: Type.Optional(DefinitionFields.description),
    data_schema: Type.Optional(DefinitionFields.data_schema),
    examples: Type.Optional(DefinitionFields.examples),
    deprecated: Type.Optional(DefinitionFields.deprecated),
  },
  {
    additionalProperties: false,
    examples: [
      {
        event_type: 'com.example.order.created',
        description: 'An order was placed in the shop.',
        data_schema: {
          type: 'object',
          required: ['order_id', 'total'],
          properties: { order_id: { type: 'string' }, total: { type: 'number' } },
        },
      },
    ],
  },
);
export type CreateEventDefinition = Static<typeof CreateEventDefinition>;

export const UpdateEventDefinition = Type.Object(
  {
    description: Type.Optional(DefinitionFields.description),
    data_schema: Type.Optional(DefinitionFields.data_schema),
    examples: Type.Optional(DefinitionFields.examples),
    deprecated: Type.Optional(DefinitionFields.deprecated),
  },
  { additionalProperties: false, examples: [{ deprecated: true }] },
);
export type UpdateEventDefinition = Static<typeof UpdateEventDefinition>;

export const EventTypeParams = Type.Object(
  { event_type: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

/** POST /event takes a CloudEvent, a batch of them, or (binary mode) any data: checked by the service. */
export const PublishBody = Type.Unknown({
  description:
    'A CloudEvent (application/cloudevents+json or application/json), a JSON array of up to 100 ' +
    '(application/cloudevents-batch+json), or in binary mode the event data with ce-* headers.',
  examples: [
    {
      specversion: '1.0',
      id: 'order-1001',
      source: 'https://shop.example.com/orders',
      type: 'com.example.order.created',
      data: { order_id: '1001', total: 42.5 },
    },
  ],
});

const Accepted = Type.Object(
  {
    id: Type.String({ description: "The event id (the producer's)." }),
    duplicate: Type.Boolean({ description: 'True when this id was already published from this source.' }),
  },
  { additionalProperties: false },
);

export const PublishAnswer = Type.Union([
  Accepted,
  Type.Object({ events: Type.Array(Accepted) }, { additionalProperties: false }),
]);

export const DeleteEventDefinitionQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({
        description:
          'Delete even while enabled subscriptions or webhooks name the type (they stop matching).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EventDefinitionQuery = ListQuery(
  ['event_type', 'schema_version', 'deprecated'],
  {
    event_type: Type.Optional(Type.String({ minLength: 1, description: 'Exact event type.' })),
    deprecated: Type.Optional(QueryBoolean),
    builtin: Type.Optional(QueryBoolean),
    search: Type.Optional(Search('type and description')),
  },
  { sortBy: 'event_type', sortDir: 'asc' },
);
export type EventDefinitionQuery = Static<typeof EventDefinitionQuery>;

export const EventDefinitionList = ListResponse('event_definitions', EventDefinition);

export const EventDeliveryTask = Type.Object(
  {
    id: Type.String(),
    event_id: Type.String(),
    event_type: Type.String(),
    cloudevent: JsonObject,
    target: Type.String(),
    status: Type.Union(TASK_STATUSES.map((s) => Type.Literal(s))),
    error: Nullable(Type.String()),
    attempts: Type.Integer({ description: 'Attempts that failed; FAILED once it reaches max_attempts.' }),
    max_attempts: Type.Integer(),
    interruptions: Type.Integer({
      description:
        'Attempts a crash interrupted (the lease ran out): retried at once, not counted in attempts.',
    }),
    next_attempt_at: Timestamp,
    locked_until: Nullable(Timestamp),
    locked_by: Nullable(
      Type.String({ description: 'The worker holding (or, once DONE, that finished) the task.' }),
    ),
    done_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'EventDeliveryTask', additionalProperties: false },
);
export type EventDeliveryTask = Static<typeof EventDeliveryTask>;

export const TaskParams = Type.Object({ id: Id }, { additionalProperties: false });

export const EventDeliveryTaskQuery = ListQuery(
  ['created_at', 'updated_at', 'next_attempt_at', 'done_at', 'status', 'attempts', 'event_type'],
  {
    status: Type.Optional(Type.Union(TASK_STATUSES.map((s) => Type.Literal(s)))),
    target: Type.Optional(Type.String({ minLength: 1 })),
    ...TimeRanges('created_at', 'next_attempt_at', 'done_at'),
  },
);
export type EventDeliveryTaskQuery = Static<typeof EventDeliveryTaskQuery>;

export const EventDeliveryTaskList = ListResponse('tasks', EventDeliveryTask);
