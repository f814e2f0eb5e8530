import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { describePg, freshDatabase, type TestDatabase } from '../helpers/store.js';

/** Two app instances (two processes' worth of caches) on one PostgreSQL database. */
describePg('scope cache invalidation across processes (postgres)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await freshDatabase();
    a = await startTestApp({ databaseUrl: db.url });
    b = await startTestApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await db.drop();
  });

  it('a role change made through one process shrinks and grows a key in the other on the next request', async () => {
    const root = await admin(a);
    const key = await apiKey(a, ['vault:read', 'user:read']);
    const roleId = (
      await a.app.inject({
        method: 'GET',
        url: `/api/v1/user_role?user_id=${key.userId}`,
        headers: root.headers,
      })
    ).json().user_roles[0].role_id;
    const viaB = () => b.app.inject({ method: 'GET', url: '/api/v1/user', headers: key.headers });
    expect((await viaB()).statusCode).toBe(200); // B's cache is now warm
    await a.app.inject({
      method: 'PUT',
      url: `/api/v1/role/${roleId}/scope`,
      headers: root.headers,
      payload: { scope_keys: ['vault:read'] },
    });
    expect((await viaB()).statusCode).toBe(403);
    await a.app.inject({
      method: 'POST',
      url: '/api/v1/role_scope_entry',
      headers: root.headers,
      payload: { role_id: roleId, scope_key: 'user:read' },
    });
    expect((await viaB()).statusCode).toBe(200);
    const ur = (
      await a.app.inject({
        method: 'GET',
        url: `/api/v1/user_role?user_id=${key.userId}`,
        headers: root.headers,
      })
    ).json().user_roles[0];
    await a.app.inject({ method: 'DELETE', url: `/api/v1/user_role/${ur.id}`, headers: root.headers });
    expect((await viaB()).statusCode).toBe(403);
  });

  it('a revoked key is rejected by the other process at once', async () => {
    const key = await apiKey(a, ['user:read', 'auth:manage']);
    const viaB = () => b.app.inject({ method: 'GET', url: '/api/v1/user', headers: key.headers });
    expect((await viaB()).statusCode).toBe(200);
    const id = (await a.app.inject({ method: 'GET', url: '/api/v1/api_key', headers: key.headers })).json()
      .api_keys[0].id;
    await a.app.inject({ method: 'DELETE', url: `/api/v1/api_key/${id}`, headers: key.headers });
    const res = await viaB();
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('API_KEY.REVOKED');
  });
});
