import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, principal, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

const URL_A = 'https://8.8.8.8/hooks/a';

describe(`webhook CRUD (${dialectName})`, () => {
  let t: TestApp;
  let writer: TestPrincipal;
  let reader: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp();
    writer = await principal(t, ['webhook:read', 'webhook:write', 'webhook:delete']);
    reader = await principal(t, ['webhook:read']);
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>, headers = writer.headers) =>
    t.app.inject({ method: 'POST', url: '/api/v1/webhook', headers, payload: body });

  it('create answers the full 64-hex secret once; reads answer only secret_hint', async () => {
    const res = await create({ name: 'orders', url: URL_A, event_types: ['svc.user.created'] });
    expect(res.statusCode).toBe(200);
    const hook = res.json();
    expect(hook.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(hook.secret_hint).toBe(hook.secret.slice(-4));
    expect(hook).toMatchObject({
      name: 'orders',
      url: URL_A,
      event_types: ['svc.user.created'],
      description: null,
      enabled: true,
      deleted_at: null,
      updated_by: writer.userId,
    });
    const got = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}`,
      headers: reader.headers,
    });
    expect(got.statusCode).toBe(200);
    expect(got.json().secret).toBeUndefined();
    expect(got.json().secret_hint).toBe(hook.secret_hint);
    expect(got.body).not.toContain(hook.secret);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/webhook', headers: reader.headers });
    expect(list.body).not.toContain(hook.secret);
    expect(list.json().webhooks.every((w: Record<string, unknown>) => w.secret === undefined)).toBe(true);
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: { description: 'd' },
    });
    expect(patched.json().secret).toBeUndefined();
    expect(t.logText()).not.toContain(hook.secret);
  });

  it('two webhooks get different secrets', async () => {
    const a = (await create({ name: 'a', url: URL_A, event_types: ['*'] })).json();
    const b = (await create({ name: 'b', url: URL_A, event_types: ['*'] })).json();
    expect(a.secret).not.toBe(b.secret);
  });

  it('rotate_secret answers a new full secret; PATCH cannot set the secret', async () => {
    const hook = (await create({ name: 'rot', url: URL_A, event_types: ['*'] })).json();
    const rotated = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/rotate_secret`,
      headers: writer.headers,
    });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toMatch(/^[0-9a-f]{64}$/);
    expect(rotated.json().secret).not.toBe(hook.secret);
    expect(rotated.json().secret_hint).toBe(rotated.json().secret.slice(-4));
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: { secret: 'a'.repeat(64) },
    });
    expect(patch.statusCode).toBe(400);
    expect(patch.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'secret' } });
    const missing = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook/nope/rotate_secret',
      headers: writer.headers,
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('WEBHOOK.NOT_FOUND');
  });

  it('PATCH changes fields, normalises event_types, rejects unknown/empty bodies', async () => {
    const hook = (await create({ name: 'p', url: URL_A, event_types: ['svc.user.created'] })).json();
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: {
        name: 'p2',
        enabled: false,
        event_types: ['svc.user.updated', 'svc.user.updated', 'svc.user.deleted'],
        description: 'x',
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      name: 'p2',
      enabled: false,
      event_types: ['svc.user.updated', 'svc.user.deleted'],
      description: 'x',
    });
    const empty = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: {},
    });
    expect(empty.statusCode).toBe(400);
    const unknown = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: { colour: 'red' },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('VALIDATION_ERROR');
    const gone = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/webhook/does-not-exist',
      headers: writer.headers,
      payload: { name: 'x' },
    });
    expect(gone.statusCode).toBe(404);
  });

  it('validates the create body with clear 400s', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: URL_A, event_types: ['*'] }, 'name'],
      [{ name: 'x', event_types: ['*'] }, 'url'],
      [{ name: 'x', url: URL_A }, 'event_types'],
      [{ name: 'x', url: URL_A, event_types: [] }, 'event_types'],
      [{ name: 'x', url: URL_A, event_types: ['has space'] }, 'event_types.0'],
      [{ name: 'x', url: URL_A, event_types: ['*'], enabled: 'yes' }, 'enabled'],
      [{ name: 'x', url: URL_A, event_types: ['*'], secret: 'f'.repeat(64) }, 'secret'],
      [{ name: '', url: URL_A, event_types: ['*'] }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field } });
    }
  });

  it('refuses non-public and non-https URLs at create and update with WEBHOOK.URL_FORBIDDEN', async () => {
    const refused = [
      'http://8.8.8.8/',
      'https://127.0.0.1/',
      'https://localhost/',
      'https://10.0.0.5/',
      'https://172.16.1.1/',
      'https://192.168.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://[fd00:ec2::254]/',
      'https://100.64.1.1/',
      'https://[::ffff:127.0.0.1]/',
      'https://[fe80::1]/',
      'https://224.0.0.1/',
      'https://0.0.0.0/',
      'https://[::1]/',
      'not a url',
    ];
    for (const url of refused) {
      const res = await create({ name: 'bad', url, event_types: ['*'] });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code, url).toBe('WEBHOOK.URL_FORBIDDEN');
      expect(res.json().message, url).toMatch(/^url refused: /);
      expect(res.json().details.field).toBe('url');
    }
    const hook = (await create({ name: 'ok', url: URL_A, event_types: ['*'] })).json();
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
      payload: { url: 'https://192.168.1.1/x' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'WEBHOOK.URL_FORBIDDEN', details: { reason: 'private' } });
    expect(res.json().message).toContain('192.168.1.1');
  });

  it('soft DELETE: 200 {message}, then 404 everywhere; list excludes it', async () => {
    const hook = (await create({ name: 'del-me', url: URL_A, event_types: ['*'] })).json();
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/webhook/${hook.id}`,
      headers: writer.headers,
    });
    expect(del.statusCode).toBe(200);
    expect(typeof del.json().message).toBe('string');
    for (const [method, url] of [
      ['GET', `/api/v1/webhook/${hook.id}`],
      ['DELETE', `/api/v1/webhook/${hook.id}`],
      ['POST', `/api/v1/webhook/${hook.id}/rotate_secret`],
      ['GET', `/api/v1/webhook/${hook.id}/delivery`],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: writer.headers });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().code).toBe('WEBHOOK.NOT_FOUND');
    }
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/webhook?name=del-me',
      headers: reader.headers,
    });
    expect(list.json().total).toBe(0);
  });

  it('list filters (enabled, name, url, search), newest first, envelope and sort validation', async () => {
    const clock = manualClock(new Date());
    const fresh = await startTestApp({ clock });
    try {
      const w = await admin(fresh);
      const mk = (body: Record<string, unknown>) => {
        clock.advance(1000); // distinct created_at: "newest first" is then exact
        return fresh.app.inject({
          method: 'POST',
          url: '/api/v1/webhook',
          headers: w.headers,
          payload: body,
        });
      };
      await mk({ name: 'Alpha hook', url: 'https://8.8.8.8/alpha', event_types: ['*'] });
      await mk({ name: 'beta', url: 'https://8.8.4.4/beta', event_types: ['*'], enabled: false });
      await mk({
        name: 'gamma',
        url: 'https://1.1.1.1/g',
        event_types: ['*'],
        description: 'The ALPHA backup',
      });
      const q = async (qs: string) => {
        const res = await fresh.app.inject({
          method: 'GET',
          url: `/api/v1/webhook${qs}`,
          headers: w.headers,
        });
        expect(res.statusCode, qs).toBe(200);
        return res.json();
      };
      const all = await q('');
      expect(all).toMatchObject({ total: 3, limit: 25, offset: 0, has_next: false, has_previous: false });
      expect(all.webhooks.map((x: { name: string }) => x.name)).toEqual(['gamma', 'beta', 'Alpha hook']);
      expect((await q('?enabled=false')).webhooks.map((x: { name: string }) => x.name)).toEqual(['beta']);
      expect((await q('?enabled=true')).total).toBe(2);
      expect((await q('?name=ALPHA')).webhooks.map((x: { name: string }) => x.name)).toEqual(['Alpha hook']);
      expect((await q('?url=8.8.4')).webhooks.map((x: { name: string }) => x.name)).toEqual(['beta']);
      expect((await q('?search=alpha')).total).toBe(2);
      const page = await q('?limit=1&offset=1&sort_by=name&sort_dir=asc');
      expect(page).toMatchObject({ total: 3, has_next: true, has_previous: true });
      expect(page.webhooks[0].name).toBe('beta');
      const bad = await fresh.app.inject({
        method: 'GET',
        url: '/api/v1/webhook?sort_by=secret',
        headers: w.headers,
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().details).toMatchObject({ field: 'sort_by' });
      expect(bad.json().details.allowed_values).toContain('created_at');
      const unknown = await fresh.app.inject({
        method: 'GET',
        url: '/api/v1/webhook?colour=1',
        headers: w.headers,
      });
      expect(unknown.statusCode).toBe(400);
      const limit = await fresh.app.inject({
        method: 'GET',
        url: '/api/v1/webhook?limit=251',
        headers: w.headers,
      });
      expect(limit.statusCode).toBe(400);
    } finally {
      await fresh.close();
    }
  });

  it('enforces scopes: read, write and delete separately; 401 without credentials; API keys work', async () => {
    const hook = (await create({ name: 'scoped', url: URL_A, event_types: ['*'] })).json();
    const noScopes = await principal(t, []);
    const writeOnly = await principal(t, ['webhook:write']);
    const checks: Array<[string, string, TestPrincipal, number, Record<string, unknown>?]> = [
      ['GET', '/api/v1/webhook', noScopes, 403],
      ['GET', `/api/v1/webhook/${hook.id}`, writeOnly, 403],
      ['POST', '/api/v1/webhook', reader, 403, { name: 'x', url: URL_A, event_types: ['*'] }],
      ['PATCH', `/api/v1/webhook/${hook.id}`, reader, 403, { name: 'x' }],
      ['DELETE', `/api/v1/webhook/${hook.id}`, writeOnly, 403],
      ['POST', `/api/v1/webhook/${hook.id}/rotate_secret`, reader, 403],
      ['GET', `/api/v1/webhook/${hook.id}/delivery`, writeOnly, 403],
      ['POST', `/api/v1/webhook/${hook.id}/delivery/x/retry`, reader, 403],
    ];
    for (const [method, url, who, status, payload] of checks) {
      const res = await t.app.inject({ method: method as 'GET', url, headers: who.headers, payload });
      expect(res.statusCode, `${method} ${url}`).toBe(status);
      expect(res.json().code).toBe('AUTH.FORBIDDEN');
    }
    const anon = await t.app.inject({ method: 'GET', url: '/api/v1/webhook' });
    expect(anon.statusCode).toBe(401);
    const key = await apiKey(t, ['webhook:read']);
    const viaKey = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}`,
      headers: key.headers,
    });
    expect(viaKey.statusCode).toBe(200);
  });

  it('delivery endpoints answer 404 for unknown webhook or delivery', async () => {
    const hook = (await create({ name: 'd404', url: URL_A, event_types: ['*'] })).json();
    for (const [method, url, code] of [
      ['GET', `/api/v1/webhook/${hook.id}/delivery/nope`, 'WEBHOOK.DELIVERY_NOT_FOUND'],
      ['POST', `/api/v1/webhook/${hook.id}/delivery/nope/retry`, 'WEBHOOK.DELIVERY_NOT_FOUND'],
      ['GET', `/api/v1/webhook/${hook.id}/delivery/nope/attempt`, 'WEBHOOK.DELIVERY_NOT_FOUND'],
      ['GET', '/api/v1/webhook/nope/delivery', 'WEBHOOK.NOT_FOUND'],
      ['GET', '/api/v1/webhook/nope/delivery/nope', 'WEBHOOK.NOT_FOUND'],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: writer.headers });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().code, url).toBe(code);
    }
    const empty = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}/delivery`,
      headers: reader.headers,
    });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toMatchObject({ deliveries: [], total: 0 });
  });
});
