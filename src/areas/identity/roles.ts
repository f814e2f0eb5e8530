import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Db, Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Role, RoleScopeEntry, UserRole } from './records.js';
import * as st from './role-store.js';
import { normaliseScopeKey, SCOPE_KEYS } from './scopes.js';
import { requireUser } from './users.js';

export const roleNotFound = () => new AppError('ROLE.NOT_FOUND', 'Role not found');

export async function requireRole(d: Db, id: string): Promise<Role> {
  const role = await st.findRole(d, id);
  if (!role) throw roleNotFound();
  return role;
}

/** A scope key of the catalogue, normalised (auth:api_key is auth:manage); SCOPE.UNKNOWN otherwise. */
export function checkScopeKey(key: string): string {
  const normalised = normaliseScopeKey(key);
  if (!SCOPE_KEYS.has(normalised)) {
    throw new AppError('SCOPE.UNKNOWN', `Unknown scope "${key}"`, { field: 'scope_key', value: key });
  }
  return normalised;
}

const userRoleNotFound = () => new AppError('USER_ROLE.NOT_FOUND', 'User role assignment not found');
const roleScopeNotFound = () => new AppError('ROLE_SCOPE.NOT_FOUND', 'Role-scope assignment not found');

/**
 * Roles, who holds them (user roles) and what they grant (role-scope entries). Every change that can
 * alter someone's effective scopes bumps the authz version in its transaction (scope-resolver.ts).
 */
export interface RoleService {
  createRole(actor: string, input: { key: string; name: string; description?: string | null }): Promise<Role>;
  getRole(id: string): Promise<Role>;
  listRoles(page: Page, f: st.RoleFilters): Promise<ListResult<Role>>;
  updateRole(actor: string, id: string, patch: { name?: string; description?: string | null }): Promise<Role>;
  deleteRole(actor: string, id: string): Promise<void>;
  getRoleKeysOfUser(userId: string): Promise<string[]>;
  getRolesOfUser(userId: string): Promise<Role[]>;
  assignRole(actor: string, input: { user_id: string; role_id: string }): Promise<UserRole>;
  getUserRole(id: string): Promise<UserRole>;
  listUserRoles(page: Page, f: st.UserRoleFilters): Promise<ListResult<UserRole>>;
  unassignRole(actor: string, id: string): Promise<void>;
  addRoleScope(actor: string, input: { role_id: string; scope_key: string }): Promise<RoleScopeEntry>;
  getRoleScopeEntry(id: string): Promise<RoleScopeEntry>;
  listRoleScopeEntries(page: Page, f: st.RoleScopeFilters): Promise<ListResult<RoleScopeEntry>>;
  removeRoleScope(actor: string, id: string): Promise<void>;
  /** PUT /role/{id}/scopes: the role grants exactly `scopeKeys` afterwards; answers what changed. */
  replaceRoleScopes(
    actor: string,
    roleId: string,
    scopeKeys: string[],
  ): Promise<{
    role_id: string;
    scope_keys: string[];
    added: string[];
    removed: string[];
    unchanged: string[];
  }>;
  /** The scope keys stored for a role (builtin roles' implicit grants not included). */
  persistedRoleScopes(roleId: string): Promise<{ role_id: string; scope_keys: string[] }>;
}

export function createRoleService(deps: { store: Store; clock: Clock }): RoleService {
  const { store, clock } = deps;
  const now = () => iso(clock.now());

  async function createRole(
    actor: string,
    input: { key: string; name: string; description?: string | null },
  ) {
    const row = {
      id: newId(),
      key: input.key,
      name: input.name,
      description: input.description ?? null,
      is_builtin: 0,
      ...auditInsert(now(), actor),
    };
    try {
      await store.transaction(async (tx) => {
        await st.insertRole(tx, row);
        await st.bumpAuthzVersion(tx); // the role table (GET /role_scope) gains a row
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('ROLE.KEY_EXISTS', `A role with key "${input.key}" already exists`);
      throw err;
    }
    return requireRole(store.db, row.id);
  }

  async function updateRole(
    actor: string,
    id: string,
    patch: { name?: string; description?: string | null },
  ) {
    return store.transaction(async (tx) => {
      await requireRole(tx.db, id);
      if (!(await st.updateRole(tx, id, { ...patch, ...auditUpdate(now(), actor) }))) throw roleNotFound();
      return requireRole(tx.db, id);
    });
  }

  async function deleteRole(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      const role = await requireRole(tx.db, id);
      if (role.is_builtin)
        throw new AppError('ROLE.BUILTIN', `Built-in role "${role.key}" cannot be deleted`);
      const t = now();
      if (!(await st.updateRole(tx, id, softDeleted(t, actor)))) throw roleNotFound();
      await st.softDeleteRoleChildren(tx, id, t, actor);
      await st.bumpAuthzVersion(tx);
    });
  }

  async function assignRole(actor: string, input: { user_id: string; role_id: string }) {
    const row = { id: newId(), ...input, ...auditInsert(now(), actor) };
    try {
      await store.transaction(async (tx) => {
        await requireUser(tx.db, input.user_id);
        await requireRole(tx.db, input.role_id);
        await st.insertUserRole(tx, row);
        await st.bumpAuthzVersion(tx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('USER_ROLE.EXISTS', 'The user already holds this role');
      throw err;
    }
    return row;
  }

  async function unassignRole(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      if (!(await st.findUserRole(tx.db, id))) throw userRoleNotFound();
      if (!(await st.softDeleteUserRole(tx, id, now(), actor))) throw userRoleNotFound();
      await st.bumpAuthzVersion(tx);
    });
  }

  async function addRoleScope(actor: string, input: { role_id: string; scope_key: string }) {
    const scopeKey = checkScopeKey(input.scope_key);
    const row = { id: newId(), role_id: input.role_id, scope_key: scopeKey, ...auditInsert(now(), actor) };
    try {
      await store.transaction(async (tx) => {
        await requireRole(tx.db, input.role_id);
        await st.lockRoleScopes(tx, input.role_id);
        await st.insertRoleScopeEntries(tx, [row]);
        await st.bumpAuthzVersion(tx);
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('ROLE_SCOPE.EXISTS', `The role already has "${scopeKey}" assigned`);
      throw err;
    }
    return row;
  }

  async function removeRoleScope(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      if (!(await st.findRoleScopeEntry(tx.db, id))) throw roleScopeNotFound();
      if ((await st.softDeleteRoleScopeEntries(tx, [id], now(), actor)) === 0) throw roleScopeNotFound();
      await st.bumpAuthzVersion(tx);
    });
  }

  /** PUT /role/{id}/scope: makes the persisted set equal to `scopeKeys`, answering the diff. */
  async function replaceRoleScopes(actor: string, roleId: string, scopeKeys: string[]) {
    const wanted = [...new Set(scopeKeys.map(checkScopeKey))].sort();
    return store.transaction(async (tx) => {
      await requireRole(tx.db, roleId);
      // Serialises concurrent PUTs and adds (PostgreSQL, READ COMMITTED): without it two of them read
      // "no entry" and the second insert breaks the unique index. SQLite serialises writers already.
      await st.lockRoleScopes(tx, roleId);
      const current = await st.activeScopeEntriesOfRole(tx.db, roleId);
      const currentKeys = new Set(current.map((e) => e.scope_key));
      const added = wanted.filter((k) => !currentKeys.has(k));
      const removedEntries = current.filter((e) => !wanted.includes(e.scope_key));
      const t = now();
      await st.insertRoleScopeEntries(
        tx,
        added.map((scope_key) => ({ id: newId(), role_id: roleId, scope_key, ...auditInsert(t, actor) })),
      );
      await st.softDeleteRoleScopeEntries(
        tx,
        removedEntries.map((e) => e.id),
        t,
        actor,
      );
      if (added.length || removedEntries.length) await st.bumpAuthzVersion(tx);
      return {
        role_id: roleId,
        scope_keys: wanted,
        added,
        removed: removedEntries.map((e) => e.scope_key).sort(),
        unchanged: wanted.filter((k) => currentKeys.has(k)),
      };
    });
  }

  return {
    createRole,
    getRole: (id) => requireRole(store.db, id),
    listRoles: (page, f) => st.listRoles(store.db, page, f),
    updateRole,
    deleteRole,
    /** Role keys a user holds, e.g. for the questionnaire permission rules. */
    getRoleKeysOfUser: async (userId: string) => (await st.rolesOfUser(store.db, userId)).map((r) => r.key),
    getRolesOfUser: async (userId: string) =>
      (await st.rolesOfUser(store.db, userId)).map((r) => ({ ...r, is_builtin: Boolean(r.is_builtin) })),
    assignRole,
    getUserRole: async (id) => (await st.findUserRole(store.db, id)) ?? Promise.reject(userRoleNotFound()),
    listUserRoles: (page, f) => st.listUserRoles(store.db, page, f),
    unassignRole,
    addRoleScope,
    getRoleScopeEntry: async (id) =>
      (await st.findRoleScopeEntry(store.db, id)) ?? Promise.reject(roleScopeNotFound()),
    listRoleScopeEntries: (page, f) => st.listRoleScopeEntries(store.db, page, f),
    removeRoleScope,
    replaceRoleScopes,
    persistedRoleScopes: async (roleId: string) => {
      await requireRole(store.db, roleId);
      const entries = await st.activeScopeEntriesOfRole(store.db, roleId);
      return { role_id: roleId, scope_keys: entries.map((e) => e.scope_key).sort() };
    },
  };
}
