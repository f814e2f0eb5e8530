import type { Static } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { AuthSettings } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { randomBase62 } from '../../lib/ids.js';
import type { IdentityService } from '../identity/service.js';
import { consumeTotpStep } from './account-store.js';
import type { ExternalIdp } from './external-idp.js';
import type { Limiter } from './limiter.js';
import { invalidCode, lastStep } from './mfa.js';
import type { MfaRequired as MfaRequiredSchema } from './schemas.js';
import { type MfaCipher, PATTERN } from './secrets.js';
import { passwordResetRequired, type RequestMeta, type SignIn, type TokenResponse } from './sign-in.js';
import * as tokens from './token-store.js';
import { matchTotpStep } from './totp.js';

export type MfaRequired = Static<typeof MfaRequiredSchema>;

/** Wrong codes one MFA login challenge survives; then the password step must be repeated. */
export const MFA_CHALLENGE_MAX_ATTEMPTS = 5;

/** Signing in: email and password (with the MFA step when enabled), and an external IdP's ID token. */
export function createLogin(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  identity: IdentityService;
  settings: AuthSettings;
  signIn: SignIn;
  limiter: Limiter;
  cipher: MfaCipher;
  idp: ExternalIdp;
}) {
  const { store, clock, identity, settings, signIn, limiter } = deps;

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
    const account = await signIn.accountOf(store.db, user.id);
    if (!account) throw new AppError('AUTH.INVALID_CREDENTIALS', 'Email or password is incorrect');
    if (account.password_reset_required) {
      await admission.settle('passed');
      throw passwordResetRequired();
    }
    if (account.mfa_enabled && account.mfa_secret) {
      const token = await signIn.issueOneTimeToken('mfa', user.id, settings.mfaTokenTtlSeconds);
      // Given back, not cleared: a known password must not reset the count (and the lock
      // doubling) that wrong TOTP codes built up; only a complete sign-in does.
      await admission.settle('passed');
      return { mfa_required: true, mfa_token: token, expires_in: settings.mfaTokenTtlSeconds };
    }
    const issued = await signIn.startSignIn({ userId: user.id, authPath: 'password', meta });
    await admission.settle('signedIn');
    return issued;
  }

  async function verifyMfaLogin(mfaToken: string, code: string, meta: RequestMeta): Promise<TokenResponse> {
    const invalidToken = () =>
      new AppError(
        'AUTH.MFA_TOKEN_INVALID',
        'The MFA token is invalid, expired or used up; sign in with the password again',
      );
    const find = (hash: string) => tokens.mfaChallenge(store.db, hash);
    const challenge = await limiter.presented(mfaToken, PATTERN.mfa, meta.ip, find, invalidToken);
    if (
      challenge.used_at !== null ||
      challenge.expires_at <= signIn.now() ||
      challenge.attempts >= MFA_CHALLENGE_MAX_ATTEMPTS
    ) {
      throw invalidToken();
    }
    const account = await signIn.accountOf(store.db, challenge.user_id);
    if (!account?.mfa_enabled || !account.mfa_secret) throw invalidToken();
    // The same enforcement as the password step (docs/auth.md "MFA and password-reset enforcement"), in case it was set since.
    if (account.password_reset_required) throw passwordResetRequired();
    const accountKey = limiter.accountKey(account.email);
    await limiter.assertNotLocked([accountKey]);
    const step = matchTotpStep(
      deps.cipher.decrypt(account.mfa_secret, account.id),
      code,
      clock.now().getTime(),
      lastStep(account.mfa_last_step),
    );
    if (step === null) {
      await tokens.countMfaChallengeFailure(store.db, challenge.id);
      await limiter.recordFailure(accountKey, meta.ip);
      throw invalidCode();
    }
    const issued = await signIn.startSignIn({ userId: account.id, authPath: 'mfa', meta }, async (tx) => {
      // Both single-use checks in the session's transaction: a lost race rolls everything back.
      if (!(await consumeTotpStep(tx, account.id, 'mfa_last_step', step))) throw invalidCode();
      if (!(await tokens.useMfaChallenge(tx, challenge.id, iso(clock.now())))) {
        throw new AppError('AUTH.MFA_TOKEN_INVALID', 'The MFA token was already used');
      }
    });
    await limiter.clear(accountKey);
    return issued;
  }

  async function loginWithExternalIdp(idToken: string, meta: RequestMeta): Promise<TokenResponse> {
    if (!deps.idp.configured) {
      throw new AppError(
        'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
        'No external identity provider is configured (SVC_OIDC_ISSUER, SVC_OIDC_AUDIENCE, SVC_OIDC_JWKS_URL)',
      );
    }
    await limiter.assertNotLocked([limiter.ipKey(meta.ip)]);
    let claims: Awaited<ReturnType<ExternalIdp['verify']>>;
    try {
      claims = await deps.idp.verify(idToken);
    } catch (err) {
      if (err instanceof AppError && err.status === 401) await limiter.recordIpFailure(meta.ip);
      throw err;
    }
    const user = (await identity.findUserByEmail(claims.email)) ?? (await createExternalUser(claims));
    return signIn.startSignIn({ userId: user.id, authPath: 'external_idp', meta });
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
        deps.log.error({ role }, 'SVC_OIDC_AUTO_CREATE_ROLE names no existing role');
        throw new AppError(
          'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
          'Automatic user creation is misconfigured (SVC_OIDC_AUTO_CREATE_ROLE names no role)',
        );
      }
      throw err;
    }
  }

  return { loginWithCredentials, verifyMfaLogin, loginWithExternalIdp };
}
