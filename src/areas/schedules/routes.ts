import { allScopes, anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { DeletedBody, errorAnswers } from '../../http/schemas.js';
import {
  CreateSchedule,
  Schedule,
  ScheduleList,
  ScheduleParams,
  ScheduleQuery,
  UpdateSchedule,
} from './schemas.js';
import type { ScheduleService } from './service.js';

const tags = ['schedules'];
/** A schedule publishes events for ever: writing one takes what publishing takes, and more. */
const WRITE = allScopes('event_subscription:write', 'workflow:execute');

/** /schedule CRUD (docs/schedules.md). */
export function registerScheduleRoutes(api: App, { schedules }: { schedules: ScheduleService }): void {
  api.post(
    '/schedule',
    {
      schema: {
        operationId: 'createSchedule',
        tags,
        summary: 'Create a schedule',
        description:
          'Publishes an event of a registered custom type at each fire time of a cron expression, read in a ' +
          'time zone. The answer shows the next 5 fire times.',
        body: CreateSchedule,
        response: { 200: Schedule },
      },
      config: WRITE,
    },
    async (req) => schedules.create(req.principal.userId, req.body),
  );
  api.get(
    '/schedule',
    {
      schema: {
        operationId: 'listSchedules',
        tags,
        summary: 'List schedules',
        querystring: ScheduleQuery,
        response: { 200: ScheduleList },
      },
      config: anyScope('event_subscription:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('schedules', await schedules.list(page, filters), page);
    },
  );
  api.get(
    '/schedule/:id',
    {
      schema: {
        operationId: 'getSchedule',
        tags,
        summary: 'Get a schedule',
        params: ScheduleParams,
        response: { 200: Schedule, ...errorAnswers(404) },
      },
      config: anyScope('event_subscription:read'),
    },
    async (req) => schedules.get(req.params.id),
  );
  api.patch(
    '/schedule/:id',
    {
      schema: {
        operationId: 'updateSchedule',
        tags,
        summary: 'Change a schedule',
        description:
          'A new cron or timezone, or enabling it again, plans the next fire from now (a disabled spell is not ' +
          'caught up).',
        params: ScheduleParams,
        body: UpdateSchedule,
        response: { 200: Schedule, ...errorAnswers(404) },
      },
      config: WRITE,
    },
    async (req) => schedules.update(req.principal.userId, req.params.id, req.body),
  );
  api.delete(
    '/schedule/:id',
    {
      schema: {
        operationId: 'deleteSchedule',
        tags,
        summary: 'Delete a schedule',
        description: 'Soft delete: it fires no more.',
        params: ScheduleParams,
        response: { 200: DeletedBody, ...errorAnswers(404) },
      },
      config: WRITE,
    },
    async (req) => schedules.remove(req.principal.userId, req.params.id),
  );
}
