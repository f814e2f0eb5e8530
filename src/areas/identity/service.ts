import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import type { Authenticator } from '../../http/access.js';
import type { Clock } from '../../lib/clock.js';
import type { EventPublisher } from '../events/publish.js';
import { type ApiKeyService, createApiKeyService } from './api-keys.js';
import { createAuthenticator } from './authenticator.js';
import { createPasswordHasher } from './passwords.js';
import { createRoleService, type RoleService } from './roles.js';
import { createScopeResolver } from './scope-resolver.js';
import { SCOPES } from './scopes.js';
import { type AccessClaims, createAccessTokens } from './tokens.js';
import { createUserService, type UserService } from './users.js';

export { USER_EVENT_SOURCE } from './users.js';

export interface IdentityDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  events: EventPublisher;
  jwtSecret: string;
  passwordHashCost: number;
  accessTokenTtlSeconds: number;
}

export type { ApiKeyService, RoleService, UserService };

/**
 * The identity area as routes and other areas see it: users (users.ts), roles and what they grant
 * (roles.ts), API keys (api-keys.ts), and the authenticator every request goes through
 * (authenticator.ts) on effective scopes cached per authz version (scope-resolver.ts).
 */
export interface IdentityService extends UserService, RoleService, ApiKeyService {
  authenticate: Authenticator;
  /** Effective scopes of a user right now. */
  scopesOfUser(userId: string): Promise<ReadonlySet<string>>;
  /** GET /role_scope: every role with its effective scopes, at `atVersion` (the caller's) or now. */
  roleScopeTable(atVersion?: number): Promise<Array<{ role_key: string; scopes: string[] }>>;
  scopeCatalogue(): typeof SCOPES;
  issueAccessToken(claims: AccessClaims, ttlSeconds?: number): Promise<{ token: string; expiresIn: number }>;
  hashPassword(password: string): Promise<string>;
  verifyPassword(password: string, hash: string): Promise<boolean>;
  /** Writes pending API key `last_used_at` values now (tests, shutdown). */
  flushLastUsed(): Promise<void>;
  /** Flushes what is buffered and stops timers (graceful shutdown). */
  close(): Promise<void>;
}

export function createIdentityService(deps: IdentityDeps): IdentityService {
  const { store, clock } = deps;
  const passwords = createPasswordHasher(deps.passwordHashCost);
  const tokens = createAccessTokens({
    secret: deps.jwtSecret,
    clock,
    ttlSeconds: deps.accessTokenTtlSeconds,
  });
  const scopes = createScopeResolver(store);
  const authenticator = createAuthenticator({ store, clock, log: deps.log, tokens, scopes });
  return {
    ...createUserService({ store, clock, events: deps.events, passwords }),
    ...createRoleService({ store, clock }),
    ...createApiKeyService({ store, clock, scopes }),
    authenticate: authenticator.authenticate,
    scopesOfUser: scopes.scopesOfUser,
    roleScopeTable: scopes.roleScopeTable,
    scopeCatalogue: () => SCOPES,
    issueAccessToken: (claims, ttlSeconds) => tokens.issue(claims, ttlSeconds),
    hashPassword: passwords.hash,
    verifyPassword: passwords.verify,
    flushLastUsed: authenticator.flushLastUsed,
    close: authenticator.close,
  };
}
