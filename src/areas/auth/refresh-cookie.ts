import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, validationError } from '../../http/errors.js';
import type { TokenResponse } from './sign-in.js';

/**
 * Refresh tokens delivered as a cookie instead of in the body (docs/console.md), for browser clients
 * such as the console: the request says `Svc-Refresh-Cookie: true`, and the token is set as an
 * HttpOnly, SameSite=Strict cookie scoped to /api/v1/auth, so page scripts never hold it. Without
 * the header nothing changes (docs/auth.md "As an HttpOnly cookie (browser clients)"). The header doubles as the CSRF guard: a cross-site page
 * cannot send a custom header without a CORS preflight, which svc never grants; the Origin, when
 * sent, must be svc's own as well.
 */
const REFRESH_COOKIE = 'svc_refresh';
const REFRESH_COOKIE_HEADER = 'svc-refresh-cookie';
const COOKIE_PATH = '/api/v1/auth';

export function wantsRefreshCookie(req: FastifyRequest): boolean {
  if (req.headers[REFRESH_COOKIE_HEADER] !== 'true') return false;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `${protocol(req)}://${req.host}`) {
    throw new AppError('AUTH.FORBIDDEN', 'Cookie sign-in is accepted from svc’s own origin only', {
      required_scopes: [],
      mode: 'any',
    });
  }
  return true;
}

/** The token response as this request asked for it: with the refresh token in the body, or in the cookie. */
export function deliverTokens<T extends TokenResponse>(
  req: FastifyRequest,
  reply: FastifyReply,
  tokens: T,
): T | Omit<T, 'refresh_token'> {
  if (!wantsRefreshCookie(req)) return tokens;
  const { refresh_token, ...rest } = tokens;
  reply.setCookie(REFRESH_COOKIE, refresh_token, {
    httpOnly: true,
    sameSite: 'strict',
    secure: protocol(req) === 'https',
    path: COOKIE_PATH,
    maxAge: tokens.refresh_expires_in,
  });
  return rest;
}

/** The refresh token of a refresh request: the body's, else (cookie delivery only) the cookie's. */
export function presentedRefreshToken(req: FastifyRequest, fromBody: string | undefined): string {
  if (fromBody !== undefined) return fromBody;
  if (wantsRefreshCookie(req)) {
    const cookie = req.cookies[REFRESH_COOKIE];
    // A browser without the cookie is simply not signed in: 401, as for an expired token.
    if (!cookie) throw new AppError('AUTH.REFRESH_TOKEN_INVALID', 'No refresh cookie: sign in');
    return cookie;
  }
  throw validationError(
    'refresh_token is required (or, with Svc-Refresh-Cookie: true, the svc_refresh cookie)',
    {
      field: 'refresh_token',
      in: 'body',
    },
  );
}

/** Sign-out of a cookie client also removes the cookie. */
export function clearRefreshCookie(req: FastifyRequest, reply: FastifyReply): void {
  if (req.headers[REFRESH_COOKIE_HEADER] === 'true' && req.cookies[REFRESH_COOKIE] !== undefined) {
    reply.clearCookie(REFRESH_COOKIE, { path: COOKIE_PATH });
  }
}

function protocol(req: FastifyRequest): string {
  return req.headers['x-forwarded-proto'] === 'https' ? 'https' : req.protocol;
}
