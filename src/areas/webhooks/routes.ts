import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers, MessageBody } from '../../http/schemas.js';
import {
  AttemptListQuery,
  AttemptListResponse,
  CreateWebhook,
  Delivery,
  DeliveryDetail,
  DeliveryListQuery,
  DeliveryListResponse,
  DeliveryParams,
  RecoverBody,
  Recovered,
  TestWebhookBody,
  UpdateWebhook,
  Webhook,
  WebhookIdParams,
  WebhookListQuery,
  WebhookListResponse,
  WebhookWithSecret,
} from './schemas.js';
import type { WebhookService } from './service.js';

const tags = ['webhooks'];

/** /webhook (docs/webhooks.md "The webhook"). HTTP only: schema, scope, one service call. */
export function registerWebhookRoutes(api: App, { webhooks }: { webhooks: WebhookService }): void {
  api.post(
    '/webhook',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'createWebhook',
        tags,
        summary: 'Create a webhook (the only answer besides rotate_secret that shows the secret)',
        body: CreateWebhook,
        response: { 200: WebhookWithSecret },
      },
    },
    (request) => webhooks.create(request.principal.userId, request.body),
  );

  api.get(
    '/webhook',
    {
      config: anyScope('webhook:read'),
      schema: {
        operationId: 'listWebhooks',
        tags,
        summary: 'List webhooks',
        querystring: WebhookListQuery,
        response: { 200: WebhookListResponse },
      },
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('webhooks', await webhooks.list(page, filters), page);
    },
  );

  api.get(
    '/webhook/:id',
    {
      config: anyScope('webhook:read'),
      schema: {
        operationId: 'getWebhook',
        tags,
        summary: 'Get a webhook',
        params: WebhookIdParams,
        response: { 200: Webhook, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.get(request.params.id),
  );

  api.patch(
    '/webhook/:id',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'updateWebhook',
        tags,
        summary: 'Update a webhook (the secret cannot be changed here: use rotate_secret)',
        params: WebhookIdParams,
        body: UpdateWebhook,
        response: { 200: Webhook, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.update(request.principal.userId, request.params.id, request.body),
  );

  api.delete(
    '/webhook/:id',
    {
      config: anyScope('webhook:delete'),
      schema: {
        operationId: 'deleteWebhook',
        tags,
        summary: 'Delete a webhook (soft; its queued deliveries keep retrying)',
        params: WebhookIdParams,
        response: { 200: MessageBody, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.remove(request.principal.userId, request.params.id),
  );

  api.post(
    '/webhook/:id/rotate_secret',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'rotateWebhookSecret',
        tags,
        summary: 'Replace the signing secret; the old one signs nothing from now on',
        params: WebhookIdParams,
        response: { 200: WebhookWithSecret, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.rotateSecret(request.principal.userId, request.params.id),
  );

  api.get(
    '/webhook/:id/delivery',
    {
      config: anyScope('webhook:read'),
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: "List a webhook's deliveries, newest first",
        params: WebhookIdParams,
        querystring: DeliveryListQuery,
        response: { 200: DeliveryListResponse, ...errorAnswers(404) },
      },
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('deliveries', await webhooks.listDeliveries(request.params.id, page, filters), page);
    },
  );

  api.get(
    '/webhook/:id/delivery/:delivery_id',
    {
      config: anyScope('webhook:read'),
      schema: {
        operationId: 'getWebhookDelivery',
        tags,
        summary: 'Get one delivery with its attempt log',
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.getDelivery(request.params.id, request.params.delivery_id),
  );

  api.get(
    '/webhook/:id/delivery/:delivery_id/attempt',
    {
      config: anyScope('webhook:read'),
      schema: {
        operationId: 'listWebhookDeliveryAttempts',
        tags,
        summary: "List a delivery's attempts, newest first",
        params: DeliveryParams,
        querystring: AttemptListQuery,
        response: { 200: AttemptListResponse, ...errorAnswers(404) },
      },
    },
    async (request) => {
      const { page } = splitListQuery(request.query);
      return envelope(
        'attempts',
        await webhooks.listAttempts(request.params.id, request.params.delivery_id, page),
        page,
      );
    },
  );

  api.post(
    '/webhook/:id/delivery/:delivery_id/retry',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'retryWebhookDelivery',
        tags,
        summary: 'Send a delivery again: PENDING, attempts reset to 0, due now, error cleared',
        params: DeliveryParams,
        response: { 200: Delivery, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.retryDelivery(request.params.id, request.params.delivery_id),
  );

  api.post(
    '/webhook/:id/recover',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'recoverWebhookDeliveries',
        tags,
        summary: 'Send again every FAILED delivery created since a time',
        description:
          'After an outage of the receiving endpoint: each FAILED delivery of this webhook created at or after ' +
          '`since` goes back to PENDING with attempts reset, due now, as a retry of each would.',
        params: WebhookIdParams,
        body: RecoverBody,
        response: { 200: Recovered, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.recover(request.params.id, request.body.since),
  );

  api.post(
    '/webhook/:id/test',
    {
      config: anyScope('webhook:write'),
      schema: {
        operationId: 'sendWebhookTestEvent',
        tags,
        summary: 'Send a signed example event of a chosen type to this webhook only',
        description:
          "Queues one delivery of the event type's example (a fresh id and time, extension `svctest: true`) to " +
          'this webhook alone, signed and retried like any other; no subscription or other webhook sees it. ' +
          'The answer is the delivery; follow it with GET /webhook/{id}/delivery/{delivery_id}.',
        params: WebhookIdParams,
        body: TestWebhookBody,
        response: { 200: Delivery, ...errorAnswers(404) },
      },
    },
    (request) => webhooks.sendTest(request.params.id, request.body ?? {}, request.principal.causation),
  );
}
