import type { Logger } from 'pino';
import type { AuthSettings } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import type { AuthPath, Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Job } from '../../worker/worker.js';
import type { IdentityService } from '../identity/service.js';
import type { Limiter } from './limiter.js';
import { PATTERN } from './secrets.js';
import type { RequestMeta, SignIn, TokenResponse } from './sign-in.js';
import * as tokens from './token-store.js';

const tokenNotFound = () => new AppError('AUTH.REFRESH_TOKEN_NOT_FOUND', 'Refresh token not found');

/**
 * Refresh-token rotation: every redemption marks the token used and issues the next of its family;
 * a used token coming back is reuse, and ends the whole family (the session). Also the records
 * (auth:manage), sign-out, and the 24-hour cleanup job.
 */
export function createRefresh(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  identity: Pick<IdentityService, 'sessionState'>;
  settings: AuthSettings;
  signIn: SignIn;
  limiter: Limiter;
}) {
  const { store, clock, log, signIn, limiter, settings } = deps;

  async function refresh(refreshToken: string, meta: RequestMeta): Promise<TokenResponse> {
    const invalid = (why: string) =>
      new AppError('AUTH.REFRESH_TOKEN_INVALID', `The refresh token is ${why}`);
    const find = (hash: string) => tokens.refreshTokenForRedeem(store.db, hash);
    const row = await limiter.presented(refreshToken, PATTERN.refresh, meta.ip, find, () =>
      invalid('not valid'),
    );
    if (row.deleted_at !== null) throw invalid('not valid');
    if (row.used_at !== null) throw await reuse(row.session_id, row.user_id);
    const session = await deps.identity.sessionState(store.db, row.session_id);
    if (row.revoked_at !== null || !session || session.revoked_at !== null) throw invalid('revoked');
    if (row.expires_at <= signIn.now()) throw invalid('expired');
    if (session.user_deleted_at !== null || row.device_deleted_at !== null) throw invalid('revoked');
    const grant = await store.transaction(async (tx) => {
      if (!(await tokens.markRefreshTokenUsed(tx, row.id, signIn.now()))) return undefined;
      return signIn.insertRefreshToken(tx, {
        userId: row.user_id,
        sessionId: row.session_id,
        authPath: row.auth_path as AuthPath,
        deviceId: row.device_id,
        parentId: row.id,
        meta,
      });
    });
    // Redeemed by a concurrent request between our read and our update: that is reuse too.
    if (!grant) throw await reuse(row.session_id, row.user_id);
    return signIn.tokenResponse(grant);
  }

  /** A rotated token came back: someone holds a copy. The whole family (the session) ends. */
  async function reuse(sessionId: string, userId: string): Promise<AppError> {
    await store.transaction((tx) => signIn.endSignIns(tx, 'refresh_token_reused', { sessionId }));
    log.warn({ session_id: sessionId, user_id: userId }, 'refresh token reused: its session was revoked');
    return new AppError(
      'AUTH.REFRESH_TOKEN_REUSED',
      'This refresh token was already used; its session has been ended. Sign in again.',
    );
  }

  async function logout(principal: Principal): Promise<{ message: string }> {
    const sessionId = principal.sessionId;
    if (!sessionId) return { message: 'Nothing to sign out: this credential has no session' };
    await store.transaction((tx) => signIn.endSignIns(tx, 'logout', { sessionId }));
    return { message: 'Signed out: the session and its refresh tokens are revoked' };
  }

  /** Revokes the token's whole family (its sign-in ends) and soft-deletes the record. */
  async function deleteRefreshToken(id: string): Promise<tokens.RefreshTokenRecord> {
    return store.transaction(async (tx) => {
      const row = await tokens.refreshToken(tx.db, id);
      if (!row) throw tokenNotFound();
      await signIn.endSignIns(tx, 'refresh_token_deleted', { sessionId: row.session_id });
      await tokens.softDeleteRefreshToken(tx, id, signIn.now());
      return (await tokens.refreshToken(tx.db, id, true))!;
    });
  }

  const cleanupJob: Job = {
    name: 'refresh-token-cleanup',
    intervalMs: settings.refreshTokenCleanupIntervalMs,
    async run() {
      const at = clock.now();
      const deleted = await tokens.softDeleteExpiredRefreshTokens(store.db, iso(at));
      const quiet = Math.max(settings.loginAttemptWindowSeconds, settings.loginLockMaxSeconds) * 1000;
      await tokens.purgeSpentOneTimeTokens(store.db, iso(at), iso(new Date(at.getTime() - quiet)));
      if (deleted > 0) log.info({ deleted }, 'expired refresh tokens soft-deleted');
      return false;
    },
  };

  return {
    refresh,
    logout,
    listRefreshTokens: (page: Page, f: tokens.RefreshFilters) =>
      tokens.listRefreshTokens(store.db, page, f, signIn.now()),
    getRefreshToken: async (id: string) =>
      (await tokens.refreshToken(store.db, id)) ?? Promise.reject(tokenNotFound()),
    deleteRefreshToken,
    /** The 24-hour job soft-deleting expired refresh tokens (docs/auth.md "Refresh tokens"). */
    cleanupJob,
  };
}
