import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../src/http/app.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { principal, responder, type TestPrincipal } from './helpers/auth.js';
import { dialectName } from './helpers/store.js';

/**
 * The authorization matrix, generated from the route table itself (every route's declared access):
 * no route can ship unguarded, and none asks for more than it declares.
 */
describe(`authorization matrix (${dialectName})`, () => {
  let t: TestApp;
  let nobody: TestPrincipal;
  let resp: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp();
    nobody = await principal(t, []);
    resp = await responder(t);
  });
  afterAll(() => t.close());

  const url = (r: RouteEntry) => r.url.replace(/:[A-Za-z_]+/g, () => randomUUID());
  const send = (r: RouteEntry, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: r.method as 'GET',
      url: url(r),
      headers,
      ...(['POST', 'PUT', 'PATCH'].includes(r.method) ? { payload: {} } : {}),
    });

  it('every API route declares its access, and scoped routes name real scopes', async () => {
    const scopes = new Set((await t.ctx.services.identity.scopeCatalogue()).map((s) => s.key));
    expect(t.routes.length).toBeGreaterThan(20);
    for (const r of t.routes) {
      if (r.access.kind === 'scoped') {
        expect(r.access.scopes.length, `${r.method} ${r.url}`).toBeGreaterThan(0);
        for (const s of r.access.scopes) expect(scopes.has(s), `${r.method} ${r.url} names ${s}`).toBe(true);
      }
    }
  });

  it('every non-public route answers 401 without credentials', async () => {
    for (const r of t.routes.filter((x) => x.access.kind !== 'public')) {
      const res = await send(r);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(401);
      expect(res.json().code, `${r.method} ${r.url}`).toBe('AUTH.UNAUTHENTICATED');
    }
  });

  it('every scoped route answers 403 with the required scopes to a principal without them', async () => {
    for (const r of t.routes) {
      if (r.access.kind !== 'scoped') continue;
      const res = await send(r, nobody.headers);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
      expect(res.json(), `${r.method} ${r.url}`).toMatchObject({
        code: 'AUTH.FORBIDDEN',
        details: { required_scopes: [...r.access.scopes], mode: r.access.mode },
      });
    }
  });

  it('responders (zero scopes) reach no administrative list or detail endpoint', async () => {
    for (const r of t.routes) {
      if (r.access.kind !== 'scoped') continue;
      const res = await send(r, resp.headers);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
    }
  });

  it('a principal holding exactly the declared scopes passes authorization on every scoped route', async () => {
    const byScopes = new Map<string, TestPrincipal>();
    for (const r of t.routes) {
      if (r.access.kind !== 'scoped') continue;
      // Mode any: each listed scope alone must suffice; mode all: exactly all of them.
      const sets = r.access.mode === 'any' ? r.access.scopes.map((s) => [s]) : [[...r.access.scopes]];
      for (const needed of sets) {
        const key = needed.join(',');
        if (!byScopes.has(key)) byScopes.set(key, await principal(t, needed));
        const res = await send(r, byScopes.get(key)!.headers);
        expect(
          [401, 403].includes(res.statusCode) && res.json().code?.startsWith('AUTH.'),
          `${r.method} ${r.url} with ${key}: ${res.body}`,
        ).toBe(false);
      }
    }
  });

  it('only the scopes SPEC makes active guard a route; the reserved ones are enforced by no endpoint', () => {
    // SPEC "Scope": the enforced (active) scopes; every other scope is reserved.
    const active = new Set(
      [
        'user:read/write/delete',
        'questionnaire:read/write/delete/manage',
        'folder:read/write/delete',
        'permission:read/write/delete',
        'questionnaire_submission:read',
        'enrollment:read/write/delete',
        'device:read/write/delete',
        'event_subscription:read/write/delete',
        'workflow:read/write/delete/execute',
        'plugin:read/write/delete',
        'vault:read/write/delete',
        'webhook:read/write/delete',
        'analytics:read',
        'config:read',
        'auth:manage',
      ].flatMap((group) => {
        const [resource, actions] = group.split(':');
        return actions.split('/').map((action) => `${resource}:${action}`);
      }),
    );
    const reserved = t.routes.flatMap((r) =>
      r.access.kind === 'scoped'
        ? r.access.scopes.filter((s) => !active.has(s)).map((s) => `${r.method} ${r.url}: ${s}`)
        : [],
    );
    expect(reserved).toEqual([]);
  });

  it('API-key-only routes refuse a signed-in user', async () => {
    const p = await principal(t, []);
    for (const r of t.routes.filter((x) => x.access.kind === 'api_key')) {
      const res = await send(r, p.headers);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
      // The same body shape as every AUTH.FORBIDDEN (CONTRACTS §2), plus the credential kind it needs.
      expect(res.json(), `${r.method} ${r.url}`).toMatchObject({
        code: 'AUTH.FORBIDDEN',
        details: { required_scopes: [], mode: 'any', required_auth: 'api_key' },
      });
    }
  });

  it('the OpenAPI document shows each route with its required scopes', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const r of t.routes) {
      if (r.access.kind !== 'scoped') continue;
      const path = r.url.replace('/api/v1', '').replace(/:([A-Za-z_]+)/g, '{$1}');
      const op =
        doc.paths[`/api/v1${path}`]?.[r.method.toLowerCase()] ?? doc.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.url} in OpenAPI`).toBeDefined();
      expect(op['x-required-scopes'], `${r.method} ${r.url}`).toEqual({
        scopes: [...r.access.scopes],
        mode: r.access.mode,
      });
    }
  });
});
