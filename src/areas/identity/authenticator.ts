import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import type { Authenticator, Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { coalescing } from '../../lib/coalesce.js';
import { sha256Hex } from '../../lib/hash.js';
import { touchApiKeys } from './api-key-store.js';
import { createCredentialChecks, sessionKey } from './credential-checks.js';
import type { ScopeResolver } from './scope-resolver.js';
import type { AccessTokens } from './tokens.js';

const API_KEY_PATTERN = /^svc_key_[0-9A-Za-z]{43}$/;

/**
 * The check every request goes through: a JWT (with its session) or an API key, to a Principal with
 * the effective scopes. Concurrent requests' credential lookups share round trips
 * (src/lib/coalesce.ts); each still sees the state committed before it arrived. API keys' last use
 * is written in batches off the request path.
 */
export function createAuthenticator(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  tokens: AccessTokens;
  scopes: ScopeResolver;
}) {
  const { store, clock, scopes } = deps;
  const checks = createCredentialChecks(store);

  const lastUsed = new Map<string, string>();
  const flushTimer = setInterval(() => void flushLastUsed(), 5000);
  flushTimer.unref();
  async function flushLastUsed() {
    if (lastUsed.size === 0) return;
    const batch = [...lastUsed.entries()];
    lastUsed.clear();
    try {
      await store.transaction((tx) => touchApiKeys(tx.db, batch));
    } catch (err) {
      deps.log.warn({ err }, 'could not record API key usage');
    }
  }

  const apiKeyState = coalescing(async (hashes: string[]) => {
    const rows = await checks.apiKeyCredentialStates(hashes);
    return new Map(rows.map((r) => [r.token_hash, r]));
  });
  const userState = coalescing((keys: string[]) => checks.userCredentialStates(keys));

  async function authenticateApiKey(token: string): Promise<Principal> {
    if (!API_KEY_PATTERN.test(token)) throw new AppError('API_KEY.INVALID', 'API key is not valid');
    const row = await apiKeyState(sha256Hex(token));
    if (!row || row.user_deleted_at !== null) throw new AppError('API_KEY.INVALID', 'API key is not valid');
    if (row.is_revoked) throw new AppError('API_KEY.REVOKED', 'API key has been revoked');
    const at = clock.now();
    if (row.expires_at <= iso(at)) throw new AppError('API_KEY.EXPIRED', 'API key has expired');
    const creatorScopes = await scopes.scopesOfUserAt(row.user_id, Number(row.authz_version));
    // docs/identity.md "API keys": a key's power is its scopes intersected with its creator's current scopes.
    const granted = new Set<string>();
    for (const s of JSON.parse(row.scope_keys) as string[]) if (creatorScopes.has(s)) granted.add(s);
    lastUsed.set(row.id, iso(at));
    return {
      userId: row.user_id,
      scopes: granted,
      authPath: 'api_key',
      apiKeyId: row.id,
      authzVersion: Number(row.authz_version),
    };
  }

  async function authenticateJwt(token: string): Promise<Principal> {
    const claims = await deps.tokens.verify(token);
    if (!claims) throw new AppError('AUTH.UNAUTHENTICATED', 'Access token is invalid or expired');
    const row = await userState(sessionKey(claims.sub, claims.sid));
    if (!row || row.deleted_at !== null)
      throw new AppError('AUTH.UNAUTHENTICATED', 'Access token is invalid or expired');
    if (claims.sid && (!row.session_id || row.revoked_at !== null)) {
      throw new AppError('AUTH.UNAUTHENTICATED', 'The session of this access token has ended');
    }
    return {
      userId: claims.sub,
      scopes: await scopes.scopesOfUserAt(claims.sub, Number(row.authz_version)),
      authPath: claims.ap,
      sessionId: claims.sid,
      deviceId: claims.did,
      authzVersion: Number(row.authz_version),
    };
  }

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

  return {
    authenticate,
    flushLastUsed,
    /** Writes pending `last_used_at` values and stops the timer (graceful shutdown). */
    async close() {
      clearInterval(flushTimer);
      await flushLastUsed();
    },
  };
}
