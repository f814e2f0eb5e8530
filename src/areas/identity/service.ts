import type { Logger } from 'pino';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Store, Tx } from '../../db/store.js';
import type { Authenticator, AuthPath, Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { coalescing } from '../../lib/coalesce.js';
import { isEmailAddress, MIN_PASSWORD_LENGTH } from '../../lib/email.js';
import { sha256Hex } from '../../lib/hash.js';
import { newId, randomBase62 } from '../../lib/ids.js';
import type { EventPublisher } from '../events/publish.js';
import { createPasswordHasher } from './passwords.js';
import { API_KEY_LIFETIME_SECONDS } from './schemas.js';
import { BUILTIN_ROLE_SCOPES, normaliseScopeKey, SCOPE_KEYS, SCOPES } from './scopes.js';
import { type ApiKey, createIdentityStore, type Role, sessionKey, type User } from './store.js';
import { type AccessClaims, createAccessTokens } from './tokens.js';

export const USER_EVENT_SOURCE = '/api/v1/user';
const API_KEY_PATTERN = /^svc_key_[0-9A-Za-z]{43}$/;

export interface IdentityDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  events: EventPublisher;
  jwtSecret: string;
  passwordHashCost: number;
  accessTokenTtlSeconds: number;
}

const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/**
 * Users, roles, scopes, API keys, and the authenticator every request goes through.
 * Effective scopes are cached per process and keyed by the store's authz version, which every change
 * to assignments bumps in the same transaction; each request reads the version in the one query that
 * checks its credentials, so a change is seen by every process on the very next request.
 */
export function createIdentityService(deps: IdentityDeps) {
  const { store, clock, events } = deps;
  const st = createIdentityStore(store);
  const passwords = createPasswordHasher(deps.passwordHashCost);
  const tokens = createAccessTokens({
    secret: deps.jwtSecret,
    clock,
    ttlSeconds: deps.accessTokenTtlSeconds,
  });
  const now = () => iso(clock.now());

  // ---- scope cache
  /**
   * One generation per authz version: the persisted role-scope entries and the users' scope sets
   * computed from them. A generation is replaced whole, and only by a higher version, so a request
   * that authenticated at an older version and finishes late never sets the cache back.
   */
  interface ScopeGeneration {
    version: number;
    persistedByRole: Map<string, Set<string>>;
    users: Map<string, ReadonlySet<string>>;
  }
  let cache: ScopeGeneration = { version: -1, persistedByRole: new Map(), users: new Map() };

  async function scopesOfUserAt(userId: string, version: number): Promise<ReadonlySet<string>> {
    let gen = cache;
    if (version > gen.version) {
      const persistedByRole = new Map<string, Set<string>>();
      for (const e of await st.allActiveScopeEntries()) {
        const set = persistedByRole.get(e.role_id) ?? new Set<string>();
        set.add(e.scope_key);
        persistedByRole.set(e.role_id, set);
      }
      gen = { version, persistedByRole, users: new Map() };
      if (version > cache.version) cache = gen;
    }
    // (An older version than the cache's uses the newer generation: its entries are at least as fresh.)
    const cached = gen.users.get(userId);
    if (cached) return cached;
    const roles = await st.rolesOfUser(userId);
    const scopes = new Set<string>();
    for (const role of roles) {
      for (const s of role.is_builtin ? (BUILTIN_ROLE_SCOPES[role.key] ?? []) : []) scopes.add(s);
      for (const s of gen.persistedByRole.get(role.id) ?? []) scopes.add(s);
    }
    // Kept only if no newer version arrived during the await: roles read before a bump (say, of a
    // role since removed) must not be served under the newer version until the next bump.
    if (cache === gen) gen.users.set(userId, scopes);
    return scopes;
  }

  const currentVersion = () => st.authzVersion();

  /** Effective scopes of a user right now (union over roles of built-in mapping and persisted entries). */
  async function scopesOfUser(userId: string): Promise<ReadonlySet<string>> {
    return scopesOfUserAt(userId, await currentVersion());
  }

  // ---- last_used_at, written in batches off the request path
  const lastUsed = new Map<string, string>();
  const flushTimer = setInterval(() => void flushLastUsed(), 5000);
  flushTimer.unref();
  async function flushLastUsed() {
    if (lastUsed.size === 0) return;
    const batch = [...lastUsed.entries()];
    lastUsed.clear();
    try {
      await st.touchApiKeys(batch);
    } catch (err) {
      deps.log.warn({ err }, 'could not record API key usage');
    }
  }

  // ---- authentication
  // Concurrent requests' credential lookups share round trips (src/lib/coalesce.ts); each still
  // sees the state committed before it arrived.
  const apiKeyState = coalescing(async (hashes: string[]) => {
    const rows = await st.apiKeyCredentialStates(hashes);
    return new Map(rows.map((r) => [r.token_hash, r]));
  });
  const userState = coalescing((keys: string[]) => st.userCredentialStates(keys));
  const authenticate: Authenticator = async (headers) => {
    const authorization = headers.authorization;
    const headerKey = headers['x-api-key'];
    if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match) throw new AppError('AUTH.UNAUTHENTICATED', 'Authorization header must be "Bearer <token>"');
      const token = match[1];
      return token.startsWith('svc_key_') ? authenticateApiKey(token) : authenticateJwt(token);
    }
    if (headerKey !== undefined)
      return authenticateApiKey(Array.isArray(headerKey) ? headerKey[0] : headerKey);
    return null;
  };

  async function authenticateApiKey(token: string): Promise<Principal> {
    if (!API_KEY_PATTERN.test(token)) throw new AppError('API_KEY.INVALID', 'API key is not valid');
    const row = await apiKeyState(sha256Hex(token));
    if (!row || row.user_deleted_at !== null) throw new AppError('API_KEY.INVALID', 'API key is not valid');
    if (row.is_revoked) throw new AppError('API_KEY.REVOKED', 'API key has been revoked');
    const at = clock.now();
    if (row.expires_at <= iso(at)) throw new AppError('API_KEY.EXPIRED', 'API key has expired');
    const creatorScopes = await scopesOfUserAt(row.user_id, Number(row.authz_version));
    // SPEC Authentication 7: a key's power is its scopes intersected with its creator's current scopes.
    const scopes = new Set<string>();
    for (const s of JSON.parse(row.scope_keys) as string[]) if (creatorScopes.has(s)) scopes.add(s);
    lastUsed.set(row.id, iso(at));
    return {
      userId: row.user_id,
      scopes,
      authPath: 'api_key',
      apiKeyId: row.id,
      authzVersion: Number(row.authz_version),
    };
  }

  async function authenticateJwt(token: string): Promise<Principal> {
    const claims = await tokens.verify(token);
    if (!claims) throw new AppError('AUTH.UNAUTHENTICATED', 'Access token is invalid or expired');
    const row = await userState(sessionKey(claims.sub, claims.sid));
    if (!row || row.deleted_at !== null)
      throw new AppError('AUTH.UNAUTHENTICATED', 'Access token is invalid or expired');
    if (claims.sid && (!row.session_id || row.revoked_at !== null)) {
      throw new AppError('AUTH.UNAUTHENTICATED', 'The session of this access token has ended');
    }
    const scopes = await scopesOfUserAt(claims.sub, Number(row.authz_version));
    return {
      userId: claims.sub,
      scopes,
      authPath: claims.ap,
      sessionId: claims.sid,
      deviceId: claims.did,
      authzVersion: Number(row.authz_version),
    };
  }

  // ---- helpers
  const userNotFound = () => new AppError('USER.NOT_FOUND', 'User not found');
  const roleNotFound = () => new AppError('ROLE.NOT_FOUND', 'Role not found');
  async function requireUser(id: string, d = store.db as Tx['db']): Promise<User> {
    const user = await st.findUser(d, id);
    if (!user) throw userNotFound();
    return user;
  }
  async function requireRole(id: string, d = store.db as Tx['db']): Promise<Role> {
    const role = await st.findRole(d, id);
    if (!role) throw roleNotFound();
    return role;
  }
  function checkScopeKey(key: string): string {
    const normalised = normaliseScopeKey(key);
    if (!SCOPE_KEYS.has(normalised)) {
      throw new AppError('SCOPE.UNKNOWN', `Unknown scope "${key}"`, { field: 'scope_key', value: key });
    }
    return normalised;
  }
  const userEvent = (tx: Tx, type: string, user: User, extra: Record<string, unknown> = {}) =>
    events.publish(tx, {
      type: `svc.user.${type}`,
      source: USER_EVENT_SOURCE,
      subject: user.id,
      data: { user_id: user.id, email: user.email, ...extra },
    });

  // ---- users
  async function createUser(
    actor: string | null,
    input: { email: string; password: string; name?: string | null; role_keys?: string[] },
  ): Promise<User> {
    // POST /user checks these in its schema; the CLI and the bootstrap admin come through here too.
    if (!isEmailAddress(input.email)) {
      throw new AppError('VALIDATION_ERROR', 'email must be an email address', { field: 'email' });
    }
    if (input.password.length < MIN_PASSWORD_LENGTH) {
      throw new AppError('VALIDATION_ERROR', `password must be at least ${MIN_PASSWORD_LENGTH} characters`, {
        field: 'password',
      });
    }
    const hash = await passwords.hash(input.password);
    const t = now();
    const row = {
      id: newId(),
      email: input.email.trim(),
      email_normalized: normaliseEmail(input.email),
      name: input.name ?? null,
      password_hash: hash,
      mfa_enabled: 0,
      ...auditInsert(t, actor),
    };
    try {
      return await store.transaction(async (tx) => {
        await st.insertUser(tx, row);
        if (input.role_keys?.length) {
          const roles = await st.allRoles(tx.db);
          // A key named twice is one role: the second insert would break the unique index.
          for (const key of new Set(input.role_keys)) {
            const role = roles.find((r) => r.key === key);
            if (!role) throw new AppError('ROLE.NOT_FOUND', `Role "${key}" not found`);
            await st.insertUserRole(tx, {
              id: newId(),
              user_id: row.id,
              role_id: role.id,
              ...auditInsert(t, actor),
            });
          }
          await st.bumpAuthzVersion(tx);
        }
        const user = (await st.findUser(tx.db, row.id))!;
        await userEvent(tx, 'created', user, { name: user.name });
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('USER.EMAIL_EXISTS', 'A user with this email already exists');
      throw err;
    }
  }

  async function updateUser(
    actor: string,
    id: string,
    patch: { email?: string; name?: string | null; password?: string },
  ): Promise<User> {
    const hash = patch.password !== undefined ? await passwords.hash(patch.password) : undefined;
    try {
      return await store.transaction(async (tx) => {
        const before = await requireUser(id, tx.db);
        const t = now();
        const updated = await st.updateUser(tx, id, {
          ...(patch.email !== undefined && {
            email: patch.email.trim(),
            email_normalized: normaliseEmail(patch.email),
          }),
          ...(patch.name !== undefined && { name: patch.name }),
          ...(hash !== undefined && { password_hash: hash }),
          ...auditUpdate(t, actor),
        });
        if (!updated) throw userNotFound();
        const user = (await st.findUser(tx.db, id))!;
        const changed = [
          ...(patch.email !== undefined && patch.email.trim() !== before.email ? ['email'] : []),
          ...(patch.name !== undefined && patch.name !== before.name ? ['name'] : []),
        ];
        if (changed.length) await userEvent(tx, 'updated', user, { changed_fields: changed });
        if (hash !== undefined) {
          await st.revokeSessionsOfUser(tx, id, t, 'password_changed');
          await userEvent(tx, 'password.changed', user, { changed_by: actor });
        }
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('USER.EMAIL_EXISTS', 'A user with this email already exists');
      throw err;
    }
  }

  async function deleteUser(actor: string, id: string): Promise<User> {
    return store.transaction(async (tx) => {
      await requireUser(id, tx.db);
      const t = now();
      if (!(await st.updateUser(tx, id, softDeleted(t, actor)))) throw userNotFound();
      await st.softDeleteUserRolesOfUser(tx, id, t, actor);
      await st.revokeSessionsOfUser(tx, id, t, 'user_deleted');
      await st.bumpAuthzVersion(tx);
      const deleted = (await st.findUserAnyState(tx.db, id))!;
      await userEvent(tx, 'deleted', deleted);
      return deleted;
    });
  }

  /** Checks a password; the same cost whether or not the email exists. */
  async function verifyCredentials(
    email: string,
    password: string,
  ): Promise<(User & { password_hash: string }) | undefined> {
    const row = await st.findUserWithHashByEmail(normaliseEmail(email));
    if (!row) return passwords.verifyDummy(password).then(() => undefined);
    if (!(await passwords.verify(password, row.password_hash))) return undefined;
    return { ...row, mfa_enabled: Boolean(row.mfa_enabled) };
  }

  /** Changes a user's own password after checking the current one; ends their other sessions. */
  async function changePassword(principal: Principal, current: string, next: string): Promise<void> {
    const row = await st.findUserWithHash(principal.userId);
    if (!row || !(await passwords.verify(current, row.password_hash))) {
      throw new AppError('AUTH.PASSWORD_INCORRECT', 'Current password is incorrect');
    }
    await setPassword(principal.userId, next, principal.userId, principal.sessionId);
  }

  /** Sets a password (reset or change), ends the user's sessions except `keepSessionId`, emits the event. */
  async function setPassword(
    userId: string,
    password: string,
    actor: string,
    keepSessionId?: string,
    tx0?: Tx,
  ): Promise<void> {
    const hash = await passwords.hash(password);
    const run = async (tx: Tx) => {
      const user = await requireUser(userId, tx.db);
      const t = now();
      if (!(await st.updateUser(tx, userId, { password_hash: hash, ...auditUpdate(t, actor) })))
        throw userNotFound();
      await st.revokeSessionsOfUser(tx, userId, t, 'password_changed', keepSessionId);
      await userEvent(tx, 'password.changed', user, { changed_by: actor });
    };
    if (tx0) await run(tx0);
    else await store.transaction(run);
  }

  // ---- roles
  async function createRole(
    actor: string,
    input: { key: string; name: string; description?: string | null },
  ): Promise<Role> {
    const t = now();
    const row = {
      id: newId(),
      key: input.key,
      name: input.name,
      description: input.description ?? null,
      is_builtin: 0,
      ...auditInsert(t, actor),
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
    return requireRole(row.id);
  }

  async function updateRole(
    actor: string,
    id: string,
    patch: { name?: string; description?: string | null },
  ): Promise<Role> {
    return store.transaction(async (tx) => {
      await requireRole(id, tx.db);
      if (!(await st.updateRole(tx, id, { ...patch, ...auditUpdate(now(), actor) }))) throw roleNotFound();
      return requireRole(id, tx.db);
    });
  }

  async function deleteRole(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      const role = await requireRole(id, tx.db);
      if (role.is_builtin)
        throw new AppError('ROLE.BUILTIN', `Built-in role "${role.key}" cannot be deleted`);
      const t = now();
      if (!(await st.updateRole(tx, id, softDeleted(t, actor)))) throw roleNotFound();
      await st.softDeleteRoleChildren(tx, id, t, actor);
      await st.bumpAuthzVersion(tx);
    });
  }

  // ---- user roles
  async function assignRole(actor: string, input: { user_id: string; role_id: string }) {
    const t = now();
    const row = { id: newId(), ...input, ...auditInsert(t, actor) };
    try {
      await store.transaction(async (tx) => {
        await requireUser(input.user_id, tx.db);
        await requireRole(input.role_id, tx.db);
        await st.insertUserRole(tx, row);
        await st.bumpAuthzVersion(tx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('USER_ROLE.EXISTS', 'The user already holds this role');
      throw err;
    }
    return row;
  }

  async function getUserRole(id: string) {
    const row = await st.findUserRole(store.db, id);
    if (!row) throw new AppError('USER_ROLE.NOT_FOUND', 'User role assignment not found');
    return row;
  }

  async function unassignRole(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      const row = await st.findUserRole(tx.db, id);
      if (!row) throw new AppError('USER_ROLE.NOT_FOUND', 'User role assignment not found');
      if (!(await st.softDeleteUserRole(tx, id, now(), actor))) {
        throw new AppError('USER_ROLE.NOT_FOUND', 'User role assignment not found');
      }
      await st.bumpAuthzVersion(tx);
    });
  }

  // ---- role scopes
  /**
   * GET /role_scope: every role with its effective scopes. Cached per authz version (every change it
   * depends on bumps the version), so a caller who just authenticated at that version costs no query.
   */
  let roleTable: { version: number; rows: Array<{ role_key: string; scopes: string[] }> } | undefined;
  async function roleScopeTable(atVersion?: number): Promise<Array<{ role_key: string; scopes: string[] }>> {
    const version = atVersion ?? (await currentVersion());
    if (roleTable?.version === version) return roleTable.rows;
    const [roles, entries] = await Promise.all([st.allRoles(store.db), st.allActiveScopeEntries()]);
    const rows = roles.map((role) => {
      const set = new Set<string>(role.is_builtin ? (BUILTIN_ROLE_SCOPES[role.key] ?? []) : []);
      for (const e of entries) if (e.role_id === role.id) set.add(e.scope_key);
      return { role_key: role.key, scopes: [...set].sort() };
    });
    roleTable = { version, rows };
    return rows;
  }

  async function addRoleScope(actor: string, input: { role_id: string; scope_key: string }) {
    const scopeKey = checkScopeKey(input.scope_key);
    const t = now();
    const row = {
      id: newId(),
      role_id: input.role_id,
      scope_key: scopeKey,
      ...auditInsert(t, actor),
    };
    try {
      await store.transaction(async (tx) => {
        await requireRole(input.role_id, tx.db);
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

  async function getRoleScopeEntry(id: string) {
    const row = await st.findRoleScopeEntry(store.db, id);
    if (!row) throw new AppError('ROLE_SCOPE.NOT_FOUND', 'Role-scope assignment not found');
    return row;
  }

  async function removeRoleScope(actor: string, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      const row = await st.findRoleScopeEntry(tx.db, id);
      if (!row) throw new AppError('ROLE_SCOPE.NOT_FOUND', 'Role-scope assignment not found');
      if ((await st.softDeleteRoleScopeEntries(tx, [id], now(), actor)) === 0) {
        throw new AppError('ROLE_SCOPE.NOT_FOUND', 'Role-scope assignment not found');
      }
      await st.bumpAuthzVersion(tx);
    });
  }

  /** PUT /role/{id}/scope: makes the persisted set equal to `scopeKeys`, answering the diff. */
  async function replaceRoleScopes(actor: string, roleId: string, scopeKeys: string[]) {
    const wanted = [...new Set(scopeKeys.map(checkScopeKey))].sort();
    return store.transaction(async (tx) => {
      await requireRole(roleId, tx.db);
      // Serialises concurrent PUTs and adds (PostgreSQL, READ COMMITTED): without it two of them read
      // "no entry" and the second insert breaks the unique index. SQLite serialises writers already.
      await st.lockRoleScopes(tx, roleId);
      const current = await st.activeScopeEntriesOfRole(tx.db, roleId);
      const currentKeys = new Set(current.map((e) => e.scope_key));
      const added = wanted.filter((k) => !currentKeys.has(k));
      const removedEntries = current.filter((e) => !wanted.includes(e.scope_key));
      const unchanged = wanted.filter((k) => currentKeys.has(k));
      const t = now();
      await st.insertRoleScopeEntries(
        tx,
        added.map((scope_key) => ({
          id: newId(),
          role_id: roleId,
          scope_key,
          ...auditInsert(t, actor),
        })),
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
        unchanged,
      };
    });
  }

  async function persistedRoleScopes(roleId: string) {
    await requireRole(roleId);
    const entries = await st.activeScopeEntriesOfRole(store.db, roleId);
    return { role_id: roleId, scope_keys: entries.map((e) => e.scope_key).sort() };
  }

  // ---- API keys
  async function createApiKey(
    principal: Principal,
    input: { name: string; description?: string | null; scope_keys: string[]; expires_in: number },
  ): Promise<ApiKey & { token: string }> {
    // Checked first (the route's schema does too; the CLI comes straight here), so a bad lifetime is a
    // 400 whatever the scopes. Past the maximum, expires_at would leave the 4-digit-year ISO form.
    const { min, max } = API_KEY_LIFETIME_SECONDS;
    if (!Number.isInteger(input.expires_in) || input.expires_in < min || input.expires_in > max) {
      throw new AppError(
        'VALIDATION_ERROR',
        `expires_in must be a whole number of seconds from ${min} to ${max}`,
        { field: 'expires_in' },
      );
    }
    const scopeKeys = [...new Set(input.scope_keys.map(checkScopeKey))].sort();
    // The creator's own current scopes: SPEC Authentication 8. A key calling here is capped at its own
    // effective scopes too (key ∩ creator), or a narrow key holding auth:manage could mint a stronger one.
    const creatorScopes = await scopesOfUser(principal.userId);
    const viaKey = principal.authPath === 'api_key';
    const exceeding = scopeKeys.filter((s) => !creatorScopes.has(s) || (viaKey && !principal.scopes.has(s)));
    if (exceeding.length) {
      throw new AppError(
        'API_KEY.SCOPE_EXCEEDS_CREATOR',
        viaKey
          ? 'An API key cannot create a key with scopes the calling key does not hold'
          : 'An API key cannot hold scopes its creator does not hold',
        { scopes: exceeding },
      );
    }
    const token = `svc_key_${randomBase62(32, 43)}`;
    const at = clock.now();
    const row = {
      id: newId(),
      user_id: principal.userId,
      name: input.name,
      description: input.description ?? null,
      token_hash: sha256Hex(token),
      token_hint: token.slice(-4),
      scope_keys: JSON.stringify(scopeKeys),
      expires_at: iso(new Date(at.getTime() + input.expires_in * 1000)),
      is_revoked: 0,
      revoked_at: null,
      last_used_at: null,
      created_at: iso(at),
    };
    await store.transaction((tx) => st.insertApiKey(tx, row));
    const { token_hash: _hash, ...rest } = row;
    return { ...rest, scope_keys: scopeKeys, is_revoked: false, token };
  }

  async function getApiKey(principal: Principal, id: string): Promise<ApiKey> {
    const key = await st.findApiKeyOfUser(store.db, id, principal.userId);
    if (!key) throw new AppError('API_KEY.NOT_FOUND', 'API key not found');
    return key;
  }

  async function revokeApiKey(principal: Principal, id: string): Promise<ApiKey> {
    return store.transaction(async (tx) => {
      const key = await st.findApiKeyOfUser(tx.db, id, principal.userId);
      if (!key) throw new AppError('API_KEY.NOT_FOUND', 'API key not found');
      await st.revokeApiKey(tx, id, now());
      return (await st.findApiKeyOfUser(tx.db, id, principal.userId))!;
    });
  }

  // ---- sessions and tokens (the sign-in flows build on these)
  async function startSession(
    tx: Tx,
    input: {
      userId: string;
      authPath: AuthPath;
      deviceId?: string | null;
      ip?: string | null;
      userAgent?: string | null;
    },
  ): Promise<string> {
    const id = newId();
    await st.insertSession(tx, {
      id,
      user_id: input.userId,
      auth_path: input.authPath,
      device_id: input.deviceId ?? null,
      ip_address: input.ip ?? null,
      user_agent: input.userAgent ?? null,
      created_at: now(),
      revoked_at: null,
      revoked_reason: null,
    });
    return id;
  }

  return {
    authenticate,
    scopesOfUser,
    scopeCatalogue: () => SCOPES,
    issueAccessToken: (claims: AccessClaims, ttlSeconds?: number) => tokens.issue(claims, ttlSeconds),
    hashPassword: passwords.hash,
    verifyPassword: passwords.verify,
    verifyCredentials,
    changePassword,
    setPassword,
    startSession,
    revokeSessionsOfUser: (tx: Tx, userId: string, reason: string, exceptSessionId?: string) =>
      st.revokeSessionsOfUser(tx, userId, now(), reason, exceptSessionId),
    // users
    createUser,
    getUser: (id: string) => requireUser(id),
    /** Active users by id, in one query (missing or deleted ids are left out). */
    getUsers: (ids: string[]) => st.findUsers([...new Set(ids)]),
    findUserByEmail: async (email: string) => {
      const row = await st.findUserWithHashByEmail(normaliseEmail(email));
      if (!row) return undefined;
      const { password_hash: _h, ...user } = row;
      return { ...user, mfa_enabled: Boolean(user.mfa_enabled) } as User;
    },
    listUsers: (page: Page, f: Parameters<typeof st.listUsers>[1]) => st.listUsers(page, f),
    updateUser,
    deleteUser,
    /** Role keys a user holds, e.g. for the questionnaire permission rules. */
    getRoleKeysOfUser: async (userId: string) => (await st.rolesOfUser(userId)).map((r) => r.key),
    getRolesOfUser: async (userId: string) =>
      (await st.rolesOfUser(userId)).map((r) => ({ ...r, is_builtin: Boolean(r.is_builtin) })),
    // roles
    createRole,
    getRole: (id: string) => requireRole(id),
    listRoles: (page: Page, f: Parameters<typeof st.listRoles>[1]) => st.listRoles(page, f),
    updateRole,
    deleteRole,
    // user roles
    assignRole,
    getUserRole,
    listUserRoles: (page: Page, f: Parameters<typeof st.listUserRoles>[1]) => st.listUserRoles(page, f),
    unassignRole,
    // role scopes
    roleScopeTable,
    addRoleScope,
    getRoleScopeEntry,
    listRoleScopeEntries: (page: Page, f: Parameters<typeof st.listRoleScopeEntries>[1]) =>
      st.listRoleScopeEntries(page, f),
    removeRoleScope,
    replaceRoleScopes,
    persistedRoleScopes,
    // API keys
    createApiKey,
    getApiKey,
    listApiKeys: (principal: Principal, page: Page, f: { is_revoked?: boolean }) =>
      st.listApiKeysOfUser(page, principal.userId, f),
    revokeApiKey,
    /** Writes pending `last_used_at` values and stops the timer (graceful shutdown). */
    async close() {
      clearInterval(flushTimer);
      await flushLastUsed();
    },
    flushLastUsed,
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
