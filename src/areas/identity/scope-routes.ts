import { Type } from '@sinclair/typebox';
import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse, Search } from '../../http/list-schemas.js';
import { sendJsonBytes } from '../../http/reply.js';
import { IdParams, MessageBody } from '../../http/schemas.js';
import { CreateRoleScopeBody, RoleScopeEntry, Scope } from './schemas.js';
import type { IdentityService } from './service.js';

const AUDIT_SORT = ['created_at', 'updated_at'] as const;

/** The scope catalogue and role-scope management (docs/identity.md "Roles"). */
export function registerScopeRoutes(api: App, { identity }: { identity: IdentityService }): void {
  // The role-scope table is the same for every caller until the authz version moves, and
  // roleScopeTable hands out one array per version: its answer is serialised once per version.
  const roleScopeBodies = new WeakMap<object, Buffer>();
  // ---- scopes and role-scope management (docs/identity.md "Roles")
  api.get(
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
  api.get(
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
  api.get(
    '/role_scope_entry',
    {
      schema: {
        operationId: 'listRoleScopeEntries',
        summary: 'List role-scope grants',
        tags: ['scopes'],
        querystring: ListQuery(['scope_key', ...AUDIT_SORT], {
          role_id: Type.Optional(Type.String()),
          scope_key: Type.Optional(Type.String()),
          search: Type.Optional(Search('scope_key')),
        }),
        response: { 200: ListResponse('role_scope_entries', RoleScopeEntry) },
      },
      config: anyScope('user:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('role_scope_entries', await identity.listRoleScopeEntries(page, filters), req.query);
    },
  );
  api.post(
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
  api.get(
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
  api.delete(
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
}
