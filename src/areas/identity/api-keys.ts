import type { Store } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/hash.js';
import { newId, randomBase62 } from '../../lib/ids.js';
import * as st from './api-key-store.js';
import type { ApiKey } from './records.js';
import { checkScopeKey } from './roles.js';
import { API_KEY_LIFETIME_SECONDS } from './schemas.js';
import type { ScopeResolver } from './scope-resolver.js';

const apiKeyNotFound = () => new AppError('API_KEY.NOT_FOUND', 'API key not found');

/** API keys: long-lived credentials that never exceed their creator (docs/identity.md "API keys"). */
export interface ApiKeyService {
  /** Answers the token once; only its hash is kept. */
  createApiKey(
    principal: Principal,
    input: { name: string; description?: string | null; scope_keys: string[]; expires_in: number },
  ): Promise<ApiKey & { token: string }>;
  getApiKey(principal: Principal, id: string): Promise<ApiKey>;
  listApiKeys(principal: Principal, page: Page, f: { is_revoked?: boolean }): Promise<ListResult<ApiKey>>;
  revokeApiKey(principal: Principal, id: string): Promise<ApiKey>;
}

export function createApiKeyService(deps: {
  store: Store;
  clock: Clock;
  scopes: ScopeResolver;
}): ApiKeyService {
  const { store, clock } = deps;

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
        {
          field: 'expires_in',
        },
      );
    }
    const scopeKeys = [...new Set(input.scope_keys.map(checkScopeKey))].sort();
    // The creator's own current scopes: docs/identity.md "API keys". A key calling here is capped at its own
    // effective scopes too (key ∩ creator), or a narrow key holding auth:manage could mint a stronger one.
    const creatorScopes = await deps.scopes.scopesOfUser(principal.userId);
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

  return {
    createApiKey,
    getApiKey: async (principal: Principal, id: string): Promise<ApiKey> =>
      (await st.findApiKeyOfUser(store.db, id, principal.userId)) ?? Promise.reject(apiKeyNotFound()),
    listApiKeys: (principal: Principal, page: Page, f: { is_revoked?: boolean }) =>
      st.listApiKeysOfUser(store.db, page, principal.userId, f),
    revokeApiKey: (principal: Principal, id: string): Promise<ApiKey> =>
      store.transaction(async (tx) => {
        if (!(await st.findApiKeyOfUser(tx.db, id, principal.userId))) throw apiKeyNotFound();
        await st.revokeApiKey(tx, id, iso(clock.now()));
        return (await st.findApiKeyOfUser(tx.db, id, principal.userId))!;
      }),
  };
}
