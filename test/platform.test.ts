import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { admin } from './helpers/auth.js';
import { dialectName } from './helpers/store.js';

describe(`platform foundation (${dialectName})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('GET /healthz answers ok', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 once migrations are applied', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready' });
  });

  it('serves a valid OpenAPI 3.1 document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('serves the interactive docs page', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  it('an unknown route is 404 with the error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 'NOT_FOUND', message: 'Route GET /api/v1/nope not found' });
  });

  it('refuses a NUL character in the path, the query or a JSON string with 400 (never a 500 from the store)', async () => {
    for (const url of ['/api/v1/user/a%00b', '/api/v1/user?search=a%00b']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    }
    const body = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login/credentials',
      headers: { 'content-type': 'application/json' },
      payload: '{"email":"a\\u0000b@example.test","password":"x"}',
    });
    expect(body.statusCode).toBe(400);
    expect(body.json()).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'Request contains a NUL (U+0000) character',
    });
    // An escaped backslash followed by the text u0000 is not a NUL character.
    const literal = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login/credentials',
      headers: { 'content-type': 'application/json' },
      payload: '{"email":"a\\\\u0000b@example.test","password":"x"}',
    });
    expect(literal.statusCode).toBe(401);
  });

  it('URLs the router refuses (over-long path parameter, bad percent-encoding) get 400 with the error body', async () => {
    const h = (await admin(t)).headers;
    const cases = [
      [`/api/v1/user/${'a'.repeat(101)}`, 'A path parameter is longer than 100 characters'],
      ['/api/v1/user/%E0%A4%A', 'The URL path is not valid (malformed percent-encoding)'],
    ];
    for (const [url, message] of cases) {
      const res = await t.app.inject({ method: 'GET', url, headers: h });
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toEqual({ code: 'VALIDATION_ERROR', message });
      expect(res.headers['x-request-id']).toBeTruthy();
    }
    // 100 characters is still a parameter, answered by the route.
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/user/${'a'.repeat(100)}`, headers: h });
    expect(res.statusCode).toBe(404);
  });

  it('a leap-second timestamp (valid RFC 3339, but no JavaScript Date) is 400 in every date filter, never a 500', async () => {
    const h = (await admin(t)).headers;
    const leap = '2016-12-31T23:59:60Z';
    const filters = [
      ['/api/v1/event_delivery_task', 'created_at_gte'],
      ['/api/v1/workflow_run', 'started_at_gte'],
      ['/api/v1/enrollment', 'created_at_lte'],
      ['/api/v1/questionnaire_submission', 'updated_at_gte'],
      [`/api/v1/webhook/${'0'.repeat(26)}/delivery`, 'delivered_at_gte'],
    ];
    for (const [path, field] of filters) {
      const res = await t.app.inject({ method: 'GET', url: `${path}?${field}=${leap}`, headers: h });
      expect(res.statusCode, path).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field } });
      const ok = await t.app.inject({
        method: 'GET',
        url: `${path}?${field}=2016-12-31T23:59:59Z`,
        headers: h,
      });
      expect(ok.statusCode, path).not.toBe(500);
    }
  });

  it('a body nested deeper than 128 levels is 400 before parsing, never a stack overflow (500)', async () => {
    const h = (await admin(t)).headers;
    const deep = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
    for (const [url, body] of [
      ['/api/v1/questionnaire', `{"name":"d","payload":{"x":${deep(5000)}}}`],
      ['/api/v1/vault_entry', `{"key":"k","kind":"VAR","value":${deep(129)}}`],
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers: { ...h, 'content-type': 'application/json' },
        payload: body,
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toEqual({
        code: 'VALIDATION_ERROR',
        message: 'Request body is nested more than 128 levels deep',
      });
    }
    // Brackets inside strings do not count; 128 levels are fine.
    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/v1/questionnaire',
      headers: { ...h, 'content-type': 'application/json' },
      payload: `{"name":"${'['.repeat(150)}","payload":{"x":${deep(126)}}}`,
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('a route that takes no body refuses fields in one (400), and accepts none or {}', async () => {
    const p = await admin(t);
    const login = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login/credentials',
      payload: { email: p.email, password: p.password },
    });
    const auth = { authorization: `Bearer ${login.json().access_token}` };
    const withField = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/mfa/setup',
      headers: auth,
      payload: { foo: 1 },
    });
    expect(withField.statusCode).toBe(400);
    expect(withField.json()).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'This endpoint takes no request body; unknown field "foo"',
      details: { field: 'foo', in: 'body' },
    });
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/auth/mfa/setup', headers: auth, payload: {} }))
        .statusCode,
    ).toBe(200);
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/auth/mfa/setup', headers: auth })).statusCode,
    ).toBe(200);
    // Content-Type: application/json with an empty body is no body: fine where none is taken, and
    // a 400 from the schema where one is needed.
    const json = { ...auth, 'content-type': 'application/json' };
    const empty = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/mfa/setup',
      headers: json,
      payload: '',
    });
    expect(empty.statusCode).toBe(200);
    const needsBody = await t.app.inject({ method: 'POST', url: '/api/v1/role', headers: json, payload: '' });
    expect(needsBody.statusCode).toBe(400);
    expect(needsBody.json().code).toBe('VALIDATION_ERROR');
  });

  it('a body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE, text/plain included', async () => {
    const h = (await admin(t)).headers;
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/role',
        headers: { ...h, 'content-type': type },
        payload: 'key=x',
      });
      expect(res.statusCode, type).toBe(415);
      expect(res.json(), type).toEqual({
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'Request body must be application/json',
      });
    }
  });

  it('bounds list offsets at 10^9: a larger one is 400 on every list, never a 500 from the store', async () => {
    const root = await admin(t);
    const get = (url: string) => t.app.inject({ method: 'GET', url, headers: root.headers });
    const huge = await get('/api/v1/user?offset=100000000000000000000');
    expect(huge.statusCode).toBe(400);
    expect(huge.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'offset' } });
    expect((await get('/api/v1/user?offset=1000000001')).statusCode).toBe(400);
    const last = await get('/api/v1/user?offset=1000000000');
    expect(last.statusCode).toBe(200);
    expect(last.json()).toMatchObject({ users: [], offset: 1_000_000_000, has_previous: true });
    const lists = t.routes.filter(
      (r) => r.method === 'GET' && !r.url.includes(':') && r.access.kind !== 'public',
    );
    expect(lists.length).toBeGreaterThan(10);
    const refused: string[] = [];
    for (const r of lists) {
      const res = await get(`${r.url}?offset=100000000000000000000`);
      expect(res.statusCode, r.url).toBeLessThan(500);
      if (res.statusCode === 400) refused.push(r.url);
    }
    expect(refused).toEqual(expect.arrayContaining(['/api/v1/user', '/api/v1/api_key', '/api/v1/role']));
  });

  it('bounds every list search: an over-long one is 400 naming the field, never a 500 from the store', async () => {
    // Found by the route fuzz: a 60,000-character `search` reached SQLite's LIKE, which refuses
    // patterns over 50,000 bytes ("LIKE or GLOB pattern too complex") with a 500.
    const root = await admin(t);
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
      paths: Record<string, { get?: { parameters?: Array<{ name: string; in: string }> } }>;
    };
    const searchable = Object.entries(doc.paths)
      .filter(
        ([path, ops]) =>
          !path.includes('{') && ops.get?.parameters?.some((p) => p.in === 'query' && p.name === 'search'),
      )
      .map(([path]) => path);
    expect(searchable.length).toBeGreaterThan(10);
    const long = 'A'.repeat(60_000);
    for (const url of searchable) {
      const res = await t.app.inject({ method: 'GET', url: `${url}?search=${long}`, headers: root.headers });
      expect(res.statusCode, url).toBe(400);
      expect(res.json(), url).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'search' } });
      const fine = await t.app.inject({ method: 'GET', url: `${url}?search=a`, headers: root.headers });
      expect(fine.statusCode, url).toBe(200);
    }
  });

  it('echoes a request id, or makes one', async () => {
    const given = await t.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'abc-123' },
    });
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('exposes Prometheus metrics by route and status', async () => {
    await t.app.inject({ method: 'GET', url: '/healthz' });
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(res.body).toContain('http_request_duration_seconds_bucket');
  });
});

describe(`readiness (${dialectName})`, () => {
  it('GET /readyz is 503 when the store does not answer, while /healthz stays 200', async () => {
    const t = await startTestApp();
    await t.ctx.store.close();
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({ status: 'unavailable' });
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    await t.close().catch(() => {}); // the store is already closed; the database is still dropped
  });
});

describe('PostgreSQL-only tests', () => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  /** Runs vitest on one *.pg.test.ts file in a child process, on SQLite. */
  const vitest = (env: Record<string, string>, ...args: string[]) => {
    const { SVC_TEST_DATABASE_URL: _url, CI: _ci, ...inherited } = process.env;
    return spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', 'test/migrations.pg.test.ts', '--reporter=verbose', ...args],
      {
        cwd: root,
        env: { ...inherited, SVC_TEST_DATABASE_URL: 'sqlite::memory:', ...env },
        encoding: 'utf8',
      },
    );
  };

  it('every *.pg.test.ts wraps its tests in describePg', () => {
    const files = readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.pg.test.ts'),
    );
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const text = readFileSync(join(root, 'test', f), 'utf8');
      expect(text, f).toMatch(/^describePg\(/m);
      expect(text, f).not.toMatch(/^describe\(/m);
    }
  });

  it('report themselves skipped without PostgreSQL', { timeout: 120_000 }, () => {
    const run = vitest({});
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/1 skipped/);
  });

  it('fail the run with a clear message when CI=true and PostgreSQL is missing, unless excluded', {
    timeout: 120_000,
  }, () => {
    const run = vitest({ CI: 'true' });
    expect(run.status).toBe(1);
    expect(run.stdout + run.stderr).toContain('CI=true but SVC_TEST_DATABASE_URL is not a postgres:// URL');
    const excluded = vitest({ CI: 'true' }, '--exclude', 'test/**/*.pg.test.ts', '--passWithNoTests');
    expect(excluded.status, excluded.stdout + excluded.stderr).toBe(0);
  });
});
