import { Type } from '@sinclair/typebox';
import { anyScope, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope } from '../../http/list.js';
import { sendJsonBytes } from '../../http/reply.js';
import { IdParams, ListQuery, ListResponse, MessageBody, QueryBoolean } from '../../http/schemas.js';
import {
  ApiKey,
  CreateApiKeyBody,
  CreatedApiKey,
  CreateRoleBody,
  CreateRoleScopeBody,
  CreateUserBody,
  CreateUserRoleBody,
  CurrentUser,
  PersistedRoleScopes,
  PutRoleScopesBody,
  Role,
  RoleScopeDiff,
  RoleScopeEntry,
  Scope,
  UpdateRoleBody,
  UpdateUserBody,
  User,
  UserRole,
} from './schemas.js';
import type { IdentityService } from './service.js';

const AUDIT_SORT = ['created_at', 'updated_at'] as const;

/** Users, roles, user roles, the scope catalogue, role-scope management, API keys, current user. */
export function registerIdentityRoutes(app: App, { identity }: { identity: IdentityService }): void {
  // The role-scope table is the same for every caller until the authz version moves, and
  // roleScopeTable hands out one array per version: its answer is serialised once per version.
  const roleScopeBodies = new WeakMap<object, Buffer>();
  // ---- users (SPEC "Endpoints with scope only": user:*)
  app.get(
    '/user',
    {
      schema: {
        operationId: 'listUsers',
        summary: 'List users',
        tags: ['users'],
        querystring: ListQuery(
          ['email', 'name', ...AUDIT_SORT],
          {
            email: Type.Optional(Type.String()),
            search: Type.Optional(Type.String()),
            role_id: Type.Optional(Type.String()),
          },
          { sortBy: 'created_at' },
        ),
        response: { 200: ListResponse('users', User) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'users',
        await identity.listUsers({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.post(
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
    async (req) => identity.createUser(req.principal.userId, req.body),
  );
  app.get(
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
  app.patch(
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
    async (req) => identity.updateUser(req.principal.userId, req.params.id, req.body),
  );
  app.delete(
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
    async (req) => identity.deleteUser(req.principal.userId, req.params.id),
  );

  // ---- current user (open endpoint: authenticated, no scope)
  app.get(
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

  // ---- roles
  app.get(
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
            search: Type.Optional(Type.String()),
          },
          { sortBy: 'key', sortDir: 'asc' },
        ),
        response: { 200: ListResponse('roles', Role) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'roles',
        await identity.listRoles({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.post(
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
  app.get(
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
  app.patch(
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
  app.delete(
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
  app.get(
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
  app.put(
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
  app.get(
    '/user_role',
    {
      schema: {
        operationId: 'listUserRoles',
        summary: 'List user-role assignments',
        tags: ['roles'],
        querystring: ListQuery(
          AUDIT_SORT,
          { user_id: Type.Optional(Type.String()), role_id: Type.Optional(Type.String()) },
          { sortBy: 'created_at' },
        ),
        response: { 200: ListResponse('user_roles', UserRole) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'user_roles',
        await identity.listUserRoles({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.post(
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
  app.get(
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
  app.delete(
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

  // ---- scopes and role-scope management (SPEC "Role and scope management")
  app.get(
    '/scope',
    {
      schema: {
        operationId: 'listScopes',
        summary: 'List the scope catalogue',
        tags: ['scopes'],
        response: { 200: Type.Object({ scopes: Type.Array(Scope) }) },
      },
      config: anyScope('user:read'),
    },
    async () => ({ scopes: [...identity.scopeCatalogue()] }),
  );
  app.get(
    '/role_scope',
    {
      schema: {
        operationId: 'getRoleScopeTable',
        summary: 'The role-scope table of every role',
        tags: ['scopes'],
        response: {
          200: Type.Object({
            role_scopes: Type.Array(
              Type.Object({ role_key: Type.String(), scopes: Type.Array(Type.String()) }),
            ),
          }),
        },
      },
      config: anyScope('user:read'),
    },
    async (req, reply) => {
      const rows = await identity.roleScopeTable(req.principal.authzVersion);
      let body = roleScopeBodies.get(rows);
      if (!body) {
        body = Buffer.from(JSON.stringify({ role_scopes: rows }));
        roleScopeBodies.set(rows, body);
      }
      return sendJsonBytes(reply, body);
    },
  );
  app.get(
    '/role_scope_entry',
    {
      schema: {
        operationId: 'listRoleScopeEntries',
        summary: 'List role-scope grants',
        tags: ['scopes'],
        querystring: ListQuery(
          ['scope_key', ...AUDIT_SORT],
          {
            role_id: Type.Optional(Type.String()),
            scope_key: Type.Optional(Type.String()),
            search: Type.Optional(Type.String()),
          },
          { sortBy: 'created_at' },
        ),
        response: { 200: ListResponse('role_scope_entries', RoleScopeEntry) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'role_scope_entries',
        await identity.listRoleScopeEntries({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.post(
    '/role_scope_entry',
    {
      schema: {
        operationId: 'createRoleScopeEntry',
        summary: 'Grant a scope to a role',
        tags: ['scopes'],
        body: CreateRoleScopeBody,
        response: { 200: RoleScopeEntry },
      },
      config: anyScope('user:write'),
    },
    async (req) => identity.addRoleScope(req.principal.userId, req.body),
  );
  app.get(
    '/role_scope_entry/:id',
    {
      schema: {
        operationId: 'getRoleScopeEntry',
        summary: 'Get a role-scope grant',
        tags: ['scopes'],
        params: IdParams,
        response: { 200: RoleScopeEntry },
      },
      config: anyScope('user:read'),
    },
    async (req) => identity.getRoleScopeEntry(req.params.id),
  );
  app.delete(
    '/role_scope_entry/:id',
    {
      schema: {
        operationId: 'deleteRoleScopeEntry',
        summary: 'Revoke a scope from a role',
        tags: ['scopes'],
        params: IdParams,
        response: { 200: MessageBody },
      },
      config: anyScope('user:write'),
    },
    async (req) => {
      await identity.removeRoleScope(req.principal.userId, req.params.id);
      return { message: 'Role-scope assignment deleted' };
    },
  );

  // ---- API keys (auth:manage, which is also what SPEC calls auth:api_key: Authentication 10)
  app.post(
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
  app.get(
    '/api_key',
    {
      schema: {
        operationId: 'listApiKeys',
        summary: 'List your API keys',
        tags: ['api keys'],
        querystring: ListQuery(
          ['name', 'expires_at', 'created_at'],
          { is_revoked: Type.Optional(QueryBoolean) },
          { sortBy: 'created_at' },
        ),
        response: { 200: ListResponse('api_keys', ApiKey) },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'api_keys',
        await identity.listApiKeys(req.principal, { limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.get(
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
  app.delete(
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
