import { Type } from '@sinclair/typebox';
import { AuditFields, Description, Id, Nullable, patchBody, Timestamp } from '../../http/schemas.js';
import { MIN_PASSWORD_LENGTH } from '../../lib/email.js';

export const Email = Type.String({ format: 'email', maxLength: 320 });
export const Password = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 });
export const RoleKey = Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$' });
export const ScopeKey = Type.String({ minLength: 3, maxLength: 100 });

export const User = Type.Object(
  {
    id: Id,
    email: Type.String(),
    name: Nullable(Type.String()),
    mfa_enabled: Type.Boolean(),
    ...AuditFields,
  },
  { $id: 'User' },
);

export const Role = Type.Object(
  {
    id: Id,
    key: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    is_builtin: Type.Boolean(),
    ...AuditFields,
  },
  { $id: 'Role' },
);

export const UserRole = Type.Object(
  { id: Id, user_id: Id, role_id: Id, ...AuditFields },
  { $id: 'UserRole' },
);

export const RoleScopeEntry = Type.Object(
  { id: Id, role_id: Id, scope_key: Type.String(), ...AuditFields },
  { $id: 'RoleScopeEntry' },
);

export const Scope = Type.Object(
  { key: Type.String(), name: Type.String(), description: Type.String() },
  { $id: 'Scope' },
);

export const CurrentUser = Type.Object(
  {
    ...User.properties,
    roles: Type.Array(Role),
    scopes: Type.Array(Type.String()),
    auth_path: Type.String(),
  },
  { $id: 'CurrentUser' },
);

export const CreateUserBody = Type.Object(
  {
    email: Email,
    password: Password,
    name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    role_keys: Type.Optional(Type.Array(RoleKey, { maxItems: 50 })),
  },
  {
    examples: [
      {
        email: 'ada@example.com',
        password: 'correct horse battery staple',
        name: 'Ada Lovelace',
        role_keys: ['admin'],
      },
    ],
    additionalProperties: false,
  },
);

export const UpdateUserBody = patchBody(CreateUserBody, [{ name: 'Ada King' }], ['role_keys']);

export const CreateRoleBody = Type.Object(
  {
    key: RoleKey,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Description,
  },
  {
    examples: [{ key: 'auditor', name: 'Auditor', description: 'Reads everything, changes nothing' }],
    additionalProperties: false,
  },
);

export const UpdateRoleBody = patchBody(
  CreateRoleBody,
  [{ description: 'Reads everything except the vault' }],
  ['key'],
);

export const CreateUserRoleBody = Type.Object(
  { user_id: Id, role_id: Id },
  {
    examples: [
      { user_id: '019a6f3e-8c1d-7b2a-9f4e-2d5c8b7a1e03', role_id: '019a6f3e-9a44-7c10-8e21-5b0d3f6c2a17' },
    ],
    additionalProperties: false,
  },
);
export const CreateRoleScopeBody = Type.Object(
  { role_id: Id, scope_key: ScopeKey },
  {
    examples: [{ role_id: '019a6f3e-9a44-7c10-8e21-5b0d3f6c2a17', scope_key: 'user:read' }],
    additionalProperties: false,
  },
);
export const PutRoleScopesBody = Type.Object(
  { scope_keys: Type.Array(ScopeKey, { maxItems: 200 }) },
  { examples: [{ scope_keys: ['user:read', 'role:read', 'workflow:read'] }], additionalProperties: false },
);
export const RoleScopeDiff = Type.Object({
  role_id: Id,
  scope_keys: Type.Array(Type.String()),
  added: Type.Array(Type.String()),
  removed: Type.Array(Type.String()),
  unchanged: Type.Array(Type.String()),
});
export const PersistedRoleScopes = Type.Object({ role_id: Id, scope_keys: Type.Array(Type.String()) });

export const ApiKey = Type.Object(
  {
    id: Id,
    user_id: Id,
    name: Type.String(),
    description: Nullable(Type.String()),
    token_hint: Type.String(),
    scope_keys: Type.Array(Type.String()),
    expires_at: Timestamp,
    is_revoked: Type.Boolean(),
    revoked_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    created_at: Timestamp,
  },
  { $id: 'ApiKey' },
);
export const CreatedApiKey = Type.Object(
  { ...ApiKey.properties, token: Type.String() },
  { $id: 'CreatedApiKey' },
);
/**
 * API key lifetime bounds, seconds. The minimum is the specification's limit (docs/identity.md "API keys"); the maximum (100 years of 365 days)
 * keeps `expires_at` a 4-digit-year ISO timestamp, which text comparison and `toISOString` need.
 */
export const API_KEY_LIFETIME_SECONDS = { min: 3600, max: 100 * 365 * 86_400 } as const;
export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Description,
    scope_keys: Type.Array(ScopeKey, { maxItems: 200 }),
    expires_in: Type.Integer({
      minimum: API_KEY_LIFETIME_SECONDS.min,
      maximum: API_KEY_LIFETIME_SECONDS.max,
      description: 'Lifetime in seconds: at least 3600, at most 3153600000 (100 years).',
    }),
  },
  {
    examples: [
      {
        name: 'ci deploys',
        description: 'Used by the deploy pipeline',
        scope_keys: ['event_subscription:read', 'workflow:read'],
        expires_in: 7776000,
      },
    ],
    additionalProperties: false,
  },
);
