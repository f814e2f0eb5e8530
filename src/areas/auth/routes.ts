import type { FastifyRequest } from 'fastify';
import type { App } from '../../app/types.js';
import { anyScope, authenticated, publicAccess } from '../../http/access.js';
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
export function authRoutes(app: App, auth: AuthService): void {
  // ---- sign-in
  app.post(
    '/auth/login/credentials',
    {
      schema: {
        tags,
        description: 'Email and password. With MFA enabled the answer is `mfa_required` and an `mfa_token`.',
        body: CredentialsBody,
        response: { 200: LoginResponse },
      },
      config: publicAccess(),
    },
    async (req) => auth.loginWithCredentials(req.body.email, req.body.password, meta(req)),
  );
  for (const url of ['/auth/login/mfa_verify', '/auth/login/mfa/verify_login']) {
    app.post(
      url,
      {
        schema: {
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
    { schema: { tags, response: { 200: MfaSetupResponse } }, config: authenticated() },
    async (req) => auth.mfaSetup(req.principal),
  );
  app.post(
    '/auth/mfa/verify',
    { schema: { tags, body: MfaCodeBody, response: { 200: MfaVerifyResponse } }, config: authenticated() },
    async (req) => auth.mfaVerify(req.principal, req.body.code, meta(req)),
  );
  app.patch(
    '/auth/mfa/enable',
    { schema: { tags, body: MfaEnableBody, response: { 200: MfaEnableResponse } }, config: authenticated() },
    async (req) => auth.mfaEnable(req.principal, req.body, meta(req)),
  );

  // ---- passwords
  app.post(
    '/auth/password_reset/request',
    {
      schema: {
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
    { schema: { tags, body: ResetConfirmBody, response: { 200: Message } }, config: publicAccess() },
    async (req) => auth.confirmPasswordReset(req.body.token, req.body.new_password, meta(req)),
  );
  app.post(
    '/user/change_password',
    {
      schema: {
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
      schema: { tags, querystring: RefreshTokenListQuery, response: { 200: RefreshTokenList } },
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
      schema: { tags, params: IdParams, response: { 200: RefreshTokenRecord } },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getRefreshToken(req.params.id),
  );
  app.delete(
    '/refresh_token/:id',
    {
      schema: {
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
      schema: { tags, params: IdParams, response: { 200: UserAuthSettings } },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getUserSettings(req.params.id),
  );
  app.patch(
    '/auth/user/:id/settings',
    {
      schema: {
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
      schema: { tags, body: DeviceRegisterBody, response: { 200: DeviceRegistration } },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.registerDevice(req.principal.userId, req.body),
  );
  app.post(
    '/auth/device/login',
    {
      schema: {
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
    { schema: { tags, body: DeviceConsentBody, response: { 200: Device } }, config: authenticated() },
    async (req) => auth.recordConsent(req.principal, req.body),
  );
  app.delete(
    '/auth/device/:id',
    {
      schema: {
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
      schema: { tags: deviceTags, querystring: DeviceListQuery, response: { 200: DeviceList } },
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
      schema: { tags: deviceTags, params: IdParams, response: { 200: Device } },
      config: anyScope('device:read'),
    },
    async (req) => auth.getDevice(req.params.id),
  );
  app.patch(
    '/device/:id',
    {
      schema: { tags: deviceTags, params: IdParams, body: DevicePatchBody, response: { 200: Device } },
      config: anyScope('device:write'),
    },
    async (req) => auth.updateDevice(req.principal.userId, req.params.id, req.body),
  );
  app.delete(
    '/device/:id',
    {
      schema: { tags: deviceTags, params: IdParams, response: { 200: Device } },
      config: anyScope('device:delete'),
    },
    async (req) => auth.deleteDevice(req.principal.userId, req.params.id),
  );
}
