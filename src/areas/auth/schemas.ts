import { Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import { Id, Nullable, Timestamp } from '../../http/schemas.js';
import { MIN_PASSWORD_LENGTH } from '../../lib/email.js';

const Email = Type.String({ minLength: 1, maxLength: 320 });
/** Same rule as identity's user passwords. */
const NewPassword = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 });
/** One-time tokens are checked against their exact format in the service; the schema only bounds size. */
const OpaqueToken = Type.String({ minLength: 1, maxLength: 200 });
const TotpCode = Type.String({ minLength: 1, maxLength: 16, description: '6-digit TOTP code' });
const AUTH_PATHS = ['password', 'mfa', 'external_idp', 'device', 'api_key'] as const;
const AuthPath = Type.Union(AUTH_PATHS.map((p) => Type.Literal(p)));
/** Per-user and per-device lifetime overrides; null falls back to the next level. */
const Ttl = Nullable(Type.Integer({ minimum: 60, maximum: 31_536_000 }));

export const CredentialsBody = Type.Object(
  {
    email: Email,
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  {
    examples: [{ email: 'ada@example.com', password: 'correct horse battery staple' }],
    additionalProperties: false,
  },
);

/** The token response (docs/auth.md "Token response"). */
export const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('bearer'),
    expires_in: Type.Integer({ description: 'access token lifetime, seconds' }),
    refresh_token: Type.Optional(
      Type.String({
        description:
          'always present, unless the request asked for cookie delivery (`Svc-Refresh-Cookie: true`, docs/console.md)',
      }),
    ),
    refresh_expires_at: Timestamp,
    refresh_expires_in: Type.Integer({ description: 'refresh token lifetime, seconds' }),
  },
  { $id: 'TokenResponse' },
);

export const MfaRequired = Type.Object({
  mfa_required: Type.Literal(true),
  mfa_token: Type.String(),
  expires_in: Type.Integer({ description: 'seconds the mfa_token stays valid' }),
});

export const LoginResponse = Type.Union([TokenResponse, MfaRequired], { $id: 'LoginResponse' });

export const MfaVerifyLoginBody = Type.Object(
  { mfa_token: OpaqueToken, code: TotpCode },
  { examples: [{ mfa_token: 'mfa_2bT9x0Qe7Lr4Vn1Kc8Zs5Wd3', code: '492039' }], additionalProperties: false },
);

export const RefreshBody = Type.Object(
  {
    refresh_token: Type.Optional({
      ...OpaqueToken,
      description: 'required, unless the request asks for cookie delivery and carries the svc_refresh cookie',
    }),
  },
  { examples: [{ refresh_token: 'rt_5Yb0nP2qXv8Lm3Rk9Tc1Hs7Wd4Fg6Aj' }], additionalProperties: false },
);

export const ExternalIdpBody = Type.Object(
  { id_token: Type.String({ minLength: 1, maxLength: 16_384 }) },
  {
    examples: [{ id_token: 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl' }],
    additionalProperties: false,
  },
);

export const MfaSetupResponse = Type.Object({
  secret: Type.String({ description: 'base32 TOTP secret (shown once)' }),
  otpauth_url: Type.String(),
});
export const MfaCodeBody = Type.Object(
  { code: TotpCode },
  { examples: [{ code: '492039' }], additionalProperties: false },
);
export const MfaVerifyResponse = Type.Object({ verified: Type.Literal(true) });
export const MfaEnableBody = Type.Object(
  { enabled: Type.Boolean(), code: Type.Optional(TotpCode) },
  { examples: [{ enabled: true, code: '492039' }], additionalProperties: false },
);
export const MfaEnableResponse = Type.Object({ mfa_enabled: Type.Boolean() });

export const ResetRequestBody = Type.Object(
  { email: Email },
  { examples: [{ email: 'ada@example.com' }], additionalProperties: false },
);
export const ResetConfirmBody = Type.Object(
  { token: OpaqueToken, new_password: NewPassword },
  {
    examples: [{ token: 'prt_8Qm2Zx5Kc1Vb7Nn4Lr0Ts3Wd9', new_password: 'a new and longer passphrase' }],
    additionalProperties: false,
  },
);
export const ChangePasswordBody = Type.Object(
  { current_password: Type.String({ minLength: 1, maxLength: 1024 }), new_password: NewPassword },
  {
    examples: [
      { current_password: 'correct horse battery staple', new_password: 'a new and longer passphrase' },
    ],
    additionalProperties: false,
  },
);
export const Message = Type.Object({ message: Type.String() });

// ---- refresh token records
export const RefreshTokenRecord = Type.Object(
  {
    id: Type.String(),
    user_id: Type.String(),
    session_id: Type.String({ description: 'the sign-in session: the rotation family' }),
    parent_id: Nullable(Type.String()),
    device_id: Nullable(Type.String()),
    auth_path: AuthPath,
    expires_at: Timestamp,
    ip_address: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    created_at: Timestamp,
    used_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
    revoked_reason: Nullable(Type.String()),
    deleted_at: Nullable(Timestamp),
  },
  { $id: 'RefreshTokenRecord' },
);
export const RefreshTokenListQuery = ListQuery(['created_at', 'expires_at', 'used_at', 'revoked_at'], {
  user_id: Type.Optional(Id),
  device_id: Type.Optional(Id),
  session_id: Type.Optional(Id),
  auth_path: Type.Optional(AuthPath),
  active: Type.Optional(QueryBoolean),
});
export const RefreshTokenList = ListResponse('refresh_tokens', RefreshTokenRecord);

// ---- devices
export const Device = Type.Object(
  {
    id: Type.String(),
    user_id: Type.String(),
    name: Type.String(),
    status: Type.Union([Type.Literal('PENDING'), Type.Literal('REGISTERED')]),
    registration_expires_at: Timestamp,
    registered_at: Nullable(Timestamp),
    registered_by: Nullable(Type.String()),
    consent_given: Type.Boolean(),
    consent_at: Nullable(Timestamp),
    last_login_at: Nullable(Timestamp),
    access_token_ttl_seconds: Ttl,
    refresh_token_ttl_seconds: Ttl,
    created_at: Timestamp,
    updated_at: Timestamp,
    updated_by: Nullable(Type.String()),
    deleted_at: Nullable(Timestamp),
  },
  { $id: 'Device' },
);
export const DeviceRegisterBody = Type.Object(
  {
    user_id: Id,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    access_token_ttl_seconds: Type.Optional(Ttl),
    refresh_token_ttl_seconds: Type.Optional(Ttl),
  },
  {
    examples: [
      {
        user_id: '019a6f3e-8c1d-7b2a-9f4e-2d5c8b7a1e03',
        name: 'Ward tablet 3',
        refresh_token_ttl_seconds: 2592000,
      },
    ],
    additionalProperties: false,
  },
);
export const DeviceRegistration = Type.Object(
  {
    device_id: Type.String(),
    registration_token: Type.String({ description: 'one-time; exchange with POST /auth/device/login' }),
    expires_at: Timestamp,
  },
  { $id: 'DeviceRegistration' },
);
export const DeviceLoginBody = Type.Object(
  { registration_token: OpaqueToken },
  { examples: [{ registration_token: 'drt_3Jk8Lp1Mn6Qr0St5Uv2Wx9Yz4' }], additionalProperties: false },
);
export const DeviceLoginResponse = Type.Object({
  ...TokenResponse.properties,
  // Devices are not browsers: their refresh token is always in the body.
  refresh_token: Type.String(),
  device_id: Type.String(),
});
export const DeviceConsentBody = Type.Object(
  { device_id: Type.Optional(Id), consent_given: Type.Boolean() },
  {
    examples: [{ device_id: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58', consent_given: true }],
    additionalProperties: false,
  },
);
export const DevicePatchBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    access_token_ttl_seconds: Type.Optional(Ttl),
    refresh_token_ttl_seconds: Type.Optional(Ttl),
  },
  { examples: [{ name: 'Ward tablet 3 (night shift)' }], additionalProperties: false, minProperties: 1 },
);
export const DeviceListQuery = ListQuery(['created_at', 'updated_at', 'name', 'last_login_at'], {
  user_id: Type.Optional(Id),
  search: Type.Optional(Search('the name')),
});
export const DeviceList = ListResponse('devices', Device);

// ---- per-user settings
export const UserAuthSettings = Type.Object(
  {
    user_id: Type.String(),
    mfa_enabled: Type.Boolean(),
    password_reset_required: Type.Boolean(),
    access_token_ttl_seconds: Ttl,
    refresh_token_ttl_seconds: Ttl,
  },
  { $id: 'UserAuthSettings' },
);
export const UserAuthSettingsPatch = Type.Object(
  {
    access_token_ttl_seconds: Type.Optional(Ttl),
    refresh_token_ttl_seconds: Type.Optional(Ttl),
    password_reset_required: Type.Optional(Type.Boolean()),
  },
  {
    examples: [{ refresh_token_ttl_seconds: 86400, password_reset_required: false }],
    additionalProperties: false,
    minProperties: 1,
  },
);
