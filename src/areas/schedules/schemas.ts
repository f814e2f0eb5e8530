import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import {
  AuditFields,
  Description,
  Id,
  JsonObject,
  Nullable,
  patchBody,
  Timestamp,
} from '../../http/schemas.js';

export const CATCH_UP = ['none', 'last', 'all'] as const;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Cron = Type.String({
  minLength: 1,
  maxLength: 200,
  description: '5 fields (minute hour day month weekday) or 6 (seconds first), or @daily, @hourly, ...',
});
const Timezone = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'IANA time zone; UTC by default.',
});
const CatchUp = Type.Union(
  CATCH_UP.map((c) => Type.Literal(c)),
  {
    description:
      'Fire times missed while no worker ran (more than 60 s late): none skips them, last fires the latest ' +
      'one (the default), all fires each, at most 100, oldest first.',
  },
);

export const Schedule = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    cron: Type.String(),
    timezone: Type.String(),
    event_type: Type.String(),
    data: JsonObject,
    enabled: Type.Boolean(),
    catch_up: CatchUp,
    next_fire_times: Type.Array(Timestamp, { description: 'The next 5 fire times; empty while disabled.' }),
    last_fired_at: Nullable(Timestamp),
    last_error: Nullable(Type.String({ description: 'Why the last fire published nothing, if it did not.' })),
    ...AuditFields,
  },
  { $id: 'Schedule', additionalProperties: false },
);
export type Schedule = Static<typeof Schedule>;

export const CreateSchedule = Type.Object(
  {
    name: Name,
    description: Description,
    cron: Cron,
    timezone: Type.Optional(Timezone),
    event_type: Type.String({ minLength: 1, maxLength: 200, description: 'A registered custom event type.' }),
    data: Type.Optional(JsonObject),
    enabled: Type.Optional(Type.Boolean()),
    catch_up: Type.Optional(CatchUp),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Nightly export',
        cron: '0 2 * * *',
        timezone: 'Europe/Berlin',
        event_type: 'com.example.export.due',
        data: { scope: 'orders' },
      },
    ],
  },
);
export type CreateSchedule = Static<typeof CreateSchedule>;

export const UpdateSchedule = patchBody(CreateSchedule, [{ enabled: false }]);
export type UpdateSchedule = Static<typeof UpdateSchedule>;

export const ScheduleParams = Type.Object({ id: Id }, { additionalProperties: false });

export const ScheduleQuery = ListQuery(['created_at', 'updated_at', 'name', 'next_fire_at'], {
  enabled: Type.Optional(QueryBoolean),
  event_type: Type.Optional(Type.String({ minLength: 1, description: 'Exact event type.' })),
  search: Type.Optional(Search('the name')),
});

export const ScheduleList = ListResponse('schedules', Schedule);
