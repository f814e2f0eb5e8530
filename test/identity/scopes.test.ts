import { describe, expect, it } from 'vitest';
import { BUILTIN_ROLE_SCOPES, normaliseScopeKey, SCOPES } from '../../src/areas/identity/scopes.js';

describe('scope catalogue', () => {
  it('has 17 resources x 5 actions = 85 scopes, each with a name and description', () => {
    expect(SCOPES).toHaveLength(85);
    expect(new Set(SCOPES.map((s) => s.key)).size).toBe(85);
    for (const s of SCOPES) {
      expect(s.key).toMatch(/^[a-z_]+:(read|write|delete|manage|execute)$/);
      expect(s.name.length).toBeGreaterThan(0);
      expect(s.description.length).toBeGreaterThan(0);
    }
  });

  it('maps the built-in roles exactly as SPEC: admin 85, integration 84, provider 72, responder 0', () => {
    expect(BUILTIN_ROLE_SCOPES.admin.size).toBe(85);
    expect(BUILTIN_ROLE_SCOPES.integration.size).toBe(84);
    expect(BUILTIN_ROLE_SCOPES.integration.has('auth:manage')).toBe(false);
    expect(BUILTIN_ROLE_SCOPES.provider.size).toBe(72);
    for (const excluded of [
      'vault:read',
      'vault:execute',
      'webhook:manage',
      'workflow:write',
      'workflow:execute',
      'auth:manage',
    ]) {
      expect(BUILTIN_ROLE_SCOPES.provider.has(excluded)).toBe(false);
    }
    expect(BUILTIN_ROLE_SCOPES.provider.has('workflow:read')).toBe(true);
    expect(BUILTIN_ROLE_SCOPES.responder.size).toBe(0);
  });

  it('treats auth:api_key as auth:manage (SPEC Authentication 10)', () => {
    expect(normaliseScopeKey('auth:api_key')).toBe('auth:manage');
    expect(normaliseScopeKey('vault:read')).toBe('vault:read');
  });
});
