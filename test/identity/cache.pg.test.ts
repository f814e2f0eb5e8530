import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { spawnCli, waitForOutput } from '../helpers/cli.js';
import { describePg, freshDatabase, type TestDatabase } from '../helpers/store.js';

/**
 * Two processes on one PostgreSQL database: changes go through app A (in this process), and a real
 * `svc serve` process B, with its own scope cache, answers the key's requests over HTTP.
 */
describePg('scope cache invalidation across processes (postgres)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: ChildProcess;
  let bAddress: string;
  beforeAll(async () => {
    db = await freshDatabase();
    a = await startTestApp({ databaseUrl: db.url });
    b = spawnCli(['serve'], { SVC_DATABASE_URL: db.url, PORT: '0', SVC_WORKER: 'off' });
    const line = await waitForOutput(b, /listening on/);
    bAddress = /listening on (http:\/\/[^ ]+)/.exec(line)![1];
  });
  afterAll(async () => {
    if (b && b.exitCode === null) {
      const exited = new Promise((resolve) => b.once('exit', resolve));
      b.kill('SIGTERM');
      await exited;
    }
    await a.close();
    await db.drop();
  });

  /** The key's request, answered by process B. */
  const viaB = async (headers: Record<string, string>) => {
    const res = await fetch(`${bAddress}/api/v1/user`, { headers });
    return { statusCode: res.status, body: (await res.json()) as { code?: string } };
  };

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
    expect((await viaB(key.headers)).statusCode).toBe(200); // B's cache is now warm
    await a.app.inject({
      method: 'PUT',
      url: `/api/v1/role/${roleId}/scope`,
      headers: root.headers,
      payload: { scope_keys: ['vault:read'] },
    });
    expect((await viaB(key.headers)).statusCode).toBe(403);
    await a.app.inject({
      method: 'POST',
      url: '/api/v1/role_scope_entry',
      headers: root.headers,
      payload: { role_id: roleId, scope_key: 'user:read' },
    });
    expect((await viaB(key.headers)).statusCode).toBe(200);
    const ur = (
      await a.app.inject({
        method: 'GET',
        url: `/api/v1/user_role?user_id=${key.userId}`,
        headers: root.headers,
      })
    ).json().user_roles[0];
    await a.app.inject({ method: 'DELETE', url: `/api/v1/user_role/${ur.id}`, headers: root.headers });
    expect((await viaB(key.headers)).statusCode).toBe(403);
  });

  it('a revoked key is rejected by the other process at once', async () => {
    const key = await apiKey(a, ['user:read', 'auth:manage']);
    expect((await viaB(key.headers)).statusCode).toBe(200);
    const id = (await a.app.inject({ method: 'GET', url: '/api/v1/api_key', headers: key.headers })).json()
      .api_keys[0].id;
    await a.app.inject({ method: 'DELETE', url: `/api/v1/api_key/${id}`, headers: key.headers });
    const res = await viaB(key.headers);
    expect(res.statusCode).toBe(401);
    expect(res.body.code).toBe('API_KEY.REVOKED');
  });
});
