import type { Static } from '@sinclair/typebox';
import type { ApiKey as ApiKeySchema, Role as RoleSchema, User as UserSchema } from './schemas.js';
import type { ApiKeyTable, RoleScopeEntryTable, RoleTable, UserRoleTable, UserTable } from './tables.js';

/**
 * Identity's records as the API shows them: the TypeBox schemas (schemas.ts) declare each shape once;
 * these are their static types and the mapping from table rows (0/1 booleans, JSON text).
 */
export type User = Static<typeof UserSchema>;
export type Role = Static<typeof RoleSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type UserRole = UserRoleTable;
export type RoleScopeEntry = RoleScopeEntryTable;

/** Every column of a user but the password hash, which only the password checks select. */
export const USER_COLUMNS = [
  'id',
  'email',
  'name',
  'mfa_enabled',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

/** Every column of an API key but its hash, which only the credential check selects. */
export const API_KEY_COLUMNS = [
  'id',
  'user_id',
  'name',
  'description',
  'token_hint',
  'scope_keys',
  'expires_at',
  'is_revoked',
  'revoked_at',
  'last_used_at',
  'created_at',
] as const;

export const toUser = (r: Pick<UserTable, (typeof USER_COLUMNS)[number]>): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  mfa_enabled: Boolean(r.mfa_enabled),
  created_at: r.created_at,
  updated_at: r.updated_at,
  updated_by: r.updated_by,
  deleted_at: r.deleted_at,
});

export const toRole = (r: RoleTable): Role => ({ ...r, is_builtin: Boolean(r.is_builtin) });

export const toApiKey = (r: Omit<ApiKeyTable, 'token_hash'>): ApiKey => ({
  ...r,
  scope_keys: JSON.parse(r.scope_keys),
  is_revoked: Boolean(r.is_revoked),
});
