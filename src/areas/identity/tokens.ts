import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { AuthPath } from '../../http/access.js';
import type { Clock } from '../../lib/clock.js';

/** Claims of an access token: the user, the sign-in session it belongs to, how they signed in. */
export interface AccessClaims {
  sub: string;
  sid?: string;
  ap: AuthPath;
  did?: string;
}

const ISSUER = 'svc';
const AUDIENCE = 'svc-api';
/** Clocks of the processes of one deployment may differ a little; more than this is refused. */
export const CLOCK_SKEW_SECONDS = 30;
/** The longest lifetime any access token can be given (the bound of every TTL setting). */
const MAX_TOKEN_AGE_SECONDS = 31_536_000;
/** Verified tokens remembered (see `verified`); the oldest is dropped past this. */
const VERIFIED_LIMIT = 10_000;

/** HS256 access tokens (jose). Short-lived; the session behind `sid` is checked on every request. */
export function createAccessTokens(deps: { secret: string; clock: Clock; ttlSeconds: number }) {
  // Imported once: given the raw bytes, jose imports the key anew on every call, a cost per request.
  const key = crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(deps.secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
  /**
   * Tokens whose signature was verified, with the time window in which their claims hold. A client
   * sends the same token with every request, and verifying an HMAC through WebCrypto is a visible part of
   * a request; a token is the exact string verified before, so only the clock is checked again (the
   * same bounds jose applies: not issued in the future, not expired, not older than the longest TTL).
   * The session behind the token is still checked on every request, outside this cache.
   */
  const verified = new Map<string, { claims: AccessClaims; holds(now: number): boolean }>();
  return {
    async issue(
      claims: AccessClaims,
      ttlSeconds = deps.ttlSeconds,
    ): Promise<{ token: string; expiresIn: number }> {
      const now = Math.floor(deps.clock.now().getTime() / 1000);
      const token = await new SignJWT({
        ap: claims.ap,
        ...(claims.sid && { sid: claims.sid }),
        ...(claims.did && { did: claims.did }),
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.sub)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        // A unique id: two tokens issued in the same second for the same session still differ.
        .setJti(randomUUID())
        .setExpirationTime(now + ttlSeconds)
        .sign(await key);
      return { token, expiresIn: ttlSeconds };
    },
    /** The claims of a valid token, or undefined for anything else (bad signature, expired, malformed). */
    async verify(token: string): Promise<AccessClaims | undefined> {
      const known = verified.get(token);
      if (known) {
        const seconds = Math.floor(deps.clock.now().getTime() / 1000);
        if (known.holds(seconds)) return known.claims;
        verified.delete(token);
      }
      try {
        const { payload } = await jwtVerify(token, await key, {
          issuer: ISSUER,
          audience: AUDIENCE,
          algorithms: ['HS256'],
          currentDate: deps.clock.now(),
          // Every token svc issues has both: one without `exp` would never expire, one without `iat`
          // (or issued in the future) cannot be aged. maxTokenAge makes jose check `iat` too.
          requiredClaims: ['exp', 'iat', 'sub'],
          maxTokenAge: MAX_TOKEN_AGE_SECONDS,
          clockTolerance: CLOCK_SKEW_SECONDS,
        });
        if (typeof payload.sub !== 'string' || typeof payload.ap !== 'string') return undefined;
        const claims: AccessClaims = Object.freeze({
          sub: payload.sub,
          ap: payload.ap as AuthPath,
          sid: typeof payload.sid === 'string' ? payload.sid : undefined,
          did: typeof payload.did === 'string' ? payload.did : undefined,
        });
        // requiredClaims guarantees both numbers.
        const iat = payload.iat as number;
        const exp = payload.exp as number;
        if (payload.nbf !== undefined) return claims; // svc issues none; such a token is not remembered
        if (verified.size >= VERIFIED_LIMIT) verified.delete(verified.keys().next().value as string);
        verified.set(token, {
          claims,
          // jose's own tests, on whole seconds: exp, iat not in the future, the age bound.
          holds: (now) =>
            now < exp + CLOCK_SKEW_SECONDS &&
            now >= iat - CLOCK_SKEW_SECONDS &&
            now - iat - CLOCK_SKEW_SECONDS <= MAX_TOKEN_AGE_SECONDS,
        });
        return claims;
      } catch {
        return undefined;
      }
    },
  };
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
