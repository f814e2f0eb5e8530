import { Type } from '@sinclair/typebox';
import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import { IdParams, MessageBody } from '../../http/schemas.js';
import {
  CreateRoleBody,
  CreateUserRoleBody,
  PersistedRoleScopes,
  PutRoleScopesBody,
  Role,
  RoleScopeDiff,
  UpdateRoleBody,
  UserRole,
} from './schemas.js';
import type { IdentityService } from './service.js';

const AUDIT_SORT = ['created_at', 'updated_at'] as const;

/** Roles and user roles. */
export function registerRoleRoutes(api: App, { identity }: { identity: IdentityService }): void {
  // The role-scope table is the same for every caller until the authz version moves, and
  // roleScopeTable hands out one array per version: its answer is serialised once per version.
  // ---- roles
  api.get(
    '/role',
    {
      schema: {
        operationId: 'listRoles',
        summary: 'List roles',
        tags: ['roles'],
        querystring: ListQuery(
          ['key', 'name', ...AUDIT_SORT],
          {
            key: Type.Optional(Type.String()),
            is_builtin: Type.Optional(QueryBoolean),
            search: Type.Optional(Search('key and name')),
          },
          { sortBy: 'key', sortDir: 'asc' },
        ),
        response: { 200: ListResponse('roles', Role) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('roles', await identity.listRoles(page, filters), req.query);
    },
  );
  api.post(
    '/role',
    {
      schema: {
        operationId: 'createRole',
        summary: 'Create a role',
        tags: ['roles'],
        body: CreateRoleBody,
        response: { 200: Role },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.createRole(req.principal.userId, req.body),
  );
  api.get(
    '/role/:id',
    {
      schema: {
        operationId: 'getRole',
        summary: 'Get a role',
        tags: ['roles'],
        params: IdParams,
        response: { 200: Role },
      },
      config: anyScope('user:read'),
    },
    async (req) => identity.getRole(req.params.id),
  );
  api.patch(
    '/role/:id',
    {
      schema: {
        operationId: 'updateRole',
        summary: 'Update a role',
        tags: ['roles'],
        params: IdParams,
        body: UpdateRoleBody,
        response: { 200: Role },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.updateRole(req.principal.userId, req.params.id, req.body),
  );
  api.delete(
    '/role/:id',
    {
      schema: {
        operationId: 'deleteRole',
        summary: 'Delete a role (soft)',
        tags: ['roles'],
        params: IdParams,
        response: { 200: MessageBody },
      },
      config: anyScope('user:delete'),
    },
    async (req) => {
      await identity.deleteRole(req.principal.userId, req.params.id);
      return { message: 'Role deleted' };
    },
  );
  api.get(
    '/role/:id/scope',
    {
      schema: {
        operationId: 'getRoleScopes',
        summary: 'The scopes granted to a role',
        tags: ['roles'],
        params: IdParams,
        response: { 200: PersistedRoleScopes },
      },
      config: anyScope('user:read'),
    },
    async (req) => identity.persistedRoleScopes(req.params.id),
  );
  api.put(
    '/role/:id/scope',
    {
      schema: {
        operationId: 'putRoleScopes',
        summary: 'Replace the scopes granted to a role',
        tags: ['roles'],
        params: IdParams,
        body: PutRoleScopesBody,
        response: { 200: RoleScopeDiff },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.replaceRoleScopes(req.principal.userId, req.params.id, req.body.scope_keys),
  );

  // ---- user roles
  api.get(
    '/user_role',
    {
      schema: {
        operationId: 'listUserRoles',
        summary: 'List user-role assignments',
        tags: ['roles'],
        querystring: ListQuery(AUDIT_SORT, {
          user_id: Type.Optional(Type.String()),
          role_id: Type.Optional(Type.String()),
        }),
        response: { 200: ListResponse('user_roles', UserRole) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('user_roles', await identity.listUserRoles(page, filters), req.query);
    },
  );
  api.post(
    '/user_role',
    {
      schema: {
        operationId: 'createUserRole',
        summary: 'Give a user a role',
        tags: ['roles'],
        body: CreateUserRoleBody,
        response: { 200: UserRole },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.assignRole(req.principal.userId, req.body),
  );
  api.get(
    '/user_role/:id',
    {
      schema: {
        operationId: 'getUserRole',
        summary: 'Get a user-role assignment',
        tags: ['roles'],
        params: IdParams,
        response: { 200: UserRole },
      },
      config: anyScope('user:read'),
    },
    async (req) => identity.getUserRole(req.params.id),
  );
  api.delete(
    '/user_role/:id',
    {
      schema: {
        operationId: 'deleteUserRole',
        summary: 'Take a role from a user',
        tags: ['roles'],
        params: IdParams,
        response: { 200: MessageBody },
      },
      config: anyScope('user:delete'),
    },
    async (req) => {
      await identity.unassignRole(req.principal.userId, req.params.id);
      return { message: 'User role assignment deleted' };
    },
  );
}
