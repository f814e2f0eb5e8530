import { randomBytes } from 'node:crypto';
import type { TestApp } from './app.js';

export interface TestPrincipal {
  userId: string;
  email: string;
  password: string;
  token: string;
  headers: { authorization: string };
}

const unique = () => randomBytes(5).toString('hex');

/** Signs in over HTTP and answers the bearer headers. */
export async function login(t: TestApp, email: string, password: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login/credentials',
    payload: { email, password },
  });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  return res.json().access_token;
}

/** A user holding the given built-in roles (by key), signed in. */
export async function userWithRoles(t: TestApp, roleKeys: string[]): Promise<TestPrincipal> {
  const email = `u-${unique()}@example.test`;
  const password = `pw-${unique()}-secret`;
  const user = await t.ctx.services.identity.createUser(null, { email, password, role_keys: roleKeys });
  const token = await login(t, email, password);
  return { userId: user.id, email, password, token, headers: { authorization: `Bearer ${token}` } };
}

/** A user whose only role is a fresh custom role holding exactly `scopes`, signed in. */
export async function principal(t: TestApp, scopes: string[]): Promise<TestPrincipal> {
  const identity = t.ctx.services.identity;
  const role = await identity.createRole('test', { key: `r_${unique()}`, name: 'test role' });
  if (scopes.length) await identity.replaceRoleScopes('test', role.id, scopes);
  const p = await userWithRoles(t, []);
  await identity.assignRole('test', { user_id: p.userId, role_id: role.id });
  return p;
}

/** A signed-in built-in admin (all 85 scopes). */
export const admin = (t: TestApp) => userWithRoles(t, ['admin']);

/** A signed-in responder (no scopes). */
export const responder = (t: TestApp) => userWithRoles(t, ['responder']);

export interface TestApiKey {
  userId: string;
  token: string;
  headers: { authorization: string };
}

/** An API key with `scopes`, created by a user holding exactly those scopes. */
export async function apiKey(t: TestApp, scopes: string[]): Promise<TestApiKey> {
  const creator = await principal(t, scopes);
  const identity = t.ctx.services.identity;
  const key = await identity.createApiKey(
    { userId: creator.userId, scopes: await identity.scopesOfUser(creator.userId), authPath: 'password' },
    { name: 'test key', scope_keys: scopes, expires_in: 86_400 },
  );
  return { userId: creator.userId, token: key.token, headers: { authorization: `Bearer ${key.token}` } };
}
