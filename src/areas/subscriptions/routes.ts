import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { DeletedBody } from '../../http/schemas.js';
import {
  CreateSubscription,
  Graph,
  PutGraphBody,
  Subscription,
  SubscriptionList,
  SubscriptionParams,
  SubscriptionQuery,
  UpdateSubscription,
} from './schemas.js';
import type { SubscriptionService } from './service.js';

const tags = ['event subscriptions'];

/** /event_subscription CRUD (event_subscription:*) and its graph (workflow:read / workflow:write). */
export function registerSubscriptionRoutes(
  api: App,
  { subscriptions }: { subscriptions: SubscriptionService },
): void {
  api.post(
    '/event_subscription',
    {
      schema: {
        operationId: 'createEventSubscription',
        summary: 'Create an event subscription',
        tags,
        body: CreateSubscription,
        response: { 200: Subscription },
      },
      config: anyScope('event_subscription:write'),
    },
    async (req) => subscriptions.create(req.principal.userId, req.body),
  );
  api.get(
    '/event_subscription',
    {
      schema: {
        operationId: 'listEventSubscriptions',
        summary: 'List event subscriptions',
        tags,
        querystring: SubscriptionQuery,
        response: { 200: SubscriptionList },
      },
      config: anyScope('event_subscription:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('event_subscriptions', await subscriptions.list(page, filters), page);
    },
  );
  api.get(
    '/event_subscription/:id',
    {
      schema: {
        operationId: 'getEventSubscription',
        summary: 'Get an event subscription',
        tags,
        params: SubscriptionParams,
        response: { 200: Subscription },
      },
      config: anyScope('event_subscription:read'),
    },
    async (req) => subscriptions.get(req.params.id),
  );
  api.patch(
    '/event_subscription/:id',
    {
      schema: {
        operationId: 'updateEventSubscription',
        summary: 'Update an event subscription',
        tags,
        params: SubscriptionParams,
        body: UpdateSubscription,
        response: { 200: Subscription },
      },
      config: anyScope('event_subscription:write'),
    },
    async (req) => subscriptions.update(req.principal.userId, req.params.id, req.body),
  );
  api.delete(
    '/event_subscription/:id',
    {
      schema: {
        operationId: 'deleteEventSubscription',
        summary: 'Delete an event subscription (soft)',
        tags,
        description: 'Soft delete: runs already running finish; no new runs start.',
        params: SubscriptionParams,
        response: { 200: DeletedBody },
      },
      config: anyScope('event_subscription:delete'),
    },
    async (req) => subscriptions.remove(req.principal.userId, req.params.id),
  );
  api.get(
    '/event_subscription/:id/graph',
    {
      schema: {
        operationId: 'getEventSubscriptionGraph',
        summary: "Get a subscription's workflow graph",
        tags,
        params: SubscriptionParams,
        response: { 200: Graph },
      },
      config: anyScope('workflow:read'),
    },
    async (req) => subscriptions.getGraph(req.params.id),
  );
  api.put(
    '/event_subscription/:id/graph',
    {
      schema: {
        operationId: 'putEventSubscriptionGraph',
        summary: "Replace a subscription's workflow graph (validated, then saved whole)",
        tags,
        description:
          'Replaces the graph atomically: old nodes and edges are soft-deleted, new ones get server ids (see id_map). Runs already started finish on the graph they started with.',
        params: SubscriptionParams,
        body: PutGraphBody,
        response: { 200: Graph },
      },
      config: anyScope('workflow:write'),
    },
    async (req) => subscriptions.putGraph(req.principal.userId, req.params.id, req.body),
  );
}
