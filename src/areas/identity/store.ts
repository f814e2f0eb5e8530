import { CompiledQuery } from 'kysely';
import { softDeleted, updateActive } from '../../db/audit.js';
import type { Database } from '../../db/schema.js';
import type { Db, Store, Tx } from '../../db/store.js';
import { containsInsensitive, type ListResult, type Page, paginate } from '../../http/list.js';
import { normaliseScopeKey } from './scopes.js';
import type { ApiKeyTable, RoleScopeEntryTable, RoleTable, UserRoleTable, UserTable } from './tables.js';

/** SQL of the identity area. Secret columns (password_hash, token_hash) are selected only where verified. */

export interface User {
  id: string;
  email: string;
  name: string | null;
  mfa_enabled: boolean;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface Role {
  id: string;
  key: string;
  name: string;
  description: string | null;
  is_builtin: boolean;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export type UserRole = Omit<UserRoleTable, never>;
export type RoleScopeEntry = Omit<RoleScopeEntryTable, never>;

export interface ApiKey {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  token_hint: string;
  scope_keys: string[];
  expires_at: string;
  is_revoked: boolean;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

const USER_COLUMNS = [
  'id',
  'email',
  'name',
  'mfa_enabled',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

const API_KEY_COLUMNS = [
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

/**
 * A query built and compiled once, executed with new parameters: the hot path of every request
 * (credential checks) skips Kysely's per-call building and compiling. Sentinel values mark where
 * each argument goes.
 */
function precompiled<R, A extends string[]>(
  build: (...sentinels: A) => { compile(): CompiledQuery<R> },
  arity: number,
) {
  const sentinels = Array.from({ length: arity }, (_, i) => `\u0000arg${i}\u0000`) as A;
  const compiled = build(...sentinels).compile();
  return {
    bind(...args: A): CompiledQuery<R> {
      const parameters = compiled.parameters.map((p) => {
        const i = sentinels.indexOf(p as string);
        return i === -1 ? p : args[i];
      });
      return CompiledQuery.raw(compiled.sql, parameters) as CompiledQuery<R>;
    },
  };
}

/** The key of one access-token check: a user and the session the token names, if any (ids hold no space). */
export const sessionKey = (userId: string, sessionId: string | undefined): string =>
  `${userId} ${sessionId ?? ''}`;

export function createIdentityStore(store: Store) {
  const db = store.db;
  const userStateQuery = (userIds: string[], sessionIds: string[]) =>
    db
      .selectFrom('users as u')
      .leftJoin('auth_session as s', (j) => j.onRef('s.user_id', '=', 'u.id').on('s.id', 'in', sessionIds))
      .select([
        'u.id',
        'u.deleted_at',
        's.id as session_id',
        's.revoked_at',
        (eb) => eb.selectFrom('authz_state').select('version').where('id', '=', 1).as('authz_version'),
      ])
      .where('u.id', 'in', userIds);
  const userStateQueryOf = (users: number, sessions: number) =>
    precompiled(
      (...ids: string[]) => userStateQuery(ids.slice(0, users), ids.slice(users)),
      users + sessions,
    );
  // One compiled query per batch shape, made on first use.
  const userStateQueries = new Map<string, ReturnType<typeof userStateQueryOf>>();
  const apiKeyStateQuery = (hashes: string[]) =>
    db
      .selectFrom('api_key as k')
      .innerJoin('users as u', 'u.id', 'k.user_id')
      .select([
        'k.id',
        'k.token_hash',
        'k.user_id',
        'k.scope_keys',
        'k.expires_at',
        'k.is_revoked',
        'u.deleted_at as user_deleted_at',
        (eb) => eb.selectFrom('authz_state').select('version').where('id', '=', 1).as('authz_version'),
      ])
      .where('k.token_hash', 'in', hashes);
  const apiKeyStateQueryOf = (size: number) =>
    precompiled((...hashes: string[]) => apiKeyStateQuery(hashes), size);
  // One compiled query per batch size, made on first use (batches hold 1 to 64 keys).
  const apiKeyStateQueries = new Map<number, ReturnType<typeof apiKeyStateQueryOf>>();
  return {
    // ---- authz version (cache invalidation across processes)
    /** Holds the role's row until commit (PostgreSQL): role-scope writes of one role go one at a time. */
    async lockRoleScopes(tx: Tx, roleId: string) {
      if (tx.dialect !== 'postgres') return;
      await tx.db.selectFrom('role').select('id').where('id', '=', roleId).forUpdate().execute();
    },
    async bumpAuthzVersion(tx: Tx) {
      await tx.db
        .updateTable('authz_state')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', 1)
        .execute();
    },

    /**
     * The per-request check of access tokens (a batch of the requests waiting at once), by
     * `sessionKey`: the user's state, the session's, and the authz version, in one round trip.
     */
    async userCredentialStates(keys: string[]) {
      const pairs = keys.map((key) => key.split(' ') as [user: string, session: string]);
      const userIds = [...new Set(pairs.map(([user]) => user))];
      // '' names no session and keeps the IN list from being empty.
      const sessionIds = [...new Set(['', ...pairs.map(([, session]) => session)])];
      const shape = `${userIds.length},${sessionIds.length}`;
      let query = userStateQueries.get(shape);
      if (!query) {
        query = userStateQueryOf(userIds.length, sessionIds.length);
        userStateQueries.set(shape, query);
      }
      // A user comes back once per named session of theirs, or once with no session.
      const rows = await store.readCommitted(query.bind(...userIds, ...sessionIds));
      const found = new Map<string, Omit<(typeof rows)[number], 'id'>>();
      for (const [user, session] of pairs) {
        const ofUser = rows.filter((r) => r.id === user);
        if (ofUser.length === 0) continue;
        const named = session ? ofUser.find((r) => r.session_id === session) : undefined;
        found.set(sessionKey(user, session), {
          deleted_at: ofUser[0].deleted_at,
          authz_version: ofUser[0].authz_version,
          session_id: named?.session_id ?? null,
          revoked_at: named?.revoked_at ?? null,
        });
      }
      return found;
    },

    /**
     * The per-request check of API keys (a batch of the requests waiting at once), with each
     * creator's state and the authz version: one round trip.
     */
    async apiKeyCredentialStates(tokenHashes: string[]) {
      let query = apiKeyStateQueries.get(tokenHashes.length);
      if (!query) {
        query = apiKeyStateQueryOf(tokenHashes.length);
        apiKeyStateQueries.set(tokenHashes.length, query);
      }
      return store.readCommitted(query.bind(...tokenHashes));
    },

    /** Role ids and keys a user holds (active assignments of active roles). */
    async rolesOfUser(userId: string) {
      return db
        .selectFrom('user_role as ur')
        .innerJoin('role as r', 'r.id', 'ur.role_id')
        .selectAll('r')
        .where('ur.user_id', '=', userId)
        .where('ur.deleted_at', 'is', null)
        .where('r.deleted_at', 'is', null)
        .orderBy('r.key')
        .execute();
    },

    async persistedScopesOfRoles(roleIds: string[]) {
      if (roleIds.length === 0) return [];
      return db
        .selectFrom('role_scope_entry')
        .select(['role_id', 'scope_key'])
        .where('role_id', 'in', roleIds)
        .where('deleted_at', 'is', null)
        .execute();
    },

    // ---- users
    async insertUser(tx: Tx, row: UserTable) {
      await tx.db.insertInto('users').values(row).execute();
    },
    async findUser(d: Db, id: string) {
      const r = await d
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return r ? toUser(r) : undefined;
    },
    /** A user as it is now, deleted or not (the answer of a delete). */
    async findUserAnyState(d: Db, id: string) {
      const r = await d.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
      return r ? toUser(r) : undefined;
    },
    async authzVersion(): Promise<number> {
      const row = await db
        .selectFrom('authz_state')
        .select('version')
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      return row.version;
    },
    async findUsers(ids: string[]) {
      if (ids.length === 0) return [];
      const rows = await db
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('id', 'in', ids)
        .where('deleted_at', 'is', null)
        .execute();
      return rows.map(toUser);
    },
    /** Includes the password hash: for verifying a password only. */
    async findUserWithHashByEmail(emailNormalized: string) {
      return db
        .selectFrom('users')
        .select([...USER_COLUMNS, 'password_hash'])
        .where('email_normalized', '=', emailNormalized)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    async findUserWithHash(id: string) {
      return db
        .selectFrom('users')
        .select([...USER_COLUMNS, 'password_hash'])
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    async listUsers(
      page: Page,
      f: { email?: string; search?: string; role_id?: string },
    ): Promise<ListResult<User>> {
      let q = db.selectFrom('users').where('deleted_at', 'is', null);
      if (f.email) q = q.where('email_normalized', '=', f.email.toLowerCase());
      if (f.search)
        q = q.where((eb) =>
          eb.or([containsInsensitive('email', f.search!), containsInsensitive('name', f.search!)]),
        );
      if (f.role_id) {
        q = q.where('id', 'in', (eb) =>
          eb
            .selectFrom('user_role')
            .select('user_id')
            .where('role_id', '=', f.role_id!)
            .where('deleted_at', 'is', null),
        );
      }
      return paginate(q, page, toUser, USER_COLUMNS);
    },
    /**
     * Changes an active user; false when there is none (missing, or deleted meanwhile: a concurrent
     * delete that committed first makes this one match no row, so only one delete succeeds).
     */
    updateUser: (tx: Tx, id: string, patch: Partial<UserTable>) => updateActive(tx.db, 'users', id, patch),

    // ---- roles
    async insertRole(tx: Tx, row: RoleTable) {
      await tx.db.insertInto('role').values(row).execute();
    },
    async findRole(d: Db, id: string) {
      const r = await d
        .selectFrom('role')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return r ? toRole(r) : undefined;
    },
    async allRoles(d: Db) {
      const rows = await d
        .selectFrom('role')
        .selectAll()
        .where('deleted_at', 'is', null)
        .orderBy('key')
        .execute();
      return rows.map(toRole);
    },
    async listRoles(
      page: Page,
      f: { key?: string; is_builtin?: boolean; search?: string },
    ): Promise<ListResult<Role>> {
      let q = db.selectFrom('role').where('deleted_at', 'is', null);
      if (f.key) q = q.where('key', '=', f.key);
      if (f.is_builtin !== undefined) q = q.where('is_builtin', '=', f.is_builtin ? 1 : 0);
      if (f.search)
        q = q.where((eb) =>
          eb.or([containsInsensitive('key', f.search!), containsInsensitive('name', f.search!)]),
        );
      return paginate(q, page, toRole);
    },
    /** Changes an active role; false when there is none (see updateUser). */
    updateRole: (tx: Tx, id: string, patch: Partial<RoleTable>) => updateActive(tx.db, 'role', id, patch),
    /** Soft-deletes what hangs off a role: its assignments and role-scope entries. */
    async softDeleteRoleChildren(tx: Tx, roleId: string, now: string, actor: string) {
      await tx.db
        .updateTable('user_role')
        .set(softDeleted(now, actor))
        .where('role_id', '=', roleId)
        .where('deleted_at', 'is', null)
        .execute();
      await tx.db
        .updateTable('role_scope_entry')
        .set(softDeleted(now, actor))
        .where('role_id', '=', roleId)
        .where('deleted_at', 'is', null)
        .execute();
    },

    // ---- user roles
    async insertUserRole(tx: Tx, row: UserRoleTable) {
      await tx.db.insertInto('user_role').values(row).execute();
    },
    async findUserRole(d: Db, id: string) {
      return d
        .selectFrom('user_role')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    async listUserRoles(
      page: Page,
      f: { user_id?: string; role_id?: string },
    ): Promise<ListResult<UserRole>> {
      let q = db.selectFrom('user_role').where('deleted_at', 'is', null);
      if (f.user_id) q = q.where('user_id', '=', f.user_id);
      if (f.role_id) q = q.where('role_id', '=', f.role_id);
      return paginate(q, page, (r) => r as UserRole);
    },
    /** False when the assignment is not active (deleted meanwhile). */
    softDeleteUserRole: (tx: Tx, id: string, now: string, actor: string) =>
      updateActive(tx.db, 'user_role', id, softDeleted(now, actor)),
    async softDeleteUserRolesOfUser(tx: Tx, userId: string, now: string, actor: string) {
      await tx.db
        .updateTable('user_role')
        .set(softDeleted(now, actor))
        .where('user_id', '=', userId)
        .where('deleted_at', 'is', null)
        .execute();
    },

    // ---- role-scope entries
    async insertRoleScopeEntries(tx: Tx, rows: RoleScopeEntryTable[]) {
      if (rows.length) await tx.db.insertInto('role_scope_entry').values(rows).execute();
    },
    async findRoleScopeEntry(d: Db, id: string) {
      return d
        .selectFrom('role_scope_entry')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    async activeScopeEntriesOfRole(d: Db, roleId: string) {
      return d
        .selectFrom('role_scope_entry')
        .selectAll()
        .where('role_id', '=', roleId)
        .where('deleted_at', 'is', null)
        .execute();
    },
    async allActiveScopeEntries() {
      return db
        .selectFrom('role_scope_entry')
        .select(['role_id', 'scope_key'])
        .where('deleted_at', 'is', null)
        .execute();
    },
    async listRoleScopeEntries(
      page: Page,
      f: { role_id?: string; scope_key?: string; search?: string },
    ): Promise<ListResult<RoleScopeEntry>> {
      let q = db.selectFrom('role_scope_entry').where('deleted_at', 'is', null);
      if (f.role_id) q = q.where('role_id', '=', f.role_id);
      // auth:api_key and auth:manage are one permission (SPEC Authentication 10): stored as auth:manage.
      if (f.scope_key) q = q.where('scope_key', '=', normaliseScopeKey(f.scope_key));
      if (f.search) q = q.where(containsInsensitive('scope_key', f.search));
      return paginate(q, page, (r) => r as RoleScopeEntry);
    },
    /** How many of the entries were active and are now deleted. */
    async softDeleteRoleScopeEntries(tx: Tx, ids: string[], now: string, actor: string): Promise<number> {
      if (ids.length === 0) return 0;
      const res = await tx.db
        .updateTable('role_scope_entry')
        .set(softDeleted(now, actor))
        .where('id', 'in', ids)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return Number(res.numUpdatedRows);
    },

    // ---- sessions
    async insertSession(tx: Tx, row: Database['auth_session']) {
      await tx.db.insertInto('auth_session').values(row).execute();
    },
    async revokeSessionsOfUser(
      tx: Tx,
      userId: string,
      now: string,
      reason: string,
      exceptSessionId?: string,
    ) {
      let q = tx.db
        .updateTable('auth_session')
        .set({ revoked_at: now, revoked_reason: reason })
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null);
      if (exceptSessionId) q = q.where('id', '!=', exceptSessionId);
      await q.execute();
    },

    // ---- API keys
    async insertApiKey(tx: Tx, row: ApiKeyTable) {
      await tx.db.insertInto('api_key').values(row).execute();
    },
    async findApiKeyOfUser(d: Db, id: string, userId: string) {
      const r = await d
        .selectFrom('api_key')
        .select(API_KEY_COLUMNS)
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      return r ? toApiKey(r) : undefined;
    },
    async listApiKeysOfUser(
      page: Page,
      userId: string,
      f: { is_revoked?: boolean },
    ): Promise<ListResult<ApiKey>> {
      let q = db.selectFrom('api_key').where('user_id', '=', userId);
      if (f.is_revoked !== undefined) q = q.where('is_revoked', '=', f.is_revoked ? 1 : 0);
      return paginate(q, page, toApiKey, API_KEY_COLUMNS);
    },
    async revokeApiKey(tx: Tx, id: string, now: string) {
      await tx.db
        .updateTable('api_key')
        .set({ is_revoked: 1, revoked_at: now })
        .where('id', '=', id)
        .where('is_revoked', '=', 0)
        .execute();
    },
    /** Batched `last_used_at` writes, off the request path. */
    async touchApiKeys(entries: Array<[id: string, at: string]>) {
      if (entries.length === 0) return;
      await db.transaction().execute(async (trx) => {
        for (const [id, at] of entries) {
          await trx.updateTable('api_key').set({ last_used_at: at }).where('id', '=', id).execute();
        }
      });
    },
  };
}

export type IdentityStore = ReturnType<typeof createIdentityStore>;
