import type { Causation } from '../lib/causation.js';
/**
 * What a route requires of its caller, declared next to its schema (`config: { access }`).
 * One hook in app/ enforces it; the OpenAPI document and the authorization matrix test read it.
 * A route under /api/v1 without a declaration refuses to register, so none can ship unguarded.
 */
export type AuthPath = 'password' | 'mfa' | 'external_idp' | 'device' | 'api_key';

export type Access =
  /** No credentials (sign-in endpoints, health). */
  | { kind: 'public' }
  /** Any authenticated caller, no scope (docs/identity.md "Authorization"). */
  | { kind: 'authenticated' }
  /** Only API-key callers (e.g. anonymous submissions). */
  | { kind: 'api_key' }
  /** The caller's effective scopes must satisfy `scopes` under `mode` (docs/identity.md "Authorization"). */
  | { kind: 'scoped'; scopes: readonly string[]; mode: 'any' | 'all' };

export const publicAccess = (): { access: Access } => ({ access: { kind: 'public' } });
export const authenticated = (): { access: Access } => ({ access: { kind: 'authenticated' } });
export const apiKeyOnly = (): { access: Access } => ({ access: { kind: 'api_key' } });
/** At least one of the scopes (mode `any`, the default). */
export const anyScope = (...scopes: string[]): { access: Access } => ({
  access: { kind: 'scoped', scopes, mode: 'any' },
});
/** Every one of the scopes (mode `all`). */
export const allScopes = (...scopes: string[]): { access: Access } => ({
  access: { kind: 'scoped', scopes, mode: 'all' },
});

/** Who is calling: placed on the request by the auth hook. */
/** Who acts, as services see a change's author: a user, and what caused the request (the loop guard). */
export interface Acting {
  userId: string;
  causation?: Causation;
}

export interface Principal extends Acting {
  userId: string;
  /** Effective scopes for this request (for API keys: key scopes ∩ creator's current scopes). */
  scopes: ReadonlySet<string>;
  authPath: AuthPath;
  apiKeyId?: string;
  /** Refresh-token family (the sign-in session) a JWT belongs to, when there is one. */
  sessionId?: string;
  deviceId?: string;
  /** The store's authz version this principal's scopes were computed at (lets caches skip a query). */
  authzVersion?: number;
  /**
   * Set when a workflow run's HTTP call made this request (src/lib/causation.ts): the loop guard; and,
   * with tracing on, the request's span, which what it publishes carries.
   */
  causation?: Causation;
}

/** Turns request credentials into a Principal; throws AppError 401 for bad credentials, null for none. */
export type Authenticator = (headers: {
  authorization?: string;
  'x-api-key'?: string | string[];
}) => Promise<Principal | null>;

export function satisfies(principal: Principal, access: Access): boolean {
  if (access.kind !== 'scoped') return true;
  return access.mode === 'all'
    ? access.scopes.every((s) => principal.scopes.has(s))
    : access.scopes.some((s) => principal.scopes.has(s));
}
