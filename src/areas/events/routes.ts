import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers } from '../../http/schemas.js';
import {
  EventDefinitionList,
  EventDefinitionQuery,
  EventDeliveryTask,
  EventDeliveryTaskList,
  EventDeliveryTaskQuery,
  TaskParams,
} from './schemas.js';
import type { EventsService } from './service.js';

export function registerEventRoutes(api: App, { events }: { events: EventsService }): void {
  api.get(
    '/event_definition',
    {
      schema: {
        operationId: 'listEventDefinitions',
        tags: ['events'],
        summary: 'List the event definition registry',
        description: 'Every event type the service emits, with the JSON Schema of its data and examples.',
        querystring: EventDefinitionQuery,
        response: { 200: EventDefinitionList },
      },
      config: anyScope('event_subscription:read'),
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('event_definitions', events.listDefinitions(page, filters), page);
    },
  );

  api.get(
    '/event_delivery_task',
    {
      schema: {
        operationId: 'listEventDeliveryTasks',
        tags: ['events'],
        summary: 'List outbox tasks',
        description: 'The transactional outbox: one task per published event and its processing state.',
        querystring: EventDeliveryTaskQuery,
        response: { 200: EventDeliveryTaskList },
      },
      config: anyScope('event_subscription:read'),
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('tasks', await events.listTasks(page, filters), page);
    },
  );

  api.post(
    '/event_delivery_task/:id/retry',
    {
      schema: {
        operationId: 'retryEventDeliveryTask',
        tags: ['events'],
        summary: 'Retry a FAILED outbox task: PENDING, due now, attempts reset',
        description:
          'Hands the event to every handler again (they are idempotent: runs and deliveries that exist are ' +
          'not made twice). 409 EVENT.TASK_NOT_FAILED for a task that is not FAILED.',
        params: TaskParams,
        response: { 200: EventDeliveryTask, ...errorAnswers(409) },
      },
      config: anyScope('event_subscription:write'),
    },
    async (request) => events.retryTask(request.params.id),
  );
}
