import type { Store } from '../../db/store.js';
import * as roles from './role-store.js';
import { BUILTIN_ROLE_SCOPES } from './scopes.js';

/**
 * Effective scopes, cached per process and keyed by the store's authz version, which every change to
 * assignments bumps in the same transaction; each request reads the version in the one query that
 * checks its credentials, so a change is seen by every process on the very next request.
 */
export function createScopeResolver(store: Store) {
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
      for (const e of await roles.allActiveScopeEntries(store.db)) {
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
    const held = await roles.rolesOfUser(store.db, userId);
    const scopes = new Set<string>();
    for (const role of held) {
      for (const s of role.is_builtin ? (BUILTIN_ROLE_SCOPES[role.key] ?? []) : []) scopes.add(s);
      for (const s of gen.persistedByRole.get(role.id) ?? []) scopes.add(s);
    }
    // Kept only if no newer version arrived during the await: roles read before a bump (say, of a
    // role since removed) must not be served under the newer version until the next bump.
    if (cache === gen) gen.users.set(userId, scopes);
    return scopes;
  }

  const currentVersion = () => roles.authzVersion(store.db);

  /**
   * GET /role_scope: every role with its effective scopes. Cached per authz version (every change it
   * depends on bumps the version), so a caller who just authenticated at that version costs no query.
   */
  let roleTable: { version: number; rows: Array<{ role_key: string; scopes: string[] }> } | undefined;
  async function roleScopeTable(atVersion?: number): Promise<Array<{ role_key: string; scopes: string[] }>> {
    const version = atVersion ?? (await currentVersion());
    if (roleTable?.version === version) return roleTable.rows;
    const [all, entries] = await Promise.all([
      roles.allRoles(store.db),
      roles.allActiveScopeEntries(store.db),
    ]);
    const rows = all.map((role) => {
      const set = new Set<string>(role.is_builtin ? (BUILTIN_ROLE_SCOPES[role.key] ?? []) : []);
      for (const e of entries) if (e.role_id === role.id) set.add(e.scope_key);
      return { role_key: role.key, scopes: [...set].sort() };
    });
    roleTable = { version, rows };
    return rows;
  }

  return {
    scopesOfUserAt,
    /** Effective scopes of a user right now (union over roles of built-in mapping and persisted entries). */
    scopesOfUser: async (userId: string) => scopesOfUserAt(userId, await currentVersion()),
    roleScopeTable,
  };
}

export type ScopeResolver = ReturnType<typeof createScopeResolver>;
