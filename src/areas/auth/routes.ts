import type { FastifyRequest } from 'fastify';
import { anyScope, authenticated, publicAccess } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope } from '../../http/list.js';
import { IdParams } from '../../http/schemas.js';
import {
  ChangePasswordBody,
  CredentialsBody,
  Device,
  DeviceConsentBody,
  DeviceList,
  DeviceListQuery,
  DeviceLoginBody,
  DeviceLoginResponse,
  DevicePatchBody,
  DeviceRegisterBody,
  DeviceRegistration,
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
  RefreshTokenList,
  RefreshTokenListQuery,
  RefreshTokenRecord,
  ResetConfirmBody,
  ResetRequestBody,
  TokenResponse,
  UserAuthSettings,
  UserAuthSettingsPatch,
} from './schemas.js';
import type { AuthService, RequestMeta } from './service.js';

const tags = ['auth'];
const deviceTags = ['devices'];

/** Where a request came from, recorded on sessions and refresh tokens. */
function meta(req: FastifyRequest): RequestMeta {
  const ua = req.headers['user-agent'];
  return { ip: req.ip ?? null, userAgent: typeof ua === 'string' ? ua.slice(0, 512) : null };
}

/** Sign-in flows (docs/auth.md). Sign-in endpoints are public; the rest say what they need. */
export function registerAuthRoutes(app: App, { auth }: { auth: AuthService }): void {
  // ---- sign-in
  app.post(
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
    async (req) => auth.loginWithCredentials(req.body.email, req.body.password, meta(req)),
  );
  for (const [url, operationId, alias] of [
    ['/auth/login/mfa_verify', 'verifyMfaLogin', ''],
    ['/auth/login/mfa/verify_login', 'verifyMfaLoginAlias', ' (alias)'],
  ]) {
    app.post(
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
      async (req) => auth.verifyMfaLogin(req.body.mfa_token, req.body.code, meta(req)),
    );
  }
  app.post(
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
    async (req) => auth.loginWithExternalIdp(req.body.id_token, meta(req)),
  );
  app.post(
    '/auth/refresh',
    {
      schema: {
        operationId: 'refreshTokens',
        summary: 'Exchange a refresh token for a new token pair',
        tags,
        description: 'Rotates a refresh token. A used token presented again ends its whole session.',
        body: RefreshBody,
        response: { 200: TokenResponse },
      },
      config: publicAccess(),
    },
    async (req) => auth.refresh(req.body.refresh_token, meta(req)),
  );
  app.post(
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
    async (req) => auth.logout(req.principal),
  );

  // ---- MFA
  app.post(
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
  app.post(
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
    async (req) => auth.mfaVerify(req.principal, req.body.code, meta(req)),
  );
  app.patch(
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
    async (req) => auth.mfaEnable(req.principal, req.body, meta(req)),
  );

  // ---- passwords
  app.post(
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
    async (req) => auth.requestPasswordReset(req.body.email, meta(req)),
  );
  app.post(
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
    async (req) => auth.confirmPasswordReset(req.body.token, req.body.new_password, meta(req)),
  );
  app.post(
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
      auth.changePassword(req.principal, req.body.current_password, req.body.new_password, meta(req)),
  );

  // ---- refresh token records
  app.get(
    '/refresh_token',
    {
      schema: {
        operationId: 'listRefreshTokens',
        summary: 'List your refresh tokens (sessions)',
        tags,
        querystring: RefreshTokenListQuery,
        response: { 200: RefreshTokenList },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'refresh_tokens',
        await auth.listRefreshTokens({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.get(
    '/refresh_token/:id',
    {
      schema: {
        operationId: 'getRefreshToken',
        summary: 'Get a refresh token record',
        tags,
        params: IdParams,
        response: { 200: RefreshTokenRecord },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getRefreshToken(req.params.id),
  );
  app.delete(
    '/refresh_token/:id',
    {
      schema: {
        operationId: 'revokeRefreshToken',
        summary: 'Revoke a refresh token',
        tags,
        description: 'Revokes the token and its whole family (the sign-in session), then soft-deletes it.',
        params: IdParams,
        response: { 200: RefreshTokenRecord },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.deleteRefreshToken(req.params.id),
  );

  // ---- per-user settings
  app.get(
    '/auth/user/:id/settings',
    {
      schema: {
        operationId: 'getUserAuthSettings',
        summary: "A user's sign-in settings",
        tags,
        params: IdParams,
        response: { 200: UserAuthSettings },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getUserSettings(req.params.id),
  );
  app.patch(
    '/auth/user/:id/settings',
    {
      schema: {
        operationId: 'updateUserAuthSettings',
        summary: "Change a user's sign-in settings",
        tags,
        description: 'Token lifetimes of the user, and whether the password must be reset before signing in.',
        params: IdParams,
        body: UserAuthSettingsPatch,
        response: { 200: UserAuthSettings },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.updateUserSettings(req.principal.userId, req.params.id, req.body),
  );

  // ---- devices
  app.post(
    '/auth/device/register',
    {
      schema: {
        operationId: 'registerDevice',
        summary: 'Start registering a device: a registration token',
        tags,
        body: DeviceRegisterBody,
        response: { 200: DeviceRegistration },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.registerDevice(req.principal.userId, req.body),
  );
  app.post(
    '/auth/device/login',
    {
      schema: {
        operationId: 'loginWithDevice',
        summary: 'Sign in as a registered device',
        tags,
        description: 'Exchanges a registration token (once) for tokens bound to the device.',
        body: DeviceLoginBody,
        response: { 200: DeviceLoginResponse },
      },
      config: publicAccess(),
    },
    async (req) => auth.deviceLogin(req.body.registration_token, meta(req)),
  );
  app.post(
    '/auth/device/consent',
    {
      schema: {
        operationId: 'consentToDevice',
        summary: 'Approve or refuse a device registration',
        tags,
        body: DeviceConsentBody,
        response: { 200: Device },
      },
      config: authenticated(),
    },
    async (req) => auth.recordConsent(req.principal, req.body),
  );
  app.delete(
    '/auth/device/:id',
    {
      schema: {
        operationId: 'revokeDevice',
        summary: 'Revoke a device',
        tags,
        description: "The device's own user removes it; its sessions end.",
        params: IdParams,
        response: { 200: Device },
      },
      config: authenticated(),
    },
    async (req) => auth.removeOwnDevice(req.principal, req.params.id),
  );
  app.get(
    '/device',
    {
      schema: {
        operationId: 'listDevices',
        summary: 'List devices',
        tags: deviceTags,
        querystring: DeviceListQuery,
        response: { 200: DeviceList },
      },
      config: anyScope('device:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      return envelope(
        'devices',
        await auth.listDevices({ limit, offset, sort_by, sort_dir }, filters),
        req.query,
      );
    },
  );
  app.get(
    '/device/:id',
    {
      schema: {
        operationId: 'getDevice',
        summary: 'Get a device',
        tags: deviceTags,
        params: IdParams,
        response: { 200: Device },
      },
      config: anyScope('device:read'),
    },
    async (req) => auth.getDevice(req.params.id),
  );
  app.patch(
    '/device/:id',
    {
      schema: {
        operationId: 'updateDevice',
        summary: 'Update a device',
        tags: deviceTags,
        params: IdParams,
        body: DevicePatchBody,
        response: { 200: Device },
      },
      config: anyScope('device:write'),
    },
    async (req) => auth.updateDevice(req.principal.userId, req.params.id, req.body),
  );
  app.delete(
    '/device/:id',
    {
      schema: {
        operationId: 'deleteDevice',
        summary: 'Delete a device (soft)',
        tags: deviceTags,
        params: IdParams,
        response: { 200: Device },
      },
      config: anyScope('device:delete'),
    },
    async (req) => auth.deleteDevice(req.principal.userId, req.params.id),
  );
}
