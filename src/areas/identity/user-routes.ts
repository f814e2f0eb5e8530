import { Type } from '@sinclair/typebox';
import { anyScope, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse, Search } from '../../http/list-schemas.js';
import { IdParams } from '../../http/schemas.js';
import { CreateUserBody, CurrentUser, UpdateUserBody, User } from './schemas.js';
import type { IdentityService } from './service.js';

const AUDIT_SORT = ['created_at', 'updated_at'] as const;

/** Users and the signed-in user. */
export function registerUserRoutes(api: App, { identity }: { identity: IdentityService }): void {
  // The role-scope table is the same for every caller until the authz version moves, and
  // roleScopeTable hands out one array per version: its answer is serialised once per version.
  // ---- users (user:*, docs/identity.md "Authorization")
  api.get(
    '/user',
    {
      schema: {
        operationId: 'listUsers',
        summary: 'List users',
        tags: ['users'],
        querystring: ListQuery(['email', 'name', ...AUDIT_SORT], {
          email: Type.Optional(Type.String()),
          search: Type.Optional(Search('email and name')),
          role_id: Type.Optional(Type.String()),
        }),
        response: { 200: ListResponse('users', User) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('users', await identity.listUsers(page, filters), req.query);
    },
  );
  api.post(
    '/user',
    {
      schema: {
        operationId: 'createUser',
        summary: 'Create a user',
        tags: ['users'],
        body: CreateUserBody,
        response: { 200: User },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.createUser(req.principal, req.body),
  );
  api.get(
    '/user/:id',
    {
      schema: {
        operationId: 'getUser',
        summary: 'Get a user',
        tags: ['users'],
        params: IdParams,
        response: { 200: User },
      },
      config: anyScope('user:read'),
    },
    async (req) => identity.getUser(req.params.id),
  );
  api.patch(
    '/user/:id',
    {
      schema: {
        operationId: 'updateUser',
        summary: 'Update a user',
        tags: ['users'],
        params: IdParams,
        body: UpdateUserBody,
        response: { 200: User },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.updateUser(req.principal, req.params.id, req.body),
  );
  api.delete(
    '/user/:id',
    {
      schema: {
        operationId: 'deleteUser',
        summary: 'Delete a user (soft)',
        tags: ['users'],
        params: IdParams,
        response: { 200: User },
      },
      config: anyScope('user:delete'),
    },
    async (req) => identity.deleteUser(req.principal, req.params.id),
  );

  // ---- current user (open endpoint: authenticated, no scope)
  api.get(
    '/current_user',
    {
      schema: {
        operationId: 'getCurrentUser',
        summary: 'The signed-in user, with roles and effective scopes',
        tags: ['users'],
        response: { 200: CurrentUser },
      },
      config: authenticated(),
    },
    async (req) => {
      const [user, roles] = await Promise.all([
        identity.getUser(req.principal.userId),
        identity.getRolesOfUser(req.principal.userId),
      ]);
      return { ...user, roles, scopes: [...req.principal.scopes].sort(), auth_path: req.principal.authPath };
    },
  );
}
