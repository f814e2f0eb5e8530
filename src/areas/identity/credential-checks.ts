import { sql } from 'kysely';
import { prepared } from '../../db/prepared.js';
import type { Store } from '../../db/store.js';

/**
 * The per-request credential checks, the hottest queries of the service: prepared statements
 * (src/db/prepared.ts) run through `store.readCommitted` (docs/architecture.md), which is why this
 * is a factory of the store rather than plain functions taking a `Db`.
 */

/** The key of one access-token check: a user and the session the token names, if any (ids hold no space). */
export const sessionKey = (userId: string, sessionId: string | undefined): string =>
  `${userId} ${sessionId ?? ''}`;

/** The version of roles and scopes every check returns, so a cached decision knows when it is stale. */
const authzVersion = sql<number>`(select version from authz_state where id = 1)`.as('authz_version');

const userStateStatement = prepared((db, _dialect, userIds: string[], sessionIds: string[]) =>
  db
    .selectFrom('users as u')
    .leftJoin('auth_session as s', (j) => j.onRef('s.user_id', '=', 'u.id').on('s.id', 'in', sessionIds))
    .select(['u.id', 'u.deleted_at', 's.id as session_id', 's.revoked_at', authzVersion])
    .where('u.id', 'in', userIds),
);

const apiKeyStateStatement = prepared((db, _dialect, hashes: string[]) =>
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
      authzVersion,
    ])
    .where('k.token_hash', 'in', hashes),
);

export function createCredentialChecks(store: Store) {
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
      // A user comes back once per named session of theirs, or once with no session.
      const rows = await store.readCommitted(userStateStatement.compile(store.db, userIds, sessionIds));
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
      return store.readCommitted(apiKeyStateStatement.compile(store.db, tokenHashes));
    },
  };
}
