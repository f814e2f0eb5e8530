import { CompiledQuery } from 'kysely';
import type { Store } from '../../db/store.js';

/**
 * The per-request credential checks, the hottest queries of the service. Each is built and compiled
 * once per batch shape and then only re-bound with new parameters, and runs through
 * `store.readCommitted` (docs/architecture.md). State (the compiled queries) lives per store, hence a
 * factory, unlike the area's store modules of plain functions.
 */

/** The key of one access-token check: a user and the session the token names, if any (ids hold no space). */
export const sessionKey = (userId: string, sessionId: string | undefined): string =>
  `${userId} ${sessionId ?? ''}`;

/**
 * A query built and compiled once, executed with new parameters. Sentinel values mark where each
 * argument goes.
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

export function createCredentialChecks(store: Store) {
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
    /**
     * The check of access tokens (a batch of the requests waiting at once), by `sessionKey`: the user's
     * state, the session's, and the authz version, in one round trip.
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

    /** The check of API keys (a batch), with each creator's state and the authz version: one round trip. */
    async apiKeyCredentialStates(tokenHashes: string[]) {
      let query = apiKeyStateQueries.get(tokenHashes.length);
      if (!query) {
        query = apiKeyStateQueryOf(tokenHashes.length);
        apiKeyStateQueries.set(tokenHashes.length, query);
      }
      return store.readCommitted(query.bind(...tokenHashes));
    },
  };
}
