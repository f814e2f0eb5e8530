import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import type { Logger } from 'pino';
import { AppError } from '../../http/errors.js';
import type { Clock } from '../../lib/clock.js';

export interface ExternalIdpSettings {
  issuer: string | undefined;
  audience: string | undefined;
  jwksUrl: string | undefined;
}

export interface ExternalIdentity {
  subject: string;
  email: string;
  name: string | null;
}

/** Asymmetric algorithms only: an ID token signed with a shared secret (or `none`) is never accepted. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Leeway for `exp`, `nbf` and `iat` between our clock and the IdP's. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** Errors that say the IdP's key set could not be had, not that the token is bad. */
const UNAVAILABLE = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC']);

/**
 * Verifies OIDC ID tokens of the one configured identity provider (SVC_OIDC_ISSUER, _AUDIENCE,
 * _JWKS_URL) with jose: signature against the provider's JWKS (fetched and cached by
 * createRemoteJWKSet), issuer, audience, expiry. The token must carry an `email` with
 * `email_verified` true: an unverified address could belong to anyone.
 */
export function createExternalIdp(deps: { settings: ExternalIdpSettings; clock: Clock; log: Logger }) {
  const { issuer, audience, jwksUrl } = deps.settings;
  const configured = Boolean(issuer && audience && jwksUrl);
  const jwks = configured
    ? createRemoteJWKSet(new URL(jwksUrl!), { timeoutDuration: 5000, cooldownDuration: 30_000 })
    : undefined;

  const invalid = (reason: string, message: string) =>
    new AppError('AUTH.EXTERNAL_IDP_TOKEN_INVALID', message, { reason });

  async function verify(idToken: string): Promise<ExternalIdentity> {
    if (!jwks) {
      throw new AppError(
        'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
        'No external identity provider is configured (SVC_OIDC_ISSUER, SVC_OIDC_AUDIENCE, SVC_OIDC_JWKS_URL)',
      );
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, jwks, {
        issuer,
        audience,
        algorithms: ALGORITHMS,
        currentDate: deps.clock.now(),
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw classify(err);
    }
    if (typeof payload.email !== 'string' || payload.email.length === 0) {
      throw invalid('email_missing', 'The ID token carries no email');
    }
    // Some providers send the flag as the string "true".
    if (payload.email_verified !== true && payload.email_verified !== 'true') {
      throw invalid('email_not_verified', 'The ID token email is not verified by the identity provider');
    }
    return {
      subject: String(payload.sub),
      email: payload.email,
      name: typeof payload.name === 'string' ? payload.name : null,
    };
  }

  function classify(err: unknown): AppError {
    const e = err as { code?: string; claim?: string };
    switch (e.code) {
      case 'ERR_JWT_EXPIRED':
        return invalid('expired', 'The ID token has expired');
      case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
        return invalid(
          `claim_${e.claim ?? 'unknown'}`,
          `The ID token's "${e.claim ?? 'unknown'}" claim is not acceptable`,
        );
      case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
        return invalid('signature', 'The ID token signature does not verify');
      case 'ERR_JWKS_NO_MATCHING_KEY':
      case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
        return invalid('unknown_key', "The ID token is not signed by one of the provider's keys");
      case 'ERR_JOSE_ALG_NOT_ALLOWED':
      case 'ERR_JOSE_NOT_SUPPORTED':
        return invalid('algorithm', 'The ID token algorithm is not accepted');
      case 'ERR_JWS_INVALID':
      case 'ERR_JWT_INVALID':
        return invalid('malformed', 'The ID token is not a valid JWT');
    }
    if (e.code === undefined || UNAVAILABLE.has(e.code)) {
      // Network failures surface as plain errors from fetch; the cause is logged, never the token.
      deps.log.warn(
        { err: { message: (err as Error)?.message, code: e.code } },
        'external IdP key set unavailable',
      );
      return new AppError(
        'AUTH.EXTERNAL_IDP_UNAVAILABLE',
        "The identity provider's key set could not be fetched; try again later",
      );
    }
    return invalid('invalid', 'The ID token is not valid');
  }

  return { configured, verify };
}

export type ExternalIdp = ReturnType<typeof createExternalIdp>;
