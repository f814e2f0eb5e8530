import { Type } from '@sinclair/typebox';
import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers, IdParams } from '../../http/schemas.js';
import {
  CreateInstance,
  DefinitionListQuery,
  DefinitionListResponse,
  InstanceListQuery,
  InstanceListResponse,
  InvokeBody,
  InvokeHeaders,
  InvokeResponse,
  PluginDefinitionSchema,
  PluginInstanceSchema,
  UpdateInstance,
} from './schemas.js';
import type { PluginService } from './service.js';

const tags = ['plugins'];

/** /plugin_definition and /plugin_instance (docs/plugins.md "Endpoints"). HTTP only: schema, scope, one call. */
export function registerPluginRoutes(api: App, { plugins }: { plugins: PluginService }): void {
  api.get(
    '/plugin_definition',
    {
      config: anyScope('plugin:read'),
      schema: {
        operationId: 'listPluginDefinitions',
        tags,
        summary: 'List plugin definitions (discovered at start-up, read-only)',
        querystring: DefinitionListQuery,
        response: { 200: DefinitionListResponse },
      },
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('plugin_definitions', await plugins.listDefinitions(page, filters), page);
    },
  );

  api.get(
    '/plugin_definition/:id',
    {
      config: anyScope('plugin:read'),
      schema: {
        operationId: 'getPluginDefinition',
        tags,
        summary: 'Get a plugin definition',
        params: IdParams,
        response: { 200: PluginDefinitionSchema, ...errorAnswers(404) },
      },
    },
    (request) => plugins.getDefinition(request.params.id),
  );

  api.post(
    '/plugin_instance',
    {
      config: anyScope('plugin:write'),
      schema: {
        operationId: 'createPluginInstance',
        tags,
        summary:
          "Create a plugin instance (config_json is validated against the definition's instance_config_schema)",
        body: CreateInstance,
        response: { 200: PluginInstanceSchema, ...errorAnswers(404, 422) },
      },
    },
    (request) => plugins.createInstance(request.principal.userId, request.body),
  );

  api.get(
    '/plugin_instance',
    {
      config: anyScope('plugin:read'),
      schema: {
        operationId: 'listPluginInstances',
        tags,
        summary: 'List plugin instances',
        querystring: InstanceListQuery,
        response: { 200: InstanceListResponse },
      },
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('plugin_instances', await plugins.listInstances(page, filters), page);
    },
  );

  api.get(
    '/plugin_instance/:id',
    {
      config: anyScope('plugin:read'),
      schema: {
        operationId: 'getPluginInstance',
        tags,
        summary: 'Get a plugin instance',
        params: IdParams,
        response: { 200: PluginInstanceSchema, ...errorAnswers(404) },
      },
    },
    (request) => plugins.getInstance(request.params.id),
  );

  api.patch(
    '/plugin_instance/:id',
    {
      config: anyScope('plugin:write'),
      schema: {
        operationId: 'updatePluginInstance',
        tags,
        summary: 'Update a plugin instance (a new config_json is validated and re-hashed)',
        params: IdParams,
        body: UpdateInstance,
        response: { 200: PluginInstanceSchema, ...errorAnswers(404) },
      },
    },
    (request) => plugins.updateInstance(request.principal.userId, request.params.id, request.body),
  );

  api.delete(
    '/plugin_instance/:id',
    {
      // The plugins table names plugin:write, the enforced scopes plugin:delete: either suffices (docs/plugins.md "Endpoints").
      config: anyScope('plugin:write', 'plugin:delete'),
      schema: {
        operationId: 'deletePluginInstance',
        tags,
        summary: 'Delete a plugin instance (soft; workflow nodes using it fail at run time)',
        params: IdParams,
        response: { 204: Type.Null({ description: 'No content' }), ...errorAnswers(404) },
      },
    },
    async (request, reply) => {
      await plugins.deleteInstance(request.principal.userId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  api.post(
    '/plugin_instance/:id/invoke',
    {
      config: anyScope('plugin:write'),
      schema: {
        operationId: 'invokePluginInstance',
        tags,
        summary: 'Invoke an action of a plugin instance; answers {output}',
        description:
          'The payload is validated against the action input_schema, vault references in config_json are ' +
          'resolved for this call only, timeout_seconds is enforced and the output is checked against ' +
          'output_schema. Failures: PLUGIN.INVALID_INPUT 400, PLUGIN.INSTANCE_DISABLED / ' +
          'PLUGIN.DEFINITION_DISABLED / VAULT.* 422, PLUGIN.INVOCATION_FAILED / PLUGIN.INVALID_OUTPUT 502, ' +
          'PLUGIN.TIMEOUT 504.',
        params: IdParams,
        headers: InvokeHeaders,
        body: InvokeBody,
        response: { 200: InvokeResponse, ...errorAnswers(404, 422, 502, 504) },
      },
    },
    async (request) => ({
      output: await plugins.invoke({
        instanceId: request.params.id,
        action: request.body.action,
        payload: request.body.payload,
        idempotencyKey: request.headers['idempotency-key'],
        // The request's span is the call's parent (docs/observability.md "Spans").
        causation: request.principal.causation,
      }),
    }),
  );
}
