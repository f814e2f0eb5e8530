import { authenticated, publicAccess } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { clearRefreshCookie, deliverTokens, presentedRefreshToken } from './refresh-cookie.js';
import { requestMeta } from './request-meta.js';
import {
  ChangePasswordBody,
  CredentialsBody,
  ExternalIdpBody,
  LoginResponse,
  Message,
  MfaCodeBody,
  MfaEnableBody,
  MfaEnableResponse,
  MfaSetupResponse,
  MfaVerifyLoginBody,
  MfaVerifyResponse,
  RefreshBody,
  ResetConfirmBody,
  ResetRequestBody,
  TokenResponse,
} from './schemas.js';
import type { AuthService } from './service.js';

const tags = ['auth'];

/** Sign-in (credentials, MFA step, IdP, refresh, sign-out), MFA management, passwords (docs/auth.md). */
export function registerSignInRoutes(api: App, { auth }: { auth: AuthService }): void {
  // ---- sign-in
  api.post(
    '/auth/login/credentials',
    {
      schema: {
        operationId: 'loginWithCredentials',
        summary: 'Sign in with email and password',
        tags,
        description: 'Email and password. With MFA enabled the answer is `mfa_required` and an `mfa_token`.',
        body: CredentialsBody,
        response: { 200: LoginResponse },
      },
      config: publicAccess(),
    },
    async (req, reply) => {
      const answer = await auth.loginWithCredentials(req.body.email, req.body.password, requestMeta(req));
      return 'access_token' in answer ? deliverTokens(req, reply, answer) : answer;
    },
  );
  for (const [url, operationId, alias] of [
    ['/auth/login/mfa_verify', 'verifyMfaLogin', ''],
    ['/auth/login/mfa/verify_login', 'verifyMfaLoginAlias', ' (alias)'],
  ]) {
    api.post(
      url,
      {
        schema: {
          operationId,
          summary: `Finish an MFA sign-in with a TOTP code${alias}`,
          tags,
          description: 'Second step of an MFA sign-in: the `mfa_token` and a TOTP code.',
          body: MfaVerifyLoginBody,
          response: { 200: TokenResponse },
        },
        config: publicAccess(),
      },
      async (req, reply) =>
        deliverTokens(
          req,
          reply,
          await auth.verifyMfaLogin(req.body.mfa_token, req.body.code, requestMeta(req)),
        ),
    );
  }
  api.post(
    '/auth/login/external_idp',
    {
      schema: {
        operationId: 'loginWithExternalIdp',
        summary: "Sign in with an external identity provider's ID token",
        tags,
        description: 'Sign in with an OIDC ID token of the configured identity provider.',
        body: ExternalIdpBody,
        response: { 200: TokenResponse },
      },
      config: publicAccess(),
    },
    async (req, reply) =>
      deliverTokens(req, reply, await auth.loginWithExternalIdp(req.body.id_token, requestMeta(req))),
  );
  api.post(
    '/auth/refresh',
    {
      schema: {
        operationId: 'refreshTokens',
        summary: 'Exchange a refresh token for a new token pair',
        tags,
        description:
          'Rotates a refresh token. A used token presented again ends its whole session. Browser clients may ask for the refresh token as an HttpOnly cookie instead of in the body: `Svc-Refresh-Cookie: true` on sign-in and refresh (docs/console.md).',
        body: RefreshBody,
        response: { 200: TokenResponse },
      },
      config: publicAccess(),
    },
    async (req, reply) => {
      const token = presentedRefreshToken(req, req.body.refresh_token);
      return deliverTokens(req, reply, await auth.refresh(token, requestMeta(req)));
    },
  );
  api.post(
    '/auth/logout',
    {
      schema: {
        operationId: 'logout',
        summary: 'Sign out: revoke a refresh token',
        tags,
        description: 'Ends the current session and its refresh tokens.',
        response: { 200: Message },
      },
      config: authenticated(),
    },
    async (req, reply) => {
      clearRefreshCookie(req, reply);
      return auth.logout(req.principal);
    },
  );

  // ---- MFA
  api.post(
    '/auth/mfa/setup',
    {
      schema: {
        operationId: 'setUpMfa',
        summary: 'Start MFA set-up: a new TOTP secret and its otpauth URI',
        tags,
        response: { 200: MfaSetupResponse },
      },
      config: authenticated(),
    },
    async (req) => auth.mfaSetup(req.principal),
  );
  api.post(
    '/auth/mfa/verify',
    {
      schema: {
        operationId: 'verifyMfaSetup',
        summary: 'Check a TOTP code against the pending MFA secret',
        tags,
        body: MfaCodeBody,
        response: { 200: MfaVerifyResponse },
      },
      config: authenticated(),
    },
    async (req) => auth.mfaVerify(req.principal, req.body.code, requestMeta(req)),
  );
  api.patch(
    '/auth/mfa/enable',
    {
      schema: {
        operationId: 'enableMfa',
        summary: 'Enable or disable MFA',
        tags,
        body: MfaEnableBody,
        response: { 200: MfaEnableResponse },
      },
      config: authenticated(),
    },
    async (req) => auth.mfaEnable(req.principal, req.body, requestMeta(req)),
  );

  // ---- passwords
  api.post(
    '/auth/password_reset/request',
    {
      schema: {
        operationId: 'requestPasswordReset',
        summary: 'Ask for a password reset mail',
        tags,
        description: 'Mails a one-time reset token. The answer is the same whether or not the email exists.',
        body: ResetRequestBody,
        response: { 200: Message },
      },
      config: publicAccess(),
    },
    async (req) => auth.requestPasswordReset(req.body.email, requestMeta(req)),
  );
  api.post(
    '/auth/password_reset/confirm',
    {
      schema: {
        operationId: 'confirmPasswordReset',
        summary: 'Set a new password with a reset token',
        tags,
        body: ResetConfirmBody,
        response: { 200: Message },
      },
      config: publicAccess(),
    },
    async (req) => auth.confirmPasswordReset(req.body.token, req.body.new_password, requestMeta(req)),
  );
  api.post(
    '/user/change_password',
    {
      schema: {
        operationId: 'changePassword',
        summary: 'Change your own password',
        tags: ['users'],
        description: "Changes the caller's own password; every other session of the account ends.",
        body: ChangePasswordBody,
        response: { 200: Message },
      },
      config: authenticated(),
    },
    async (req) =>
      auth.changePassword(req.principal, req.body.current_password, req.body.new_password, requestMeta(req)),
  );
}
