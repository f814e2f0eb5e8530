import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal, type TestPrincipal, userWithRoles } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

describe(`API keys (${dialectName})`, () => {
  let t: TestApp;
  let root: TestPrincipal;
  const clock = manualClock(new Date());
  beforeAll(async () => {
    t = await startTestApp({ clock });
    root = await admin(t);
  });
  afterAll(() => t.close());

  const call = (
    method: string,
    url: string,
    payload?: unknown,
    headers: Record<string, string> = root.headers,
  ) => t.app.inject({ method: method as 'GET', url: `/api/v1${url}`, payload: payload as object, headers });

  /** A creator holding `auth:manage` plus `extra`, through a custom role we can change later. */
  async function creator(extra: string[]) {
    const p = await principal(t, ['auth:manage', ...extra]);
    const roleId = (await call('GET', `/user_role?user_id=${p.userId}`)).json().user_roles[0].role_id;
    return { ...p, roleId };
  }

  it('creates a key: svc_key_ + 43 base62, shown once, hint = last 4, only the hash stored', async () => {
    const c = await creator(['vault:read']);
    const res = await call(
      'POST',
      '/api_key',
      { name: 'ci', scope_keys: ['vault:read'], expires_in: 3600 },
      c.headers,
    );
    expect(res.statusCode).toBe(200);
    const key = res.json();
    expect(key.token).toMatch(/^svc_key_[0-9A-Za-z]{43}$/);
    expect(key.token_hint).toBe(key.token.slice(-4));
    expect(key).toMatchObject({
      name: 'ci',
      scope_keys: ['vault:read'],
      is_revoked: false,
      revoked_at: null,
      user_id: c.userId,
    });
    const row = await t.ctx.store.db
      .selectFrom('api_key')
      .selectAll()
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(key.token);
    const got = await call('GET', `/api_key/${key.id}`, undefined, c.headers);
    expect(got.json()).not.toHaveProperty('token');
    expect(got.json()).not.toHaveProperty('token_hash');
    const listed = (await call('GET', '/api_key', undefined, c.headers)).json();
    expect(listed.api_keys).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(key.token);
  });

  it('authenticates by Bearer and by X-API-KEY, attributing actions to the creator', async () => {
    const c = await creator(['user:read']);
    const key = (
      await call('POST', '/api_key', { name: 'k', scope_keys: ['user:read'], expires_in: 7200 }, c.headers)
    ).json();
    const viaBearer = await call('GET', '/current_user', undefined, { authorization: `Bearer ${key.token}` });
    expect(viaBearer.statusCode).toBe(200);
    expect(viaBearer.json()).toMatchObject({ id: c.userId, scopes: ['user:read'], auth_path: 'api_key' });
    const viaHeader = await call('GET', '/user', undefined, { 'x-api-key': key.token });
    expect(viaHeader.statusCode).toBe(200);
    // Attribution: a write made with the key is recorded as the creator's.
    const c2 = await creator(['user:write']);
    const k2 = (
      await call('POST', '/api_key', { name: 'w', scope_keys: ['user:write'], expires_in: 7200 }, c2.headers)
    ).json();
    const made = await call('POST', '/role', { key: 'via_key', name: 'Via key' }, { 'x-api-key': k2.token });
    expect(made.json().updated_by).toBe(c2.userId);
  });

  it('refuses scopes beyond the creator (SCOPE_EXCEEDS_CREATOR) and lifetimes under 3600 s', async () => {
    const c = await creator(['vault:read']);
    const over = await call(
      'POST',
      '/api_key',
      { name: 'x', scope_keys: ['vault:read', 'vault:write'], expires_in: 3600 },
      c.headers,
    );
    expect(over.statusCode).toBe(403);
    expect(over.json()).toMatchObject({
      code: 'API_KEY.SCOPE_EXCEEDS_CREATOR',
      details: { scopes: ['vault:write'] },
    });
    const short = await call(
      'POST',
      '/api_key',
      { name: 'x', scope_keys: ['vault:read'], expires_in: 3599 },
      c.headers,
    );
    expect(short.statusCode).toBe(400);
    expect(short.json().code).toBe('VALIDATION_ERROR');
  });

  it('a key creating a key is capped at its own scopes, not its creator’s', async () => {
    const c = await creator(['vault:read', 'vault:write']);
    const narrow = (
      await call(
        'POST',
        '/api_key',
        { name: 'narrow', scope_keys: ['auth:manage', 'vault:read'], expires_in: 3600 },
        c.headers,
      )
    ).json();
    const viaKey = { 'x-api-key': narrow.token };
    const stronger = await call(
      'POST',
      '/api_key',
      { name: 'stronger', scope_keys: ['vault:read', 'vault:write'], expires_in: 3600 },
      viaKey,
    );
    expect(stronger.statusCode).toBe(403);
    expect(stronger.json()).toMatchObject({
      code: 'API_KEY.SCOPE_EXCEEDS_CREATOR',
      details: { scopes: ['vault:write'] },
    });
    const same = await call(
      'POST',
      '/api_key',
      { name: 'same', scope_keys: ['vault:read'], expires_in: 3600 },
      viaKey,
    );
    expect(same.statusCode).toBe(200);
    expect(same.json()).toMatchObject({ user_id: c.userId, scope_keys: ['vault:read'] });
  });

  it('bounds expires_in at 100 years (400 before any scope check); the longest key still works', async () => {
    const c = await creator(['vault:read']);
    for (const expires_in of [1e300, 3e11, 100 * 365 * 86_400 + 1]) {
      for (const scope_keys of [['vault:read'], ['vault:write']]) {
        const res = await call('POST', '/api_key', { name: 'long', scope_keys, expires_in }, c.headers);
        expect(res.statusCode, `${expires_in} ${scope_keys}`).toBe(400);
        expect(res.json().code).toBe('VALIDATION_ERROR');
      }
    }
    // The CLI calls the service directly: it applies the same bound.
    const identity = t.ctx.services.identity;
    const viaService = identity.createApiKey(
      { userId: c.userId, scopes: await identity.scopesOfUser(c.userId), authPath: 'password' },
      { name: 'long', scope_keys: ['vault:write'], expires_in: 3e11 },
    );
    await expect(viaService).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });

    const longest = await call(
      'POST',
      '/api_key',
      { name: 'longest', scope_keys: ['vault:read'], expires_in: 100 * 365 * 86_400 },
      c.headers,
    );
    expect(longest.statusCode).toBe(200);
    expect(longest.json().expires_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const used = await call('GET', '/current_user', undefined, { 'x-api-key': longest.json().token });
    expect(used.statusCode).toBe(200);
  });

  it('the built-in integration role cannot manage keys until an admin grants auth:api_key to it', async () => {
    const integration = await userWithRoles(t, ['integration']);
    const body = { name: 'int', scope_keys: ['vault:read'], expires_in: 3600 };
    const refused = await call('POST', '/api_key', body, integration.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({
      code: 'AUTH.FORBIDDEN',
      details: { required_scopes: ['auth:manage'] },
    });
    const role = (await call('GET', '/role?key=integration')).json().roles[0];
    expect(role.key).toBe('integration');
    const grant = await call('POST', '/role_scope_entry', { role_id: role.id, scope_key: 'auth:api_key' });
    expect(grant.statusCode).toBe(200);
    expect((await call('POST', '/api_key', body, integration.headers)).statusCode).toBe(200);
    await call('DELETE', `/role_scope_entry/${grant.json().id}`);
  });

  it('treats auth:api_key as auth:manage when creating keys', async () => {
    const c = await creator([]);
    const res = await call(
      'POST',
      '/api_key',
      { name: 'alias', scope_keys: ['auth:api_key'], expires_in: 3600 },
      c.headers,
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().scope_keys).toEqual(['auth:manage']);
  });

  it('revoked keys are rejected at once; expired keys are rejected without any write', async () => {
    const c = await creator(['user:read']);
    const key = (
      await call('POST', '/api_key', { name: 'r', scope_keys: ['user:read'], expires_in: 3600 }, c.headers)
    ).json();
    const auth = { authorization: `Bearer ${key.token}` };
    expect((await call('GET', '/user', undefined, auth)).statusCode).toBe(200);
    const revoked = await call('DELETE', `/api_key/${key.id}`, undefined, c.headers);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toMatchObject({ is_revoked: true, revoked_at: expect.any(String) });
    const after = await call('GET', '/user', undefined, auth);
    expect(after.statusCode).toBe(401);
    expect(after.json().code).toBe('API_KEY.REVOKED');
    expect(
      (await call('GET', '/api_key?is_revoked=true', undefined, c.headers)).json().api_keys,
    ).toHaveLength(1);
    expect(
      (await call('GET', '/api_key?is_revoked=false', undefined, c.headers)).json().api_keys,
    ).toHaveLength(0);

    const k2 = (
      await call('POST', '/api_key', { name: 'e', scope_keys: ['user:read'], expires_in: 3600 }, c.headers)
    ).json();
    clock.advance(3600 * 1000 + 1);
    const expired = await call('GET', '/user', undefined, { authorization: `Bearer ${k2.token}` });
    expect(expired.statusCode).toBe(401);
    expect(expired.json().code).toBe('API_KEY.EXPIRED');
    clock.advance(-(3600 * 1000 + 1)); // back, so the other tests' access tokens stay valid
  });

  it('unknown or malformed keys are API_KEY.INVALID', async () => {
    for (const token of ['svc_key_' + '0'.repeat(43), 'svc_key_short', 'svc_key_' + '!'.repeat(43)]) {
      const res = await call('GET', '/user', undefined, { authorization: `Bearer ${token}` });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('API_KEY.INVALID');
    }
    const header = await call('GET', '/user', undefined, { 'x-api-key': 'not-a-key' });
    expect(header.json().code).toBe('API_KEY.INVALID');
  });

  it("another user's key is 404 API_KEY.NOT_FOUND, and lists show only the caller's keys", async () => {
    const a = await creator([]);
    const b = await creator([]);
    const key = (
      await call('POST', '/api_key', { name: 'a', scope_keys: [], expires_in: 3600 }, a.headers)
    ).json();
    for (const [method, url] of [
      ['GET', `/api_key/${key.id}`],
      ['DELETE', `/api_key/${key.id}`],
    ]) {
      const res = await call(method, url, undefined, b.headers);
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('API_KEY.NOT_FOUND');
    }
    expect((await call('GET', '/api_key', undefined, b.headers)).json().total).toBe(0);
  });

  it("the key's power is its scopes ∩ the creator's current scopes, on the very next request", async () => {
    const c = await creator(['vault:read', 'user:read']);
    const key = (
      await call(
        'POST',
        '/api_key',
        { name: 'i', scope_keys: ['vault:read', 'user:read'], expires_in: 3600 },
        c.headers,
      )
    ).json();
    const auth = { authorization: `Bearer ${key.token}` };
    expect((await call('GET', '/user', undefined, auth)).statusCode).toBe(200);
    // Shrink the creator's role: the key shrinks at once.
    await call('PUT', `/role/${c.roleId}/scope`, { scope_keys: ['auth:manage', 'vault:read'] });
    const denied = await call('GET', '/user', undefined, auth);
    expect(denied.statusCode).toBe(403);
    expect(denied.json()).toMatchObject({
      code: 'AUTH.FORBIDDEN',
      details: { required_scopes: ['user:read'], mode: 'any' },
    });
    // Grow it back through a persisted role-scope entry: the key regains it on the next request.
    await call('POST', '/role_scope_entry', { role_id: c.roleId, scope_key: 'user:read' });
    expect((await call('GET', '/user', undefined, auth)).statusCode).toBe(200);
    // Removing the role from the creator shrinks the key to nothing.
    const ur = (await call('GET', `/user_role?user_id=${c.userId}`)).json().user_roles[0];
    await call('DELETE', `/user_role/${ur.id}`);
    expect((await call('GET', '/user', undefined, auth)).statusCode).toBe(403);
    expect((await call('GET', '/current_user', undefined, auth)).json().scopes).toEqual([]);
  });

  it('records last_used_at off the request path', async () => {
    const c = await creator(['user:read']);
    const key = (
      await call('POST', '/api_key', { name: 'u', scope_keys: ['user:read'], expires_in: 3600 }, c.headers)
    ).json();
    expect(key.last_used_at).toBeNull();
    await call('GET', '/user', undefined, { authorization: `Bearer ${key.token}` });
    await t.ctx.services.identity.flushLastUsed();
    expect((await call('GET', `/api_key/${key.id}`, undefined, c.headers)).json().last_used_at).toEqual(
      expect.any(String),
    );
  });

  it('concurrent credential checks are batched, and each request still gets its own, current answer', async () => {
    const c = await creator(['user:read']);
    const newKey = async () =>
      (
        await call(
          'POST',
          '/api_key',
          { name: 'batch', scope_keys: ['user:read'], expires_in: 3600 },
          c.headers,
        )
      ).json();
    const [k1, k2, gone] = [await newKey(), await newKey(), await newKey()];
    await call('DELETE', `/api_key/${gone.id}`, undefined, c.headers);
    const unknown = `svc_key_${'A'.repeat(43)}`;
    const [p1, p2] = [await principal(t, []), await principal(t, [])];
    const whoAmI = (headers: Record<string, string>) => call('GET', '/current_user', undefined, headers);
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const round = () =>
      Promise.all(
        Array.from({ length: 8 }, () => [
          whoAmI(bearer(k1.token)),
          whoAmI({ 'x-api-key': k2.token }),
          whoAmI(bearer(gone.token)),
          whoAmI(bearer(unknown)),
          whoAmI(p1.headers),
          whoAmI(p2.headers),
        ]).flat(),
      );
    const outcome = (r: { statusCode: number; json(): { id?: string; code?: string } }) =>
      r.statusCode === 200 ? r.json().id : r.json().code;

    const first = (await round()).map(outcome);
    expect(first).toEqual(
      Array.from({ length: 8 }, () => [
        c.userId,
        c.userId,
        'API_KEY.REVOKED',
        'API_KEY.INVALID',
        p1.userId,
        p2.userId,
      ]).flat(),
    );
    // A revocation and a deletion committed before the next requests arrive are seen by every one of them.
    await call('DELETE', `/api_key/${k1.id}`, undefined, c.headers);
    expect((await call('DELETE', `/user/${p2.userId}`)).statusCode).toBe(200);
    const second = (await round()).map(outcome);
    expect(second).toEqual(
      Array.from({ length: 8 }, () => [
        'API_KEY.REVOKED',
        c.userId,
        'API_KEY.REVOKED',
        'API_KEY.INVALID',
        p1.userId,
        'AUTH.UNAUTHENTICATED',
      ]).flat(),
    );
  });
});
