import type { Logger } from 'pino';
import type { AuthSettings } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import { sha256Hex } from '../../lib/hash.js';
import type { IdentityService } from '../identity/service.js';
import { updateAccount } from './account-store.js';
import type { Limiter } from './limiter.js';
import type { Mailer } from './mailer.js';
import { PATTERN } from './secrets.js';
import type { RequestMeta, SignIn } from './sign-in.js';
import * as tokens from './token-store.js';

/** Reset mails per address per attempt window (SVC_LOGIN_ATTEMPT_WINDOW_SECONDS); more are dropped silently. */
export const RESET_REQUESTS_PER_WINDOW = 5;
export const RESET_REQUEST_MESSAGE =
  'If an account with this email exists, a password reset link has been sent to it.';

/**
 * Password reset (a one-time token by mail) and change (the current password). Either ends the
 * user's other sign-ins, spends the open MFA challenges, and clears a reset requirement.
 */
export function createPasswordReset(deps: {
  store: Store;
  log: Logger;
  identity: IdentityService;
  settings: AuthSettings;
  signIn: SignIn;
  limiter: Limiter;
  mailer: Mailer;
}) {
  const { store, log, identity, settings, signIn, limiter } = deps;
  const pendingMail = new Set<Promise<unknown>>();

  async function requestPasswordReset(email: string, meta: RequestMeta): Promise<{ message: string }> {
    const answer = { message: RESET_REQUEST_MESSAGE };
    // Throttled per address (existing or not) against mail bombing; a throttled request still gets
    // the same answer, so the answer never tells whether the account exists.
    const allowed = await limiter.throttle(
      `reset:${sha256Hex(email.trim().toLowerCase())}`,
      RESET_REQUESTS_PER_WINDOW,
    );
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
    const token = await signIn.issueOneTimeToken('reset', user.id, settings.passwordResetTtlSeconds);
    const minutes = Math.round(settings.passwordResetTtlSeconds / 60);
    const url = settings.passwordResetUrl;
    const link = url ? `${url}${url.includes('?') ? '&' : '?'}token=${token}` : undefined;
    const text = [
      'Someone asked to reset the password of your account.',
      // The token on a line of its own: quoted-printable never breaks it.
      link ? `Open this link to choose a new password:\n${link}` : `Your password reset token:\n${token}`,
      `It works once and expires in ${minutes} minutes. If you did not ask for this, ignore this mail.`,
    ].join('\n\n');
    await deps.mailer.send({ to: user.email, subject: 'Reset your password', text, kind: 'password_reset' });
  }

  async function confirmPasswordReset(
    token: string,
    newPassword: string,
    meta: RequestMeta,
  ): Promise<{ message: string }> {
    const invalid = () =>
      new AppError('AUTH.RESET_TOKEN_INVALID', 'The reset token is invalid, expired or already used');
    const find = (hash: string) => tokens.resetToken(store.db, hash);
    const row = await limiter.presented(token, PATTERN.reset, meta.ip, find, invalid);
    if (row.used_at !== null || row.expires_at <= signIn.now()) throw invalid();
    const user = await identity.getUser(row.user_id).catch(() => undefined);
    if (!user) throw invalid();
    await store.transaction(async (tx) => {
      if (!(await tokens.useResetToken(tx, row.id, row.user_id, signIn.now()))) throw invalid();
      // Ends every session of the user (none is kept) and emits svc.user.password.changed.
      await identity.setPassword(row.user_id, row.user_id, newPassword, undefined, tx);
      await signIn.endSignIns(tx, 'password_reset', { userId: row.user_id });
      await tokens.endMfaChallenges(tx, row.user_id, signIn.now());
      await updateAccount(tx, row.user_id, { password_reset_required: 0 });
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
    if (!ok || ok.id !== principal.userId)
      throw new AppError('AUTH.PASSWORD_INCORRECT', 'Current password is incorrect');
    await admission.settle('passed');
    await store.transaction(async (tx) => {
      await identity.setPassword(principal.userId, principal.userId, next, principal.sessionId, tx);
      await signIn.endSignIns(tx, 'password_changed', {
        userId: principal.userId,
        exceptSessionId: principal.sessionId,
      });
      // A challenge won with the old password must not still open a session.
      await tokens.endMfaChallenges(tx, principal.userId, signIn.now());
      await updateAccount(tx, principal.userId, { password_reset_required: 0 });
    });
    return { message: 'Password changed; every other session of the account has ended' };
  }

  return {
    requestPasswordReset,
    confirmPasswordReset,
    changePassword,
    /** Waits for reset mails still being issued or sent (graceful shutdown; tests). */
    flushMail: async () => {
      await Promise.all([...pendingMail]);
    },
  };
}
