import { findActive, listActive, softDeleted, updateActive } from '../../db/audit.js';
import type { Db, Tx } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Role, type RoleScopeEntry, toRole, type UserRole } from './records.js';
import { normaliseScopeKey } from './scopes.js';
import type { RoleScopeEntryTable, RoleTable, UserRoleTable } from './tables.js';

/** SQL of roles, who holds them, what they grant, and the authz version every such change bumps. */

// ---- authz version (cache invalidation across processes)

export async function authzVersion(d: Db): Promise<number> {
  const row = await d
    .selectFrom('authz_state')
    .select('version')
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return row.version;
}

export async function bumpAuthzVersion(tx: Tx): Promise<void> {
  await tx.db
    .updateTable('authz_state')
    .set((eb) => ({ version: eb('version', '+', 1) }))
    .where('id', '=', 1)
    .execute();
}

/** Holds the role's row until commit (PostgreSQL): role-scope writes of one role go one at a time. */
export async function lockRoleScopes(tx: Tx, roleId: string): Promise<void> {
  if (tx.dialect !== 'postgres') return;
  await tx.db.selectFrom('role').select('id').where('id', '=', roleId).forUpdate().execute();
}

// ---- roles

export async function insertRole(tx: Tx, row: RoleTable): Promise<void> {
  await tx.db.insertInto('role').values(row).execute();
}

export async function findRole(d: Db, id: string): Promise<Role | undefined> {
  const r = await findActive(d, 'role', id);
  return r ? toRole(r) : undefined;
}

export async function allRoles(d: Db): Promise<Role[]> {
  const rows = await d
    .selectFrom('role')
    .selectAll()
    .where('deleted_at', 'is', null)
    .orderBy('key')
    .execute();
  return rows.map(toRole);
}

export interface RoleFilters {
  key?: string;
  is_builtin?: boolean;
  search?: string;
}

export function listRoles(d: Db, page: Page, f: RoleFilters): Promise<ListResult<Role>> {
  const filters = {
    equals: { key: f.key, is_builtin: f.is_builtin },
    search: { value: f.search, in: ['key', 'name'] },
  };
  return listActive(d, 'role', page, filters, toRole);
}

/** Changes an active role; false when there is none (see updateActive). */
export const updateRole = (tx: Tx, id: string, patch: Partial<RoleTable>) =>
  updateActive(tx.db, 'role', id, patch);

/** Soft-deletes what hangs off a role: its assignments and role-scope entries. */
export async function softDeleteRoleChildren(
  tx: Tx,
  roleId: string,
  now: string,
  actor: string,
): Promise<void> {
  for (const table of ['user_role', 'role_scope_entry'] as const) {
    await tx.db
      .updateTable(table)
      .set(softDeleted(now, actor))
      .where('role_id', '=', roleId)
      .where('deleted_at', 'is', null)
      .execute();
  }
}

/** The active roles a user holds, by key. */
export async function rolesOfUser(d: Db, userId: string): Promise<RoleTable[]> {
  return d
    .selectFrom('user_role as ur')
    .innerJoin('role as r', 'r.id', 'ur.role_id')
    .selectAll('r')
    .where('ur.user_id', '=', userId)
    .where('ur.deleted_at', 'is', null)
    .where('r.deleted_at', 'is', null)
    .orderBy('r.key')
    .execute();
}

// ---- user roles

export async function insertUserRole(tx: Tx, row: UserRoleTable): Promise<void> {
  await tx.db.insertInto('user_role').values(row).execute();
}

export async function findUserRole(d: Db, id: string): Promise<UserRole | undefined> {
  return findActive(d, 'user_role', id);
}

export interface UserRoleFilters {
  user_id?: string;
  role_id?: string;
}

export function listUserRoles(d: Db, page: Page, f: UserRoleFilters): Promise<ListResult<UserRole>> {
  return listActive(d, 'user_role', page, { equals: { user_id: f.user_id, role_id: f.role_id } }, (r) => r);
}

/** False when the assignment is not active (deleted meanwhile). */
export const softDeleteUserRole = (tx: Tx, id: string, now: string, actor: string) =>
  updateActive(tx.db, 'user_role', id, softDeleted(now, actor));

export async function softDeleteUserRolesOfUser(tx: Tx, userId: string, now: string, actor: string) {
  await tx.db
    .updateTable('user_role')
    .set(softDeleted(now, actor))
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .execute();
}

// ---- role-scope entries

export async function insertRoleScopeEntries(tx: Tx, rows: RoleScopeEntryTable[]): Promise<void> {
  if (rows.length) await tx.db.insertInto('role_scope_entry').values(rows).execute();
}

export async function findRoleScopeEntry(d: Db, id: string): Promise<RoleScopeEntry | undefined> {
  return findActive(d, 'role_scope_entry', id);
}

export async function activeScopeEntriesOfRole(d: Db, roleId: string): Promise<RoleScopeEntry[]> {
  return d
    .selectFrom('role_scope_entry')
    .selectAll()
    .where('role_id', '=', roleId)
    .where('deleted_at', 'is', null)
    .execute();
}

export async function allActiveScopeEntries(d: Db) {
  return d
    .selectFrom('role_scope_entry')
    .select(['role_id', 'scope_key'])
    .where('deleted_at', 'is', null)
    .execute();
}

export interface RoleScopeFilters {
  role_id?: string;
  scope_key?: string;
  search?: string;
}

export function listRoleScopeEntries(
  d: Db,
  page: Page,
  f: RoleScopeFilters,
): Promise<ListResult<RoleScopeEntry>> {
  // auth:api_key and auth:manage are one permission (docs/identity.md "API keys"): stored as auth:manage.
  const scope_key = f.scope_key && normaliseScopeKey(f.scope_key);
  const filters = {
    equals: { role_id: f.role_id, scope_key },
    search: { value: f.search, in: ['scope_key'] },
  };
  return listActive(d, 'role_scope_entry', page, filters, (r) => r);
}

/** How many of the entries were active and are now deleted. */
export async function softDeleteRoleScopeEntries(
  tx: Tx,
  ids: string[],
  now: string,
  actor: string,
): Promise<number> {
  if (ids.length === 0) return 0;
  const res = await tx.db
    .updateTable('role_scope_entry')
    .set(softDeleted(now, actor))
    .where('id', 'in', ids)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}
