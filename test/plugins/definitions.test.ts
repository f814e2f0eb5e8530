import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { client, pluck } from './helpers.js';

describe(`plugin definitions: built-ins and the list (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    t = await startTestApp();
    api = client(t, (await admin(t)).headers);
  });
  afterAll(() => t.close());

  it('discovers the built-ins core, email and http at start-up with full action descriptions', async () => {
    const res = await api.definitions();
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ total: 3, limit: 25, offset: 0, has_next: false, has_previous: false });
    expect(body.plugin_definitions.map((d: { name: string }) => d.name)).toEqual(['core', 'email', 'http']);
    const http = body.plugin_definitions[2];
    expect(http).toMatchObject({
      name: 'http',
      runtime: 'package',
      entrypoint: 'builtin:http',
      plugin_key: 'builtin:http',
      dist_name: 'svc',
      enabled: true,
    });
    expect(http.version).toMatch(/^\d+\.\d+\.\d+/);
    // The svc checkout's commit where it is one (CI and development), else unknown.
    if (insideGitCheckout()) expect(http.dist_commit).toMatch(/^[0-9a-f]{40}$/);
    else expect(http.dist_commit).toBeNull();
    expect(http.instance_config_schema.type).toBe('object');
    expect(http.actions).toEqual([
      expect.objectContaining({
        name: 'request',
        title: 'HTTP request',
        idempotent: false,
        timeout_seconds: 30,
        input_schema: expect.objectContaining({ required: ['method', 'url'] }),
        output_schema: expect.objectContaining({ required: ['status', 'headers', 'body'] }),
      }),
    ]);
    const email = body.plugin_definitions[1];
    expect(email.actions.map((a: { name: string }) => a.name)).toEqual(['send']);
    expect(email.actions[0].idempotent).toBe(false);
    const core = body.plugin_definitions[0];
    expect(core.actions.map((a: { name: string; idempotent: boolean }) => [a.name, a.idempotent])).toEqual([
      ['echo', true],
      ['fail', true],
      ['sleep', true],
    ]);
    for (const d of body.plugin_definitions) {
      expect(Object.keys(d).sort()).toEqual(
        [
          'actions',
          'created_at',
          'dist_commit',
          'dist_name',
          'enabled',
          'entrypoint',
          'id',
          'instance_config_schema',
          'name',
          'plugin_key',
          'runtime',
          'updated_at',
          'version',
        ].sort(),
      );
    }
  });

  it('filters by exact name, partial case-insensitive search and plugin_key', async () => {
    expect((await api.definitions('name=htt')).json().total).toBe(0);
    expect(pluck((await api.definitions('name=http')).json().plugin_definitions, 'name')).toEqual(['http']);
    expect(pluck((await api.definitions('search=MAI')).json().plugin_definitions, 'name')).toEqual(['email']);
    expect((await api.definitions('search=%25')).json().total).toBe(0);
    expect(
      pluck((await api.definitions('plugin_key=builtin:core')).json().plugin_definitions, 'name'),
    ).toEqual(['core']);
    expect((await api.definitions('runtime=service')).json().total).toBe(0);
    expect((await api.definitions('enabled=true')).json().total).toBe(3);
  });

  it('sorts and paginates', async () => {
    const desc = await api.definitions('sort_by=name&sort_dir=desc&limit=2');
    expect(desc.json()).toMatchObject({ total: 3, limit: 2, has_next: true, has_previous: false });
    expect(pluck(desc.json().plugin_definitions, 'name')).toEqual(['http', 'email']);
    const next = await api.definitions('sort_by=name&sort_dir=desc&limit=2&offset=2');
    expect(next.json()).toMatchObject({ has_next: false, has_previous: true });
    expect(pluck(next.json().plugin_definitions, 'name')).toEqual(['core']);
  });

  it('rejects an unsupported sort field, an unknown parameter and a bad limit with 400', async () => {
    const sort = await api.definitions('sort_by=secret');
    expect(sort.status).toBe(400);
    expect(sort.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'sort_by' } });
    expect(sort.json().details.allowed_values).toContain('name');
    expect((await api.definitions('colour=blue')).status).toBe(400);
    expect((await api.definitions('limit=251')).status).toBe(400);
    expect((await api.definitions('runtime=wasm')).status).toBe(400);
  });

  it('gets one definition by id, 404 for an unknown id', async () => {
    const id = await api.definitionId('email');
    const one = await api.call('GET', `/plugin_definition/${id}`);
    expect(one.status).toBe(200);
    expect(one.json()).toMatchObject({ id, name: 'email', plugin_key: 'builtin:email' });
    const missing = await api.call('GET', '/plugin_definition/nope');
    expect(missing.status).toBe(404);
    expect(missing.json().code).toBe('PLUGIN.DEFINITION_NOT_FOUND');
  });

  it('requires plugin:read', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/api/v1/plugin_definition' });
    expect(none.statusCode).toBe(401);
    const wrong = client(t, (await principal(t, ['plugin:write', 'vault:read'])).headers);
    const denied = await wrong.definitions();
    expect(denied.status).toBe(403);
    expect(denied.json()).toMatchObject({
      code: 'AUTH.FORBIDDEN',
      details: { required_scopes: ['plugin:read'], mode: 'any' },
    });
    const reader = client(t, (await principal(t, ['plugin:read'])).headers);
    expect((await reader.definitions()).status).toBe(200);
  });

  it('a second start-up on the same store keeps ids and does not duplicate definitions', async () => {
    const before = (await api.definitions()).json().plugin_definitions;
    const report = await t.ctx.services.plugins.discover();
    expect(report).toEqual({ loaded: ['core', 'http', 'email'], disabled: [] });
    const after = (await api.definitions()).json().plugin_definitions;
    // dist_commit (and so updated_at) follows the svc checkout's HEAD, which may move in between.
    const stable = (defs: Array<Record<string, unknown>>) =>
      defs.map(({ dist_commit: _c, updated_at: _u, ...rest }) => rest);
    expect(stable(after)).toEqual(stable(before));
  });
});

/** Whether the svc checkout has a commit to report (a fresh `git init` has none; a tarball has no .git). */
function insideGitCheckout(): boolean {
  try {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    execFileSync('git', ['-C', root, 'rev-parse', '--verify', '--quiet', 'HEAD'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
