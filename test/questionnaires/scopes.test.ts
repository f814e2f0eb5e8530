import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey, principal, responder } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/** Each endpoint of the catalogue and the scope SPEC "Endpoints with scope only" gives it (null: open). */
const EXPECTED: Array<[method: string, url: string, scope: string | null]> = [
  ['GET', '/questionnaire', 'questionnaire:read'],
  ['GET', '/questionnaire/deleted', 'questionnaire:read'],
  ['GET', '/questionnaire/:id', 'questionnaire:read'],
  ['GET', '/questionnaire/:id/revision', 'questionnaire:read'],
  ['GET', '/questionnaire/:id/revision/:revision_id', 'questionnaire:read'],
  ['GET', '/questionnaire/:id/revision/:revision_id/snapshot', 'questionnaire:read'],
  ['POST', '/questionnaire', 'questionnaire:write'],
  ['PATCH', '/questionnaire/:id', 'questionnaire:write'],
  ['POST', '/questionnaire/:id/restore', 'questionnaire:write'],
  ['POST', '/questionnaire/:id/fork', 'questionnaire:write'],
  ['DELETE', '/questionnaire/:id', 'questionnaire:delete'],
  ['POST', '/questionnaire/:id/publish', 'questionnaire:manage'],
  ['POST', '/questionnaire/:id/archive', 'questionnaire:manage'],
  ['GET', '/folder', 'folder:read'],
  ['GET', '/folder/:id', 'folder:read'],
  ['GET', '/folder/tree', 'folder:read'],
  ['GET', '/folder_tree', 'folder:read'],
  ['POST', '/folder', 'folder:write'],
  ['PATCH', '/folder/:id', 'folder:write'],
  ['DELETE', '/folder/:id', 'folder:delete'],
  ['GET', '/folder_permission', 'permission:read'],
  ['GET', '/folder_permission/:id', 'permission:read'],
  ['POST', '/folder_permission', 'permission:write'],
  ['PATCH', '/folder_permission/:id', 'permission:write'],
  ['DELETE', '/folder_permission/:id', 'permission:delete'],
  ['GET', '/questionnaire_permission', 'permission:read'],
  ['GET', '/questionnaire_permission/:id', 'permission:read'],
  ['POST', '/questionnaire_permission', 'permission:write'],
  ['PATCH', '/questionnaire_permission/:id', 'permission:write'],
  ['DELETE', '/questionnaire_permission/:id', 'permission:delete'],
  ['GET', '/config/folder/:id', 'config:read'],
  ['GET', '/config', null],
  ['GET', '/config/questionnaire/:id', null],
];

describe(`catalogue scopes (${dialectName})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const url = (u: string) => `/api/v1${u.replace(/:[a-z_]+/g, () => randomUUID())}`;
  const send = (method: string, u: string, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: method as 'GET',
      url: url(u),
      headers,
      ...(['POST', 'PATCH'].includes(method) ? { payload: {} } : {}),
    });

  it('declares exactly the scope of the SPEC table on each endpoint', () => {
    for (const [method, u, scope] of EXPECTED) {
      const route = t.routes.find((r) => r.method === method && r.url === `/api/v1${u}`);
      expect(route, `${method} ${u}`).toBeDefined();
      expect(route!.access, `${method} ${u}`).toEqual(
        scope === null ? { kind: 'authenticated' } : { kind: 'scoped', scopes: [scope], mode: 'any' },
      );
    }
  });

  it('refuses callers without the scope, and lets exactly that scope through the gate', async () => {
    const resp = await responder(t);
    for (const [method, u, scope] of EXPECTED) {
      expect((await send(method, u)).statusCode, `${method} ${u} anonymous`).toBe(401);
      if (scope === null) continue;
      const refused = await send(method, u, resp.headers);
      expect(refused.statusCode, `${method} ${u} responder`).toBe(403);
      expect(refused.json()).toMatchObject({ code: 'AUTH.FORBIDDEN', details: { required_scopes: [scope] } });
      const holder = await principal(t, [scope]);
      const passed = await send(method, u, holder.headers);
      expect(passed.statusCode, `${method} ${u} with ${scope}`).not.toBe(403);
      expect(passed.statusCode, `${method} ${u} with ${scope}`).toBeLessThan(500);
    }
  });

  it('API keys work within their scopes', async () => {
    const key = await apiKey(t, ['questionnaire:read', 'questionnaire:write']);
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/questionnaire',
      headers: key.headers,
      payload: { name: 'via key' },
    });
    expect(created.statusCode).toBe(200);
    expect(created.json().created_by).toBe(key.userId);
    const read = await t.app.inject({
      method: 'GET',
      url: `/api/v1/questionnaire/${created.json().id}`,
      headers: key.headers,
    });
    expect(read.statusCode).toBe(200);
    const publish = await t.app.inject({
      method: 'POST',
      url: `/api/v1/questionnaire/${created.json().id}/publish`,
      headers: key.headers,
    });
    expect(publish.statusCode).toBe(403);
  });
});
