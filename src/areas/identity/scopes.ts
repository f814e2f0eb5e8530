/**
 * The scope catalogue (docs/identity.md "Scopes"): 17 resources x 5 actions = 85 keys, and the built-in role
 * mappings (docs/identity.md "Roles"). Built-in mappings are fixed; persisted role-scope assignments only add.
 */
import type { Static } from '@sinclair/typebox';
import type { Scope as ScopeSchema } from './schemas.js';
export const ACTIONS = ['read', 'write', 'delete', 'manage', 'execute'] as const;

export const RESOURCES: ReadonlyArray<{ key: string; covers: string; placeholder?: boolean }> = [
  { key: 'user', covers: 'users, roles, role assignments' },
  { key: 'questionnaire', covers: 'questionnaires, revisions, snapshots' },
  { key: 'folder', covers: 'folders, folder tree' },
  { key: 'permission', covers: 'folder and questionnaire permissions' },
  { key: 'questionnaire_submission', covers: 'submissions' },
  { key: 'enrollment', covers: 'enrollments' },
  { key: 'device', covers: 'devices' },
  { key: 'event_subscription', covers: 'event subscriptions' },
  { key: 'workflow', covers: 'workflow runs and graphs' },
  { key: 'plugin', covers: 'plugin definitions and instances' },
  { key: 'vault', covers: 'vault entries' },
  { key: 'webhook', covers: 'webhooks and deliveries' },
  { key: 'analytics', covers: 'analytics data' },
  { key: 'config', covers: 'configuration' },
  { key: 'auth', covers: 'MFA, device registration, API keys, refresh tokens' },
  { key: 'questionnaire_builder', covers: 'frontend placeholder', placeholder: true },
  { key: 'ai', covers: 'frontend placeholder', placeholder: true },
];

/** Scopes some endpoint enforces (docs/identity.md "Scopes"); the rest are reserved. */
const ENFORCED = new Set([
  'user:read',
  'user:write',
  'user:delete',
  'questionnaire:read',
  'questionnaire:write',
  'questionnaire:delete',
  'questionnaire:manage',
  'folder:read',
  'folder:write',
  'folder:delete',
  'permission:read',
  'permission:write',
  'permission:delete',
  'questionnaire_submission:read',
  'enrollment:read',
  'enrollment:write',
  'enrollment:delete',
  'device:read',
  'device:write',
  'device:delete',
  'event_subscription:read',
  'event_subscription:write',
  'event_subscription:delete',
  'workflow:read',
  'workflow:write',
  'workflow:delete',
  'workflow:execute',
  'plugin:read',
  'plugin:write',
  'plugin:delete',
  'vault:read',
  'vault:write',
  'vault:delete',
  'webhook:read',
  'webhook:write',
  'webhook:delete',
  'analytics:read',
  'config:read',
  'auth:manage',
]);

export type Scope = Static<typeof ScopeSchema>;

const ACTION_VERB: Record<(typeof ACTIONS)[number], string> = {
  read: 'Read',
  write: 'Create and change',
  delete: 'Delete',
  manage: 'Manage',
  execute: 'Execute',
};

function title(s: string): string {
  return s.replace(/_/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}

export const SCOPES: readonly Scope[] = RESOURCES.flatMap((r) =>
  ACTIONS.map((action) => {
    const key = `${r.key}:${action}`;
    const status = r.placeholder
      ? 'Frontend placeholder.'
      : ENFORCED.has(key)
        ? ''
        : 'Reserved: no endpoint enforces it yet.';
    return {
      key,
      name: `${title(r.key)} ${action}`,
      description: `${ACTION_VERB[action]} ${r.covers}.${status ? ` ${status}` : ''}`,
    };
  }),
);

export const SCOPE_KEYS: ReadonlySet<string> = new Set(SCOPES.map((s) => s.key));

/**
 * docs/identity.md "API keys": the API-key guide names `auth:api_key`, the catalogue `auth:manage`.
 * They are one permission: every scope key a caller sends is normalised through this table.
 */
export const SCOPE_ALIASES: Readonly<Record<string, string>> = { 'auth:api_key': 'auth:manage' };

export function normaliseScopeKey(key: string): string {
  // Own keys only: `toString` or `constructor` from a query string must stay a (unknown) scope key.
  return Object.hasOwn(SCOPE_ALIASES, key) ? SCOPE_ALIASES[key] : key;
}

const PROVIDER_EXCLUDED = new Set([
  ...ACTIONS.map((a) => `vault:${a}`),
  ...ACTIONS.map((a) => `webhook:${a}`),
  'workflow:write',
  'workflow:execute',
  'auth:manage',
]);

/** The fixed scope sets of the built-in roles (admin 85, integration 84, provider 72, responder 0). */
export const BUILTIN_ROLE_SCOPES: Readonly<Record<string, ReadonlySet<string>>> = {
  admin: new Set(SCOPE_KEYS),
  integration: new Set([...SCOPE_KEYS].filter((k) => k !== 'auth:manage')),
  provider: new Set([...SCOPE_KEYS].filter((k) => !PROVIDER_EXCLUDED.has(k))),
  responder: new Set(),
};

export const BUILTIN_ROLES = [
  { key: 'admin', name: 'Administrator', description: 'Every scope.' },
  { key: 'integration', name: 'Integration', description: 'Every scope except auth:manage.' },
  {
    key: 'provider',
    name: 'Provider',
    description:
      'Every scope except the vault and webhook scopes, workflow:write, workflow:execute and auth:manage.',
  },
  { key: 'responder', name: 'Responder', description: 'No scopes; responders use the open endpoints.' },
] as const;
