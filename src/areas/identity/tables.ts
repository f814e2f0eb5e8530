export interface UserTable {
  id: string;
  email: string;
  /** Lower-cased email: the unique key among active users. */
  email_normalized: string;
  name: string | null;
  /** scrypt hash (see passwords.ts); selected only by the queries that verify a password. */
  password_hash: string;
  mfa_enabled: number;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface RoleTable {
  id: string;
  key: string;
  name: string;
  description: string | null;
  is_builtin: number;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface UserRoleTable {
  id: string;
  user_id: string;
  role_id: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface RoleScopeEntryTable {
  id: string;
  role_id: string;
  scope_key: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

/**
 * One row whose `version` grows with every change that can alter someone's effective scopes
 * (role assignments, role-scope entries, role or user deletion). Each request reads it in the same
 * query that checks its credentials, so every process's scope cache is invalidated at once.
 */
export interface AuthzStateTable {
  id: number;
  version: number;
}

/** A sign-in session (one login; a refresh-token family hangs off it). Revoking it ends the session. */
export interface AuthSessionTable {
  id: string;
  user_id: string;
  auth_path: string;
  device_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
}

export interface ApiKeyTable {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  /** SHA-256 hex of the token; selected only by the query that authenticates a key. */
  token_hash: string;
  token_hint: string;
  /** JSON array of scope keys. */
  scope_keys: string;
  expires_at: string;
  is_revoked: number;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export interface IdentityTables {
  users: UserTable;
  role: RoleTable;
  user_role: UserRoleTable;
  role_scope_entry: RoleScopeEntryTable;
  authz_state: AuthzStateTable;
  auth_session: AuthSessionTable;
  api_key: ApiKeyTable;
}
