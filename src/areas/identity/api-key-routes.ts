import { Type } from '@sinclair/typebox';
import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse, QueryBoolean } from '../../http/list-schemas.js';
import { IdParams } from '../../http/schemas.js';
import { ApiKey, CreateApiKeyBody, CreatedApiKey } from './schemas.js';
import type { IdentityService } from './service.js';

/** API keys (auth:manage, which is also auth:api_key: docs/identity.md "API keys"). */
export function registerApiKeyRoutes(api: App, { identity }: { identity: IdentityService }): void {
  // The role-scope table is the same for every caller until the authz version moves, and
  // roleScopeTable hands out one array per version: its answer is serialised once per version.
  // ---- API keys (auth:manage, which is also auth:api_key: docs/identity.md "API keys")
  api.post(
    '/api_key',
    {
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key (the token is answered once)',
        tags: ['api keys'],
        body: CreateApiKeyBody,
        response: { 200: CreatedApiKey },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => identity.createApiKey(req.principal, req.body),
  );
  api.get(
    '/api_key',
    {
      schema: {
        operationId: 'listApiKeys',
        summary: 'List your API keys',
        tags: ['api keys'],
        querystring: ListQuery(['name', 'expires_at', 'created_at'], {
          is_revoked: Type.Optional(QueryBoolean),
        }),
        response: { 200: ListResponse('api_keys', ApiKey) },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('api_keys', await identity.listApiKeys(req.principal, page, filters), req.query);
    },
  );
  api.get(
    '/api_key/:id',
    {
      schema: {
        operationId: 'getApiKey',
        summary: 'Get an API key',
        tags: ['api keys'],
        params: IdParams,
        response: { 200: ApiKey },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => identity.getApiKey(req.principal, req.params.id),
  );
  api.delete(
    '/api_key/:id',
    {
      schema: {
        operationId: 'deleteApiKey',
        summary: 'Revoke an API key',
        tags: ['api keys'],
        params: IdParams,
        response: { 200: ApiKey },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => identity.revokeApiKey(req.principal, req.params.id),
  );
}
