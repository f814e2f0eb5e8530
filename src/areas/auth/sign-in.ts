import type { Static } from '@sinclair/typebox';
import type { AuthSettings, Config } from '../../config/config.js';
import type { SignInFilter } from '../../db/sign-ins.js';
import type { Db, Store, Tx } from '../../db/store.js';
import type { AuthPath } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/hash.js';
import { newId } from '../../lib/ids.js';
import type { IdentityService } from '../identity/service.js';
import { type AccountState, findAccount } from './account-store.js';
import { findDevice } from './device-store.js';
import type { TokenResponse as TokenResponseSchema } from './schemas.js';
import { newToken, PREFIX } from './secrets.js';
import {
  insertMfaChallenge,
  insertRefreshToken as insertRefreshTokenRow,
  insertResetToken,
  revokeRefreshTokens,
} from './token-store.js';

/**
 * The token response (docs/auth.md "Token response"), as sign-in issues it: the refresh token is always there (only cookie
 * delivery, at the route, moves it out of the body).
 */
export type TokenResponse = Static<typeof TokenResponseSchema> & { refresh_token: string };

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

/** A user as the sign-in flows see them: identity's record with their sign-in state (auth_user). */
export type Account = AccountState & { id: string; email: string; mfa_enabled: boolean };

/** Sign-in paths whose users face MFA and password-reset enforcement (docs/auth.md "MFA and password-reset enforcement"). */
export const ENFORCED_PATHS: readonly AuthPath[] = ['password', 'mfa'];

export const passwordResetRequired = () =>
  new AppError(
    'AUTH.PASSWORD_RESET_REQUIRED',
    'The password of this account must be reset before signing in with it (POST /auth/password_reset/request)',
  );

interface Grant {
  userId: string;
  sessionId: string;
  authPath: AuthPath;
  deviceId: string | null;
  accessTtl: number;
  refreshToken: string;
  refreshExpiresAt: string;
  refreshTtl: number;
}

export interface SignInDeps {
  store: Store;
  clock: Clock;
  identity: IdentityService;
  config: Config;
  settings: AuthSettings;
}

/**
 * What every sign-in flow shares: a sign-in is a session (identity's auth_session) and its refresh
 * token family (this area's refresh_token); ending sign-ins ends both, in the caller's transaction.
 */
export function createSignIn(deps: SignInDeps) {
  const { store, clock, identity, config, settings } = deps;
  const now = () => iso(clock.now());
  const later = (seconds: number) => iso(new Date(clock.now().getTime() + seconds * 1000));

  /** The active user with their sign-in state; undefined when the user is missing or deleted. */
  async function accountOf(d: Db, userId: string): Promise<Account | undefined> {
    const [user, state] = await Promise.all([identity.findUser(d, userId), findAccount(d, userId)]);
    return user && { ...state, id: user.id, email: user.email, mfa_enabled: user.mfa_enabled };
  }

  async function lifetimes(d: Db, userId: string, deviceId: string | null) {
    const account = await findAccount(d, userId);
    const device = deviceId ? await findDevice(d, deviceId) : undefined;
    // Most specific wins: device, then user, then the global setting (docs/auth.md "Lifetimes").
    return {
      access: Number(
        device?.access_token_ttl_seconds ?? account.access_token_ttl_seconds ?? config.accessTokenTtlSeconds,
      ),
      refresh: Number(
        device?.refresh_token_ttl_seconds ??
          account.refresh_token_ttl_seconds ??
          settings.refreshTokenTtlSeconds,
      ),
    };
  }

  /** The next refresh token of a session (its family), in `tx`. */
  async function insertRefreshToken(
    tx: Tx,
    input: {
      userId: string;
      sessionId: string;
      authPath: AuthPath;
      deviceId: string | null;
      parentId: string | null;
      meta: RequestMeta;
    },
  ): Promise<Grant> {
    const lt = await lifetimes(tx.db, input.userId, input.deviceId);
    const token = newToken(PREFIX.refresh);
    const expiresAt = later(lt.refresh);
    await insertRefreshTokenRow(tx, {
      id: newId(),
      token_hash: sha256Hex(token),
      user_id: input.userId,
      session_id: input.sessionId,
      parent_id: input.parentId,
      device_id: input.deviceId,
      auth_path: input.authPath,
      expires_at: expiresAt,
      ip_address: input.meta.ip,
      user_agent: input.meta.userAgent,
      created_at: now(),
      used_at: null,
      revoked_at: null,
      revoked_reason: null,
      deleted_at: null,
    });
    return {
      userId: input.userId,
      sessionId: input.sessionId,
      authPath: input.authPath,
      deviceId: input.deviceId,
      accessTtl: lt.access,
      refreshToken: token,
      refreshExpiresAt: expiresAt,
      refreshTtl: lt.refresh,
    };
  }

  async function tokenResponse(grant: Grant): Promise<TokenResponse> {
    const { token, expiresIn } = await identity.issueAccessToken(
      {
        sub: grant.userId,
        sid: grant.sessionId,
        ap: grant.authPath,
        ...(grant.deviceId && { did: grant.deviceId }),
      },
      grant.accessTtl,
    );
    return {
      access_token: token,
      token_type: 'bearer',
      expires_in: expiresIn,
      refresh_token: grant.refreshToken,
      refresh_expires_at: grant.refreshExpiresAt,
      refresh_expires_in: grant.refreshTtl,
    };
  }

  /** Starts a session and its refresh-token family in one transaction; `before` runs in it first. */
  async function startSignIn(
    input: { userId: string; authPath: AuthPath; deviceId?: string | null; meta: RequestMeta },
    before?: (tx: Tx) => Promise<void>,
  ): Promise<TokenResponse> {
    const grant = await store.transaction(async (tx) => {
      await before?.(tx);
      const sessionId = await identity.startSession(tx, {
        userId: input.userId,
        authPath: input.authPath,
        deviceId: input.deviceId ?? null,
        ip: input.meta.ip,
        userAgent: input.meta.userAgent,
      });
      return insertRefreshToken(tx, {
        userId: input.userId,
        sessionId,
        authPath: input.authPath,
        deviceId: input.deviceId ?? null,
        parentId: null,
        meta: input.meta,
      });
    });
    return tokenResponse(grant);
  }

  /** Ends the matching sign-ins in `tx`: their sessions (identity) and their refresh tokens. */
  async function endSignIns(tx: Tx, reason: string, where: SignInFilter): Promise<void> {
    await identity.revokeSessions(tx, reason, where);
    await revokeRefreshTokens(tx, now(), reason, where);
  }

  /**
   * Issues a one-time token of `userId` (an MFA challenge, a password reset) valid `ttlSeconds`: stored
   * by its hash only, answered once to the caller.
   */
  async function issueOneTimeToken(
    kind: 'mfa' | 'reset',
    userId: string,
    ttlSeconds: number,
  ): Promise<string> {
    const token = newToken(PREFIX[kind]);
    const row = {
      id: newId(),
      user_id: userId,
      token_hash: sha256Hex(token),
      expires_at: later(ttlSeconds),
      used_at: null,
      created_at: now(),
    };
    await store.transaction((tx) =>
      kind === 'mfa' ? insertMfaChallenge(tx, { ...row, attempts: 0 }) : insertResetToken(tx, row),
    );
    return token;
  }

  return {
    accountOf,
    insertRefreshToken,
    tokenResponse,
    startSignIn,
    endSignIns,
    issueOneTimeToken,
    now,
    later,
  };
}

export type SignIn = ReturnType<typeof createSignIn>;
