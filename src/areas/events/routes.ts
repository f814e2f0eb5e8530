import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { hardenedJsonParser } from '../../http/json-body.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { DeletedBody, errorAnswers } from '../../http/schemas.js';
import { eventsOfRequest } from './http-binding.js';
import {
  CreateEventDefinition,
  DeleteEventDefinitionQuery,
  EventDefinition,
  EventDefinitionList,
  EventDefinitionQuery,
  EventDeliveryTask,
  EventDeliveryTaskList,
  EventDeliveryTaskQuery,
  EventTypeParams,
  PublishAnswer,
  PublishBody,
  TaskParams,
  UpdateEventDefinition,
} from './schemas.js';
import type { EventsService } from './service.js';

const tags = ['events'];

export function registerEventRoutes(api: App, { events }: { events: EventsService }): void {
  api.get(
    '/event_definition',
    {
      schema: {
        operationId: 'listEventDefinitions',
        tags,
        summary: 'List the event definition registry',
        description:
          "Every event type: svc's own (builtin, svc.*) and the custom types users registered, with the JSON Schema of its data and examples.",
        querystring: EventDefinitionQuery,
        response: { 200: EventDefinitionList },
      },
      config: anyScope('event_subscription:read'),
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('event_definitions', await events.types.list(page, filters), page);
    },
  );

  api.get(
    '/event_definition/:event_type',
    {
      schema: {
        operationId: 'getEventDefinition',
        tags,
        summary: 'Get one event type',
        params: EventTypeParams,
        response: { 200: EventDefinition, ...errorAnswers(404) },
      },
      config: anyScope('event_subscription:read'),
    },
    async (request) => events.types.get(request.params.event_type),
  );

  api.post(
    '/event_definition',
    {
      schema: {
        operationId: 'createEventDefinition',
        tags,
        summary: 'Register a custom event type',
        description:
          'A type users publish with POST /event and subscriptions and webhooks can name. The svc. namespace is ' +
          'reserved (400 EVENT.RESERVED_TYPE); a type registered already is 409 EVENT_DEFINITION.EXISTS. ' +
          'data_schema (JSON Schema) is enforced on every event published.',
        body: CreateEventDefinition,
        response: { 200: EventDefinition, ...errorAnswers(409) },
      },
      config: anyScope('event_subscription:write'),
    },
    async (request) => events.types.create(request.principal.userId, request.body),
  );

  api.patch(
    '/event_definition/:event_type',
    {
      schema: {
        operationId: 'updateEventDefinition',
        tags,
        summary: 'Change a custom event type',
        description:
          'description, examples, deprecated and data_schema; a changed data_schema bumps schema_version ' +
          '("1.0" -> "2.0"). svc\'s own types cannot change (409 EVENT_DEFINITION.BUILTIN).',
        params: EventTypeParams,
        body: UpdateEventDefinition,
        response: { 200: EventDefinition, ...errorAnswers(404, 409) },
      },
      config: anyScope('event_subscription:write'),
    },
    async (request) => events.types.update(request.principal.userId, request.params.event_type, request.body),
  );

  api.delete(
    '/event_definition/:event_type',
    {
      schema: {
        operationId: 'deleteEventDefinition',
        tags,
        summary: 'Delete a custom event type',
        description:
          'Soft delete: events of the type are no longer accepted. Refused with 409 EVENT_DEFINITION.IN_USE while ' +
          'enabled subscriptions or webhooks name it, unless ?force=true.',
        params: EventTypeParams,
        querystring: DeleteEventDefinitionQuery,
        response: { 200: DeletedBody, ...errorAnswers(404, 409) },
      },
      config: anyScope('event_subscription:write'),
    },
    async (request) =>
      events.types.remove(request.principal.userId, request.params.event_type, request.query.force === true),
  );

  // POST /event parses the CloudEvents media types and, in binary mode, any body: its own scope.
  api.register(async (scope) => {
    const json = hardenedJsonParser(scope);
    scope.addContentTypeParser(
      ['application/cloudevents+json', 'application/cloudevents-batch+json'],
      { parseAs: 'string' },
      json,
    );
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/event',
      {
        schema: {
          operationId: 'publishEvent',
          tags,
          summary: 'Publish CloudEvents of custom types',
          description:
            'A CloudEvent in structured mode (application/cloudevents+json, or application/json), binary mode ' +
            '(ce-* headers, the body is the data) or a batch of up to 100 (application/cloudevents-batch+json). ' +
            'Each must be of a registered custom type and match its data_schema (400 with the errors). Accepted ' +
            "events go through the transactional outbox like svc's own: 202 {id, duplicate} (a batch: " +
            '{events: [...]}), all or none. An id already published from the same source is accepted again ' +
            'as a duplicate and not delivered twice; from another source it is 409 EVENT.ID_CONFLICT.',
          body: PublishBody,
          response: { 202: PublishAnswer, ...errorAnswers(409) },
        },
        config: anyScope('workflow:execute'),
      },
      async (request, reply) => {
        const { list, batch } = eventsOfRequest(request.headers, request.body);
        const accepted = await events.ingest(request.principal, list);
        reply.status(202);
        return batch ? { events: accepted } : accepted[0];
      },
    );
  });

  api.get(
    '/event_delivery_task',
    {
      schema: {
        operationId: 'listEventDeliveryTasks',
        tags,
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
        tags,
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
