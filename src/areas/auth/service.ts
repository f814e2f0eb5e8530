import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import type { Store, Tx } from '../../db/store.js';
import type { AuthPath, Principal } from '../../http/access.js';
import { AppError, validationError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/hash.js';
import { newId, randomBase62 } from '../../lib/ids.js';
import type { Job } from '../../worker/worker.js';
import type { EventPublisher } from '../events/publish.js';
import type { IdentityService } from '../identity/service.js';
import { USER_EVENT_SOURCE } from '../identity/service.js';
import { vaultKeyring } from '../vault/keyring.js';
import type { VaultService } from '../vault/service.js';
import { createExternalIdp } from './external-idp.js';
import { createLimiter } from './limiter.js';
import { createMailer, type Mailer } from './mailer.js';
import {
  createAuthStore,
  type DeviceFilters,
  type DeviceRecord,
  type RefreshFilters,
  type RefreshTokenRecord,
} from './store.js';
import { matchTotpStep, newTotpSecret, otpauthUrl } from './totp.js';

export interface AuthDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  identity: IdentityService;
  events: EventPublisher;
  config: Config;
  /** The TOTP secrets are under the vault key: the vault's key rotation re-encrypts them too. */
  vault: Pick<VaultService, 'registerCiphertexts'>;
  /** Replaces the nodemailer transport built from the config (never needed in production). */
  mailer?: Mailer;
}

/** CONTRACTS §3 token response. */
export interface TokenResponse {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  refresh_token: string;
  refresh_expires_at: string;
  refresh_expires_in: number;
}

export interface MfaRequired {
  mfa_required: true;
  mfa_token: string;
  expires_in: number;
}

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface UserAuthSettings {
  user_id: string;
  mfa_enabled: boolean;
  password_reset_required: boolean;
  access_token_ttl_seconds: number | null;
  refresh_token_ttl_seconds: number | null;
}

/** Every client-held secret has a recognisable prefix (secret scanners) and 256 random bits. */
const PREFIX = {
  refresh: 'svc_rt_',
  mfa: 'svc_mfa_',
  reset: 'svc_reset_',
  device: 'svc_dev_',
} as const;
const tokenPattern = (prefix: string) => new RegExp(`^${prefix}[0-9A-Za-z]{43}$`);
const PATTERN = {
  refresh: tokenPattern(PREFIX.refresh),
  mfa: tokenPattern(PREFIX.mfa),
  reset: tokenPattern(PREFIX.reset),
  device: tokenPattern(PREFIX.device),
};
const newToken = (prefix: string) => `${prefix}${randomBase62(32, 43)}`;

/** Wrong codes one MFA login challenge survives; then the password step must be repeated. */
export const MFA_CHALLENGE_MAX_ATTEMPTS = 5;
/** Reset mails per address per attempt window (SVC_LOGIN_ATTEMPT_WINDOW_SECONDS); more are dropped silently. */
export const RESET_REQUESTS_PER_WINDOW = 5;
const MFA_ISSUER = 'svc';
/** Sign-in paths whose users face MFA and password-reset enforcement (SPEC Authentication 9, docs/auth.md). */
const ENFORCED_PATHS: readonly AuthPath[] = ['password', 'mfa'];
export const RESET_REQUEST_MESSAGE =
  'If an account with this email exists, a password reset link has been sent to it.';

/**
 * Sign-in flows (docs/auth.md): credentials with MFA, refresh-token rotation, password reset,
 * external IdP, devices. Every sign-in starts a session (identity's auth_session) that is also the
 * refresh-token family; ending the session stops its access tokens at once (the authenticator
 * checks `sid`).
 */
export function createAuthService(deps: AuthDeps) {
  const { store, clock, log, identity, config } = deps;
  const settings = config.auth;
  const st = createAuthStore(store);
  const limiter = createLimiter({ st, clock, settings });
  // TOTP secrets are Fernet tokens under the vault's keyring (previous vault keys still decrypt).
  const keyring = vaultKeyring(config.vaultEncryptionKey!, config.vaultPreviousKeys);
  const encrypt = (plain: string) =>
    keyring.encrypt(plain, { now: Math.floor(clock.now().getTime() / 1000) });
  /**
   * A stored TOTP secret in plain text. A token no configured vault key reads is an operator's
   * mistake (a key retired too early, docs/auth.md): 503 with a clear message, not a 500.
   */
  const decryptMfaSecret = (token: string, userId: string) => {
    try {
      return keyring.decrypt(token).toString('utf8');
    } catch {
      log.error(
        { user_id: userId },
        'MFA secret cannot be decrypted with the configured vault keys (SVC_VAULT_ENCRYPTION_KEY, SVC_VAULT_PREVIOUS_KEYS)',
      );
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        'MFA is unavailable for this account: its MFA secret cannot be decrypted with the configured vault keys',
      );
    }
  };
  deps.vault.registerCiphertexts('MFA secret(s) of users', async (tx, reencrypt) => {
    let count = 0;
    for (const row of await st.mfaCiphertexts(tx)) {
      const patch: { mfa_secret?: string; mfa_pending_secret?: string } = {};
      if (row.mfa_secret) patch.mfa_secret = reencrypt(row.mfa_secret, `user ${row.id} (MFA secret)`);
      if (row.mfa_pending_secret) {
        patch.mfa_pending_secret = reencrypt(row.mfa_pending_secret, `user ${row.id} (pending MFA secret)`);
      }
      count += Object.keys(patch).length;
      await st.updateAuthUser(tx, row.id, patch);
    }
    return count;
  });
  const mailer =
    deps.mailer ??
    createMailer({
      log,
      smtpUrl: config.smtpUrl,
      from: config.mailFrom,
      development: config.nodeEnv === 'development',
    });
  const idp = createExternalIdp({
    settings: { issuer: config.oidcIssuer, audience: config.oidcAudience, jwksUrl: config.oidcJwksUrl },
    clock,
    log,
  });
  const pendingMail = new Set<Promise<unknown>>();
  const now = () => iso(clock.now());
  const later = (seconds: number) => iso(new Date(clock.now().getTime() + seconds * 1000));

  // ---- issuing tokens
  async function lifetimes(d: Tx['db'] | Store['db'], userId: string, deviceId: string | null) {
    const user = await st.authUser(d, userId);
    const device = deviceId ? await st.device(d, deviceId) : undefined;
    // Most specific wins: device, then user, then the global setting (SPEC Authentication 12).
    return {
      access: Number(
        device?.access_token_ttl_seconds ?? user?.access_token_ttl_seconds ?? config.accessTokenTtlSeconds,
      ),
      refresh: Number(
        device?.refresh_token_ttl_seconds ??
          user?.refresh_token_ttl_seconds ??
          settings.refreshTokenTtlSeconds,
      ),
    };
  }

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
    await st.insertRefreshToken(tx, {
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

  /** Starts a session and its refresh-token family in `tx` (or a new transaction). */
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

  const passwordResetRequired = () =>
    new AppError(
      'AUTH.PASSWORD_RESET_REQUIRED',
      'The password of this account must be reset before signing in with it (POST /auth/password_reset/request)',
    );

  // ---- credentials and MFA login
  async function loginWithCredentials(
    email: string,
    password: string,
    meta: RequestMeta,
  ): Promise<TokenResponse | MfaRequired> {
    // Counted before the check, so a burst of parallel guesses cannot all pass the lock check.
    const admission = await limiter.admit(limiter.accountKey(email), meta.ip);
    // Same cost whether or not the email exists (identity verifies against a dummy hash).
    const user = await identity.verifyCredentials(email, password);
    if (!user) throw new AppError('AUTH.INVALID_CREDENTIALS', 'Email or password is incorrect');
    const au = await st.authUser(store.db, user.id);
    if (!au) throw new AppError('AUTH.INVALID_CREDENTIALS', 'Email or password is incorrect');
    if (au.password_reset_required) {
      await admission.settle('passed');
      throw passwordResetRequired();
    }
    if (au.mfa_enabled && au.mfa_secret) {
      const token = newToken(PREFIX.mfa);
      await store.transaction((tx) =>
        st.insertMfaChallenge(tx, {
          id: newId(),
          user_id: user.id,
          token_hash: sha256Hex(token),
          expires_at: later(settings.mfaTokenTtlSeconds),
          attempts: 0,
          used_at: null,
          created_at: now(),
        }),
      );
      // Given back, not cleared: a known password must not reset the count (and the lock
      // doubling) that wrong TOTP codes built up; only a complete sign-in does.
      await admission.settle('passed');
      return { mfa_required: true, mfa_token: token, expires_in: settings.mfaTokenTtlSeconds };
    }
    const tokens = await startSignIn({ userId: user.id, authPath: 'password', meta });
    await admission.settle('signedIn');
    return tokens;
  }

  async function verifyMfaLogin(mfaToken: string, code: string, meta: RequestMeta): Promise<TokenResponse> {
    // Only unknown tokens count against the address (guessing); a known token that expired or was
    // used up is an ordinary client mistake, and counting it could lock out a whole shared address.
    const invalidToken = async (unknown = false) => {
      if (unknown) await limiter.recordIpFailure(meta.ip);
      return new AppError(
        'AUTH.MFA_TOKEN_INVALID',
        'The MFA token is invalid, expired or used up; sign in with the password again',
      );
    };
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    if (!PATTERN.mfa.test(mfaToken)) throw await invalidToken(true);
    const challenge = await st.mfaChallenge(sha256Hex(mfaToken));
    if (!challenge) throw await invalidToken(true);
    if (
      challenge.used_at !== null ||
      challenge.expires_at <= now() ||
      challenge.attempts >= MFA_CHALLENGE_MAX_ATTEMPTS
    ) {
      throw await invalidToken();
    }
    const au = await st.authUser(store.db, challenge.user_id);
    if (!au?.mfa_enabled || !au.mfa_secret) throw await invalidToken();
    // The same enforcement as the password step (SPEC Authentication 9), in case it was set since.
    if (au.password_reset_required) throw passwordResetRequired();
    const account = limiter.accountKey(au.email);
    await limiter.assertNotLocked([account]);
    const step = matchTotpStep(
      decryptMfaSecret(au.mfa_secret, au.id),
      code,
      clock.now().getTime(),
      lastStep(au.mfa_last_step),
    );
    if (step === null) {
      await st.countMfaChallengeFailure(challenge.id);
      await limiter.recordFailure(account, meta.ip);
      throw invalidCode();
    }
    const tokens = await startSignIn({ userId: au.id, authPath: 'mfa', meta }, async (tx) => {
      // Both single-use checks in the session's transaction: a lost race rolls everything back.
      if (!(await st.consumeTotpStep(tx, au.id, 'mfa_last_step', step))) throw invalidCode();
      if (!(await st.useMfaChallenge(tx, challenge.id, now()))) {
        throw new AppError('AUTH.MFA_TOKEN_INVALID', 'The MFA token was already used');
      }
    });
    await limiter.clear(account);
    return tokens;
  }

  const invalidCode = () =>
    new AppError('AUTH.MFA_INVALID_CODE', 'The code is wrong, expired or was already used');
  const lastStep = (v: number | null) => (v === null ? null : Number(v));

  // ---- MFA management (a signed-in user's own)
  function requireUserPrincipal(principal: Principal) {
    if (principal.authPath === 'api_key') {
      // The AUTH.FORBIDDEN detail shape (docs/errors.md): no scope would help, only the kind of credential.
      throw new AppError('AUTH.FORBIDDEN', 'MFA is managed by a signed-in user, not with an API key', {
        required_scopes: [],
        mode: 'any',
        required_auth: 'user',
      });
    }
  }

  async function authUserOf(userId: string) {
    const au = await st.authUser(store.db, userId);
    if (!au) throw new AppError('AUTH.UNAUTHENTICATED', 'The user of this session no longer exists');
    return au;
  }

  async function mfaSetup(principal: Principal): Promise<{ secret: string; otpauth_url: string }> {
    requireUserPrincipal(principal);
    const au = await authUserOf(principal.userId);
    if (au.mfa_enabled) {
      throw new AppError(
        'AUTH.MFA_ALREADY_ENABLED',
        'MFA is already enabled; disable it (PATCH /auth/mfa/enable with enabled false and a code) first',
      );
    }
    const secret = newTotpSecret();
    await store.transaction((tx) =>
      st.updateAuthUser(tx, au.id, {
        mfa_pending_secret: encrypt(secret),
        mfa_pending_verified: 0,
        mfa_pending_last_step: null,
      }),
    );
    return { secret, otpauth_url: otpauthUrl(secret, MFA_ISSUER, au.email) };
  }

  /** Checks `code` against the pending secret (or the active one) and spends its time step. */
  async function checkCode(
    au: NonNullable<Awaited<ReturnType<typeof st.authUser>>>,
    which: 'pending' | 'active',
    code: string,
    meta: RequestMeta,
    alsoInTx?: (tx: Tx) => Promise<void>,
  ): Promise<void> {
    const admission = await limiter.admit(limiter.accountKey(au.email), meta.ip);
    const enc = which === 'pending' ? au.mfa_pending_secret : au.mfa_secret;
    const column = which === 'pending' ? 'mfa_pending_last_step' : 'mfa_last_step';
    const step = matchTotpStep(
      decryptMfaSecret(enc!, au.id),
      code,
      clock.now().getTime(),
      lastStep(au[column]),
    );
    if (step === null) throw invalidCode();
    await store.transaction(async (tx) => {
      if (!(await st.consumeTotpStep(tx, au.id, column, step))) throw invalidCode();
      await alsoInTx?.(tx);
    });
    await admission.settle('passed');
  }

  async function mfaVerify(
    principal: Principal,
    code: string,
    meta: RequestMeta,
  ): Promise<{ verified: true }> {
    requireUserPrincipal(principal);
    const au = await authUserOf(principal.userId);
    if (au.mfa_pending_secret) {
      await checkCode(au, 'pending', code, meta, (tx) =>
        st.updateAuthUser(tx, au.id, { mfa_pending_verified: 1 }),
      );
    } else if (au.mfa_enabled && au.mfa_secret) {
      await checkCode(au, 'active', code, meta);
    } else {
      throw new AppError('AUTH.MFA_NOT_SET_UP', 'No MFA secret is set up: call POST /auth/mfa/setup first');
    }
    return { verified: true };
  }

  async function mfaEnable(
    principal: Principal,
    input: { enabled: boolean; code?: string },
    meta: RequestMeta,
  ): Promise<{ mfa_enabled: boolean }> {
    requireUserPrincipal(principal);
    const au = await authUserOf(principal.userId);
    const changedEvent = async (tx: Tx) => {
      await deps.events.publish(tx, {
        type: 'svc.user.updated',
        source: USER_EVENT_SOURCE,
        subject: au.id,
        data: { user_id: au.id, email: au.email, changed_fields: ['mfa_enabled'] },
      });
    };
    if (input.enabled) {
      if (!au.mfa_pending_secret) {
        if (au.mfa_enabled) return { mfa_enabled: true };
        throw new AppError('AUTH.MFA_NOT_SET_UP', 'No MFA secret is set up: call POST /auth/mfa/setup first');
      }
      if (!au.mfa_pending_verified) {
        throw new AppError(
          'AUTH.MFA_NOT_VERIFIED',
          'The MFA secret is not verified yet: POST /auth/mfa/verify with a code first',
        );
      }
      await store.transaction(async (tx) => {
        await st.updateAuthUser(tx, au.id, {
          mfa_enabled: 1,
          mfa_secret: au.mfa_pending_secret,
          mfa_last_step: au.mfa_pending_last_step,
          mfa_pending_secret: null,
          mfa_pending_verified: 0,
          mfa_pending_last_step: null,
          ...auditUpdate(now(), principal.userId),
        });
        await changedEvent(tx);
      });
      return { mfa_enabled: true };
    }
    if (!au.mfa_enabled) {
      if (au.mfa_pending_secret) {
        await store.transaction((tx) =>
          st.updateAuthUser(tx, au.id, {
            mfa_pending_secret: null,
            mfa_pending_verified: 0,
            mfa_pending_last_step: null,
          }),
        );
      }
      return { mfa_enabled: false };
    }
    if (input.code === undefined) {
      throw validationError('code is required to disable MFA', { field: 'code', in: 'body' });
    }
    await checkCode(au, 'active', input.code, meta, async (tx) => {
      await st.updateAuthUser(tx, au.id, {
        mfa_enabled: 0,
        mfa_secret: null,
        mfa_last_step: null,
        mfa_pending_secret: null,
        mfa_pending_verified: 0,
        mfa_pending_last_step: null,
        ...auditUpdate(now(), principal.userId),
      });
      await changedEvent(tx);
    });
    return { mfa_enabled: false };
  }

  // ---- refresh
  async function refresh(refreshToken: string, meta: RequestMeta): Promise<TokenResponse> {
    // Unknown tokens count against the address; expired or revoked known ones do not (see MFA).
    const invalid = async (why: string, unknown = false) => {
      if (unknown) await limiter.recordIpFailure(meta.ip);
      return new AppError('AUTH.REFRESH_TOKEN_INVALID', `The refresh token is ${why}`);
    };
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    if (!PATTERN.refresh.test(refreshToken)) throw await invalid('not valid', true);
    const row = await st.refreshTokenForRedeem(sha256Hex(refreshToken));
    if (!row) throw await invalid('not valid', true);
    if (row.deleted_at !== null) throw await invalid('not valid');
    if (row.used_at !== null) throw await reuse(row.session_id, row.user_id);
    if (row.revoked_at !== null || row.session_revoked_at !== null) throw await invalid('revoked');
    if (row.expires_at <= now()) throw await invalid('expired');
    if (row.user_deleted_at !== null || row.device_deleted_at !== null) throw await invalid('revoked');
    const grant = await store.transaction(async (tx) => {
      if (!(await st.markRefreshTokenUsed(tx, row.id, now()))) return undefined;
      return insertRefreshToken(tx, {
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
    return tokenResponse(grant);
  }

  /** A rotated token came back: someone holds a copy. The whole family (the session) ends. */
  async function reuse(sessionId: string, userId: string): Promise<AppError> {
    await store.transaction((tx) => st.revokeSessions(tx, now(), 'refresh_token_reused', { sessionId }));
    log.warn({ session_id: sessionId, user_id: userId }, 'refresh token reused: its session was revoked');
    return new AppError(
      'AUTH.REFRESH_TOKEN_REUSED',
      'This refresh token was already used; its session has been ended. Sign in again.',
    );
  }

  async function logout(principal: Principal): Promise<{ message: string }> {
    if (principal.sessionId) {
      const sessionId = principal.sessionId;
      await store.transaction((tx) => st.revokeSessions(tx, now(), 'logout', { sessionId }));
      return { message: 'Signed out: the session and its refresh tokens are revoked' };
    }
    return { message: 'Nothing to sign out: this credential has no session' };
  }

  // ---- refresh token records (auth:manage)
  async function getRefreshToken(id: string): Promise<RefreshTokenRecord> {
    const row = await st.refreshToken(store.db, id);
    if (!row) throw new AppError('AUTH.REFRESH_TOKEN_NOT_FOUND', 'Refresh token not found');
    return row;
  }

  /** Revokes the token's whole family (its sign-in ends) and soft-deletes the record. */
  async function deleteRefreshToken(id: string): Promise<RefreshTokenRecord> {
    return store.transaction(async (tx) => {
      const row = await st.refreshToken(tx.db, id);
      if (!row) throw new AppError('AUTH.REFRESH_TOKEN_NOT_FOUND', 'Refresh token not found');
      const t = now();
      await st.revokeSessions(tx, t, 'refresh_token_deleted', { sessionId: row.session_id });
      await st.softDeleteRefreshToken(tx, id, t);
      return (await st.refreshToken(tx.db, id, true))!;
    });
  }

  const cleanupJob: Job = {
    name: 'refresh-token-cleanup',
    intervalMs: settings.refreshTokenCleanupIntervalMs,
    async run() {
      const at = clock.now();
      const deleted = await st.softDeleteExpiredRefreshTokens(iso(at));
      await st.purgeSpentOneTimeTokens(
        iso(at),
        iso(
          new Date(
            at.getTime() - Math.max(settings.loginAttemptWindowSeconds, settings.loginLockMaxSeconds) * 1000,
          ),
        ),
      );
      if (deleted > 0) log.info({ deleted }, 'expired refresh tokens soft-deleted');
      return false;
    },
  };

  // ---- password reset and change
  async function requestPasswordReset(email: string, meta: RequestMeta): Promise<{ message: string }> {
    const answer = { message: RESET_REQUEST_MESSAGE };
    // Throttled per address (existing or not) against mail bombing; a throttled request still gets
    // the same answer, so the answer never tells whether the account exists.
    const key = `reset:${sha256Hex(email.trim().toLowerCase())}`;
    const allowed = await limiter.throttle(key, RESET_REQUESTS_PER_WINDOW);
    const user = await identity.findUserByEmail(email);
    if (!allowed || !user) return answer;
    // Issued and mailed after the answer: the token's write and SMTP's latency would otherwise make
    // an existing account's answer measurably slower than an unknown one's.
    const issuing = issueResetToken(user)
      .catch((err: Error & { code?: string }) =>
        // The message and code only: an error object could carry the mail (and its token).
        log.error(
          { err: { message: err.message, code: err.code } },
          'password reset token could not be issued or mailed',
        ),
      )
      .finally(() => pendingMail.delete(issuing));
    pendingMail.add(issuing);
    log.info({ user_id: user.id, ip: meta.ip }, 'password reset requested');
    return answer;
  }

  async function issueResetToken(user: { id: string; email: string }): Promise<void> {
    const token = newToken(PREFIX.reset);
    await store.transaction((tx) =>
      st.insertResetToken(tx, {
        id: newId(),
        user_id: user.id,
        token_hash: sha256Hex(token),
        expires_at: later(settings.passwordResetTtlSeconds),
        used_at: null,
        created_at: now(),
      }),
    );
    const minutes = Math.round(settings.passwordResetTtlSeconds / 60);
    const link = settings.passwordResetUrl
      ? `${settings.passwordResetUrl}${settings.passwordResetUrl.includes('?') ? '&' : '?'}token=${token}`
      : undefined;
    const text = [
      'Someone asked to reset the password of your account.',
      // The token on a line of its own: quoted-printable never breaks it.
      link ? `Open this link to choose a new password:\n${link}` : `Your password reset token:\n${token}`,
      `It works once and expires in ${minutes} minutes. If you did not ask for this, ignore this mail.`,
    ].join('\n\n');
    await mailer.send({ to: user.email, subject: 'Reset your password', text, kind: 'password_reset' });
  }

  async function confirmPasswordReset(
    token: string,
    newPassword: string,
    meta: RequestMeta,
  ): Promise<{ message: string }> {
    const invalid = async (unknown = false) => {
      if (unknown) await limiter.recordIpFailure(meta.ip);
      return new AppError('AUTH.RESET_TOKEN_INVALID', 'The reset token is invalid, expired or already used');
    };
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    if (!PATTERN.reset.test(token)) throw await invalid(true);
    const row = await st.resetToken(store.db, sha256Hex(token));
    if (!row) throw await invalid(true);
    if (row.used_at !== null || row.expires_at <= now()) throw await invalid();
    const user = await identity.getUser(row.user_id).catch(() => undefined);
    if (!user) throw await invalid();
    await store.transaction(async (tx) => {
      if (!(await st.useResetToken(tx, row.id, row.user_id, now()))) {
        throw new AppError('AUTH.RESET_TOKEN_INVALID', 'The reset token is invalid, expired or already used');
      }
      // Ends every session of the user (none is kept) and emits svc.user.password.changed.
      await identity.setPassword(row.user_id, newPassword, row.user_id, undefined, tx);
      await st.revokeSessions(tx, now(), 'password_reset', { userId: row.user_id });
      await st.endMfaChallenges(tx, row.user_id, now());
      await st.updateAuthUser(tx, row.user_id, { password_reset_required: 0 });
    });
    await limiter.clear(limiter.accountKey(user.email));
    return { message: 'The password has been reset; every session of the account has ended' };
  }

  async function changePassword(
    principal: Principal,
    current: string,
    next: string,
    meta: RequestMeta,
  ): Promise<{ message: string }> {
    const user = await identity.getUser(principal.userId);
    const admission = await limiter.admit(limiter.accountKey(user.email), meta.ip);
    const ok = await identity.verifyCredentials(user.email, current);
    if (!ok || ok.id !== principal.userId) {
      throw new AppError('AUTH.PASSWORD_INCORRECT', 'Current password is incorrect');
    }
    await admission.settle('passed');
    await store.transaction(async (tx) => {
      await identity.setPassword(principal.userId, next, principal.userId, principal.sessionId, tx);
      await st.revokeSessions(tx, now(), 'password_changed', {
        userId: principal.userId,
        exceptSessionId: principal.sessionId,
      });
      // A challenge won with the old password must not still open a session.
      await st.endMfaChallenges(tx, principal.userId, now());
      await st.updateAuthUser(tx, principal.userId, { password_reset_required: 0 });
    });
    return { message: 'Password changed; every other session of the account has ended' };
  }

  // ---- external identity provider
  async function loginWithExternalIdp(idToken: string, meta: RequestMeta): Promise<TokenResponse> {
    if (!idp.configured) {
      throw new AppError(
        'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
        'No external identity provider is configured (SVC_OIDC_ISSUER, SVC_OIDC_AUDIENCE, SVC_OIDC_JWKS_URL)',
      );
    }
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    let identityClaims: Awaited<ReturnType<typeof idp.verify>>;
    try {
      identityClaims = await idp.verify(idToken);
    } catch (err) {
      if (err instanceof AppError && err.status === 401) await limiter.recordIpFailure(meta.ip);
      throw err;
    }
    let user = await identity.findUserByEmail(identityClaims.email);
    if (!user) user = await createExternalUser(identityClaims);
    return startSignIn({ userId: user.id, authPath: 'external_idp', meta });
  }

  async function createExternalUser(claims: { email: string; name: string | null }) {
    const role = settings.oidcAutoCreateRole;
    if (!role) {
      throw new AppError(
        'AUTH.EXTERNAL_IDP_UNKNOWN_USER',
        'No active user has this email, and automatic creation is not enabled',
      );
    }
    try {
      // Nobody knows this password: the user signs in through the IdP, or resets it to get one.
      return await identity.createUser(null, {
        email: claims.email,
        name: claims.name,
        password: randomBase62(32, 43),
        role_keys: [role],
      });
    } catch (err) {
      if (err instanceof AppError && err.code === 'USER.EMAIL_EXISTS') {
        // Created by a concurrent sign-in of the same person.
        const existing = await identity.findUserByEmail(claims.email);
        if (existing) return existing;
      }
      if (err instanceof AppError && err.code === 'ROLE.NOT_FOUND') {
        log.error({ role }, 'SVC_OIDC_AUTO_CREATE_ROLE names no existing role');
        throw new AppError(
          'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
          'Automatic user creation is misconfigured (SVC_OIDC_AUTO_CREATE_ROLE names no role)',
        );
      }
      throw err;
    }
  }

  // ---- devices
  async function registerDevice(
    actor: string,
    input: {
      user_id: string;
      name: string;
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
    },
  ): Promise<{ device_id: string; registration_token: string; expires_at: string }> {
    await identity.getUser(input.user_id);
    const token = newToken(PREFIX.device);
    const id = newId();
    const t = now();
    const expiresAt = later(settings.deviceRegistrationTtlSeconds);
    await store.transaction((tx) =>
      st.insertDevice(tx, {
        id,
        user_id: input.user_id,
        name: input.name,
        registration_token_hash: sha256Hex(token),
        registration_expires_at: expiresAt,
        registered_at: null,
        registered_by: actor,
        consent_given: 0,
        consent_at: null,
        last_login_at: null,
        access_token_ttl_seconds: input.access_token_ttl_seconds ?? null,
        refresh_token_ttl_seconds: input.refresh_token_ttl_seconds ?? null,
        ...auditInsert(t, actor),
      }),
    );
    return { device_id: id, registration_token: token, expires_at: expiresAt };
  }

  async function deviceLogin(
    registrationToken: string,
    meta: RequestMeta,
  ): Promise<TokenResponse & { device_id: string }> {
    const invalid = async (unknown = false) => {
      if (unknown) await limiter.recordIpFailure(meta.ip);
      return new AppError(
        'AUTH.DEVICE_TOKEN_INVALID',
        'The registration token is invalid, expired or already used',
      );
    };
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    if (!PATTERN.device.test(registrationToken)) throw await invalid(true);
    const row = await st.deviceByRegistrationToken(store.db, sha256Hex(registrationToken));
    if (!row) throw await invalid(true);
    if (row.registered_at !== null || row.deleted_at !== null || row.registration_expires_at <= now()) {
      throw await invalid();
    }
    if (!(await st.authUser(store.db, row.user_id))) throw await invalid();
    const tokens = await startSignIn(
      { userId: row.user_id, authPath: 'device', deviceId: row.id, meta },
      async (tx) => {
        // The one-time exchange: a concurrent second login with the same token rolls back here.
        if (!(await st.registerDevice(tx, row.id, now()))) {
          throw new AppError(
            'AUTH.DEVICE_TOKEN_INVALID',
            'The registration token is invalid, expired or already used',
          );
        }
      },
    );
    return { ...tokens, device_id: row.id };
  }

  async function ownDevice(principal: Principal, id: string): Promise<DeviceRecord> {
    const device = await st.device(store.db, id);
    if (!device || device.user_id !== principal.userId) {
      throw new AppError('AUTH.DEVICE_NOT_FOUND', 'Device not found');
    }
    return device;
  }

  async function recordConsent(
    principal: Principal,
    input: { device_id?: string; consent_given: boolean },
  ): Promise<DeviceRecord> {
    const id = input.device_id ?? principal.deviceId;
    if (!id) {
      throw validationError('device_id is required unless the caller is signed in on a device', {
        field: 'device_id',
        in: 'body',
      });
    }
    await ownDevice(principal, id);
    return store.transaction(async (tx) => {
      const t = now();
      const updated = await st.updateDevice(tx, id, {
        consent_given: input.consent_given ? 1 : 0,
        consent_at: t,
        ...auditUpdate(t, principal.userId),
      });
      if (!updated) throw deviceNotFound();
      return (await st.device(tx.db, id))!;
    });
  }

  async function removeDevice(actor: string, id: string): Promise<DeviceRecord> {
    return store.transaction(async (tx) => {
      const t = now();
      if (!(await st.updateDevice(tx, id, softDeleted(t, actor)))) throw deviceNotFound();
      // Its sign-ins end with it: sessions, refresh tokens and so its access tokens.
      await st.revokeSessions(tx, t, 'device_deleted', { deviceId: id });
      return (await st.device(tx.db, id, true))!;
    });
  }

  const deviceNotFound = () => new AppError('DEVICE.NOT_FOUND', 'Device not found');
  async function getDevice(id: string): Promise<DeviceRecord> {
    const device = await st.device(store.db, id);
    if (!device) throw deviceNotFound();
    return device;
  }

  async function updateDevice(
    actor: string,
    id: string,
    patch: {
      name?: string;
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
    },
  ): Promise<DeviceRecord> {
    await getDevice(id);
    return store.transaction(async (tx) => {
      if (!(await st.updateDevice(tx, id, { ...patch, ...auditUpdate(now(), actor) })))
        throw deviceNotFound();
      return (await st.device(tx.db, id))!;
    });
  }

  // ---- per-user settings (auth:manage)
  async function getUserSettings(userId: string): Promise<UserAuthSettings> {
    const au = await st.authUser(store.db, userId);
    if (!au) throw new AppError('USER.NOT_FOUND', 'User not found');
    return {
      user_id: au.id,
      mfa_enabled: Boolean(au.mfa_enabled),
      password_reset_required: Boolean(au.password_reset_required),
      access_token_ttl_seconds:
        au.access_token_ttl_seconds === null ? null : Number(au.access_token_ttl_seconds),
      refresh_token_ttl_seconds:
        au.refresh_token_ttl_seconds === null ? null : Number(au.refresh_token_ttl_seconds),
    };
  }

  async function updateUserSettings(
    actor: string,
    userId: string,
    patch: {
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
      password_reset_required?: boolean;
    },
  ): Promise<UserAuthSettings> {
    const before = await getUserSettings(userId);
    await store.transaction(async (tx) => {
      const t = now();
      await st.updateAuthUser(tx, userId, {
        ...(patch.access_token_ttl_seconds !== undefined && {
          access_token_ttl_seconds: patch.access_token_ttl_seconds,
        }),
        ...(patch.refresh_token_ttl_seconds !== undefined && {
          refresh_token_ttl_seconds: patch.refresh_token_ttl_seconds,
        }),
        ...(patch.password_reset_required !== undefined && {
          password_reset_required: patch.password_reset_required ? 1 : 0,
        }),
        ...auditUpdate(t, actor),
      });
      if (patch.password_reset_required && !before.password_reset_required) {
        // Sign-ins that rested on the password end now; IdP, device and API-key access is not affected.
        await st.revokeSessions(tx, t, 'password_reset_required', { userId, authPaths: [...ENFORCED_PATHS] });
        await st.endMfaChallenges(tx, userId, t);
      }
    });
    return getUserSettings(userId);
  }

  return {
    loginWithCredentials,
    verifyMfaLogin,
    mfaSetup,
    mfaVerify,
    mfaEnable,
    refresh,
    logout,
    listRefreshTokens: (page: Page, f: RefreshFilters) => st.listRefreshTokens(page, f, now()),
    getRefreshToken,
    deleteRefreshToken,
    requestPasswordReset,
    confirmPasswordReset,
    changePassword,
    loginWithExternalIdp,
    registerDevice,
    deviceLogin,
    recordConsent,
    /** DELETE /auth/device/{id}: the device's own user removes it. */
    removeOwnDevice: async (principal: Principal, id: string) => {
      await ownDevice(principal, id);
      return removeDevice(principal.userId, id);
    },
    listDevices: (page: Page, f: DeviceFilters) => st.listDevices(page, f),
    getDevice,
    updateDevice,
    /** DELETE /device/{id} (device:delete). */
    deleteDevice: async (actor: string, id: string) => {
      await getDevice(id);
      return removeDevice(actor, id);
    },
    getUserSettings,
    updateUserSettings,
    /** The 24-hour job soft-deleting expired refresh tokens (SPEC Limits). */
    cleanupJob,
    mailTransport: mailer.transport,
    /** Waits for mails still being sent (graceful shutdown; tests). */
    flushMail: async () => {
      await Promise.all([...pendingMail]);
    },
    async close() {
      await Promise.all([...pendingMail]);
      mailer.close();
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
