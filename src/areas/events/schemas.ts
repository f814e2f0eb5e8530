import { type Static, Type } from '@sinclair/typebox';
import {
  Id,
  JsonObject,
  ListQuery,
  ListResponse,
  Nullable,
  QueryBoolean,
  Timestamp,
} from '../../http/schemas.js';

export const TASK_STATUSES = ['PENDING', 'IN_PROGRESS', 'DONE', 'FAILED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const EventDefinition = Type.Object(
  {
    event_type: Type.String(),
    schema_version: Type.String(),
    description: Type.String(),
    source: Type.String({ description: 'The source every event of this type carries (stable per area).' }),
    data_schema: JsonObject,
    subject_template: Type.String({
      description: 'The data field holding the subject, e.g. {user_id}: the id of the resource.',
    }),
    examples: Type.Array(JsonObject, { description: 'Complete example CloudEvents of this type.' }),
    deprecated: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const EventDefinitionQuery = ListQuery(
  ['event_type', 'schema_version', 'deprecated'],
  {
    event_type: Type.Optional(Type.String({ minLength: 1, description: 'Exact event type.' })),
    deprecated: Type.Optional(QueryBoolean),
    search: Type.Optional(
      Type.String({ minLength: 1, description: 'Case-insensitive partial match on type and description.' }),
    ),
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
    created_at_gte: Type.Optional(Timestamp),
    created_at_lte: Type.Optional(Timestamp),
    next_attempt_at_gte: Type.Optional(Timestamp),
    next_attempt_at_lte: Type.Optional(Timestamp),
    done_at_gte: Type.Optional(Timestamp),
    done_at_lte: Type.Optional(Timestamp),
  },
  { sortBy: 'created_at', sortDir: 'desc' },
);
export type EventDeliveryTaskQuery = Static<typeof EventDeliveryTaskQuery>;

export const EventDeliveryTaskList = ListResponse('tasks', EventDeliveryTask);
