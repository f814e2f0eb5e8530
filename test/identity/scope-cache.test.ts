import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, principal, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * Interleaving two requests deterministically: the real identity store modules, with a pause inserted after
 * chosen queries have run (their result is held until the test releases it), and a count of the
 * queries that reload the role-scope entries.
 */
const hooks = vi.hoisted(() => ({
  holdRolesOf: undefined as string | undefined,
  holdCredentialsOf: undefined as string | undefined,
  entryLoads: 0,
  held: [] as Array<() => void>,
}));
function hold(): Promise<void> {
  return new Promise((resolve) => hooks.held.push(resolve));
}
function releaseAll() {
  for (const resolve of hooks.held.splice(0)) resolve();
}
async function untilHeld() {
  await vi.waitFor(() => expect(hooks.held).toHaveLength(1));
}

vi.mock('../../src/areas/identity/role-store.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/areas/identity/role-store.js')>();
  return {
    ...original,
    async rolesOfUser(...args: Parameters<typeof original.rolesOfUser>) {
      const roles = await original.rolesOfUser(...args);
      if (hooks.holdRolesOf === args[1]) {
        hooks.holdRolesOf = undefined;
        await hold();
      }
      return roles;
    },
    async allActiveScopeEntries(...args: Parameters<typeof original.allActiveScopeEntries>) {
      hooks.entryLoads++;
      return original.allActiveScopeEntries(...args);
    },
  };
});

vi.mock('../../src/areas/identity/credential-checks.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/areas/identity/credential-checks.js')>();
  return {
    ...original,
    createCredentialChecks(store: Parameters<typeof original.createCredentialChecks>[0]) {
      const checks = original.createCredentialChecks(store);
      return {
        ...checks,
        async userCredentialStates(keys: string[]) {
          const rows = await checks.userCredentialStates(keys);
          if (keys.some((key) => key.startsWith(`${hooks.holdCredentialsOf} `))) {
            hooks.holdCredentialsOf = undefined;
            await hold();
          }
          return rows;
        },
      };
    },
  };
});

describe(`scope cache under concurrent requests (${dialectName})`, () => {
  let t: TestApp;
  let root: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp();
    root = await admin(t);
  });
  afterAll(() => t.close());

  const get = (url: string, headers: Record<string, string>) =>
    t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });
  const scopesOf = async (p: TestPrincipal) => (await get('/current_user', p.headers)).json().scopes;

  it('roles read before a bump are not cached under the newer version', async () => {
    const p = await principal(t, ['vault:read']);
    const assignment = (await get(`/user_role?user_id=${p.userId}`, root.headers)).json().user_roles[0];
    // Request A reads the user's roles (still holding the role) and pauses before using them.
    hooks.holdRolesOf = p.userId;
    const a = get('/vault_entry', p.headers);
    await untilHeld();
    // Meanwhile the role is removed (version bump) and another request moves the cache to the new version.
    await t.ctx.services.identity.unassignRole('test', assignment.id);
    expect((await get('/user', root.headers)).statusCode).toBe(200);
    releaseAll();
    expect((await a).statusCode).toBe(200); // authenticated before the change: allowed
    // A must not have left its stale scopes in the cache: the removed role no longer works.
    expect(await scopesOf(p)).toEqual([]);
    expect((await get('/vault_entry', p.headers)).statusCode).toBe(403);
  });

  it('a request authenticated at an older version never sets the cache back', async () => {
    const p = await principal(t, ['vault:read']);
    expect(await scopesOf(p)).toEqual(['vault:read']);
    // The other requests come with an API key: access-token lookups made while A's is held would
    // queue behind it (concurrent lookups of one kind share round trips, one batch at a time).
    const other = await apiKey(t, ['user:read']);
    // Request A reads its credentials and the authz version, then pauses.
    hooks.holdCredentialsOf = p.userId;
    const a = get('/current_user', p.headers);
    await untilHeld();
    await t.ctx.services.identity.createRole('test', { key: 'bump_only', name: 'bump' });
    expect((await get('/user', other.headers)).statusCode).toBe(200); // cache now at the newer version
    const loads = hooks.entryLoads;
    releaseAll();
    expect((await a).json().scopes).toEqual(['vault:read']);
    expect((await get('/user', other.headers)).statusCode).toBe(200);
    expect(await scopesOf(p)).toEqual(['vault:read']);
    // Neither the late request nor the ones after it had to reload: the cache stayed at the newer version.
    expect(hooks.entryLoads).toBe(loads);
  });
});
