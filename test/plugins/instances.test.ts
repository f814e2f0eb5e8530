import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { client, pluck, pluginDir, pluginModule } from './helpers.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** A plugin whose config schema uses the constructs the reference rule has to get right. */
const schemaPlugin = {
  name: 'schemas',
  version: '2.0.0',
  instance_config_schema: {
    type: 'object',
    required: ['endpoint'],
    additionalProperties: false,
    $defs: { token: { type: 'string', pattern: '^tok_[a-z]+$' } },
    properties: {
      endpoint: { type: 'string', format: 'uri' },
      mode: { enum: ['fast', 'safe'] },
      token: { $ref: '#/$defs/token' },
      contact: {
        oneOf: [
          { type: 'string', format: 'email' },
          { type: 'string', format: 'uri' },
        ],
      },
      port: { type: 'integer', minimum: 1 },
      tags: { type: 'array', items: { type: 'string', minLength: 3 } },
      nested: { type: 'object', properties: { key: { type: 'string', maxLength: 4 } } },
    },
  },
  actions: [{ name: 'run', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 5 }],
};

describe(`plugin instances (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let schemasId: string;
  let coreId: string;
  let adminUserId: string;
  beforeAll(async () => {
    const dir = pluginDir();
    dir.write('schemas/index.mjs', pluginModule(schemaPlugin, '{ run: () => ({}) }'));
    t = await startTestApp({ env: { SVC_PLUGIN_DIR: dir.root } });
    const a = await admin(t);
    adminUserId = a.userId;
    api = client(t, a.headers);
    schemasId = await api.definitionId('schemas');
    coreId = await api.definitionId('core');
  });
  afterAll(() => t.close());

  it('creates an instance (200) with config_hash over the sorted-key JSON, and gets it back', async () => {
    const config = { endpoint: 'https://example.com/x', nested: { key: 'ab' }, mode: 'safe' };
    const res = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'Main',
      enabled: true,
      config_json: config,
    });
    expect(res.status).toBe(200);
    const inst = res.json();
    expect(inst).toMatchObject({
      plugin_definition_id: schemasId,
      display_name: 'Main',
      enabled: true,
      config_json: config,
      updated_by: adminUserId,
      deleted_at: null,
    });
    expect(inst.config_hash).toBe(
      sha256('{"endpoint":"https://example.com/x","mode":"safe","nested":{"key":"ab"}}'),
    );
    expect(inst.created_at).toMatch(/Z$/);
    const got = await api.get(inst.id);
    expect(got.status).toBe(200);
    expect(got.json()).toEqual(inst);
  });

  it('config_hash does not depend on key order; a null config hashes "null"', async () => {
    const a = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'a',
      enabled: true,
      config_json: { endpoint: 'https://a.test', tags: ['one', 'two'], port: 1 },
    });
    const b = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'b',
      enabled: true,
      config_json: { port: 1, tags: ['one', 'two'], endpoint: 'https://a.test' },
    });
    expect(a.json().config_hash).toBe(b.json().config_hash);
    expect(a.json().config_hash).toBe(sha256('{"endpoint":"https://a.test","port":1,"tags":["one","two"]}'));
    const empty = await api.create({ plugin_definition_id: coreId, display_name: 'core', enabled: false });
    expect(empty.status).toBe(200);
    expect(empty.json()).toMatchObject({ config_json: null, enabled: false, config_hash: sha256('null') });
  });

  it('rejects a config that does not match the schema with 400 PLUGIN.INVALID_CONFIG and the validator messages', async () => {
    const res = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'bad',
      enabled: true,
      config_json: { endpoint: 'not a uri', port: 0, mode: 'slow', extra: 1, tags: ['ab'] },
    });
    expect(res.status).toBe(400);
    const body = res.json();
    expect(body.code).toBe('PLUGIN.INVALID_CONFIG');
    expect(body.details.errors).toEqual(
      expect.arrayContaining([
        { path: '/extra', message: 'is not an allowed property' },
        { path: '/endpoint', message: 'must match format "uri"' },
        { path: '/port', message: 'must be >= 1' },
        { path: '/mode', message: 'must be one of: "fast", "safe"' },
        { path: '/tags/0', message: 'must NOT have fewer than 3 characters' },
      ]),
    );
    expect(body.message).toContain('/endpoint must match format "uri"');
    // The reference rule's own machinery never shows up in a message.
    expect(res.body).not.toContain('secret|var');
    const missing = await api.create({ plugin_definition_id: schemasId, display_name: 'bad', enabled: true });
    expect(missing.status).toBe(400);
    expect(missing.json().details.errors).toEqual([{ path: '/endpoint', message: 'is required' }]);
  });

  it('accepts a vault reference wherever the schema expects a string, and nowhere else', async () => {
    const ok = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'refs',
      enabled: true,
      config_json: {
        endpoint: '$var:api_base',
        mode: '$var:mode',
        token: '$secret:api_token',
        contact: '$var:contact',
        tags: ['$var:tag', 'abc'],
        nested: { key: '$secret:a_long_key_name' },
      },
    });
    expect(ok.status).toBe(200);
    // Stored as written: references are resolved only when the plugin is invoked.
    expect(ok.json().config_json.token).toBe('$secret:api_token');
    const number = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'refs',
      enabled: true,
      config_json: { endpoint: 'https://x.test', port: '$var:port' },
    });
    expect(number.status).toBe(400);
    expect(number.json().details.errors).toEqual([{ path: '/port', message: 'must be integer' }]);
    // Only whole-string references count; a string with a reference inside is an ordinary string.
    const partial = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'refs',
      enabled: true,
      config_json: { endpoint: 'prefix $var:api_base' },
    });
    expect(partial.status).toBe(400);
    expect(partial.json().details.errors).toEqual([
      { path: '/endpoint', message: 'must match format "uri"' },
    ]);
    const badKey = await api.create({
      plugin_definition_id: schemasId,
      display_name: 'refs',
      enabled: true,
      config_json: { endpoint: 'https://x.test', token: '$secret:has-dash' },
    });
    expect(badKey.status).toBe(400);
  });

  it('404 for an unknown definition, 400 for unknown or missing fields', async () => {
    const unknown = await api.create({ plugin_definition_id: 'nope', display_name: 'x', enabled: true });
    expect(unknown.status).toBe(404);
    expect(unknown.json().code).toBe('PLUGIN.DEFINITION_NOT_FOUND');
    const extra = await api.create({
      plugin_definition_id: coreId,
      display_name: 'x',
      enabled: true,
      colour: 'red',
    });
    expect(extra.status).toBe(400);
    expect(extra.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'colour' } });
    const noEnabled = await api.create({ plugin_definition_id: coreId, display_name: 'x' });
    expect(noEnabled.status).toBe(400);
    expect(noEnabled.json().details.field).toBe('enabled');
    const arrayConfig = await api.create({
      plugin_definition_id: coreId,
      display_name: 'x',
      enabled: true,
      config_json: [1],
    });
    expect(arrayConfig.status).toBe(400);
  });

  it('PATCH changes display_name and enabled, re-validates and re-hashes a new config', async () => {
    const id = (
      await api.create({
        plugin_definition_id: schemasId,
        display_name: 'p',
        enabled: true,
        config_json: { endpoint: 'https://a.test' },
      })
    ).json().id;
    const renamed = await api.patch(id, { display_name: 'renamed', enabled: false });
    expect(renamed.status).toBe(200);
    expect(renamed.json()).toMatchObject({
      display_name: 'renamed',
      enabled: false,
      config_json: { endpoint: 'https://a.test' },
    });
    const before = renamed.json().config_hash;
    const bad = await api.patch(id, { config_json: { endpoint: 5 } });
    expect(bad.status).toBe(400);
    expect(bad.json().code).toBe('PLUGIN.INVALID_CONFIG');
    expect((await api.get(id)).json().config_hash).toBe(before);
    const changed = await api.patch(id, { config_json: { endpoint: 'https://b.test' } });
    expect(changed.status).toBe(200);
    expect(changed.json().config_hash).toBe(sha256('{"endpoint":"https://b.test"}'));
    expect(changed.json().config_hash).not.toBe(before);
    expect((await api.get(id)).json()).toEqual(changed.json());
    expect((await api.patch(id, {})).status).toBe(400);
    expect((await api.patch(id, { plugin_definition_id: coreId })).status).toBe(400);
    expect((await api.patch('nope', { display_name: 'x' })).json().code).toBe('PLUGIN.INSTANCE_NOT_FOUND');
  });

  it('DELETE answers 204 with no body, soft-deletes, and the instance is gone from reads', async () => {
    const id = await api.instance('core');
    const del = await api.remove(id);
    expect(del.status).toBe(204);
    expect(del.body).toBe('');
    const row = await t.ctx.store.db
      .selectFrom('plugin_instance')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();
    expect((await api.get(id)).status).toBe(404);
    expect((await api.get(id)).json().code).toBe('PLUGIN.INSTANCE_NOT_FOUND');
    expect((await api.remove(id)).status).toBe(404);
    expect((await api.patch(id, { enabled: true })).status).toBe(404);
    expect(
      pluck((await api.list(`plugin_definition_id=${coreId}`)).json().plugin_instances, 'id'),
    ).not.toContain(id);
  });

  it('lists with filters plugin_definition_id, display_name (exact), enabled, search, and sorting', async () => {
    const clock = manualClock();
    const fresh = await startTestApp({ clock });
    try {
      const c = client(fresh, (await admin(fresh)).headers);
      const core = await c.definitionId('core');
      const http = await c.definitionId('http');
      const make = (def: string, display_name: string, enabled: boolean) => {
        clock.advance(1000);
        return c.create({ plugin_definition_id: def, display_name, enabled });
      };
      await make(core, 'Alpha utility', true);
      await make(core, 'beta utility', false);
      await make(http, 'Gamma API', true);
      const all = await c.list();
      expect(all.json()).toMatchObject({ total: 3, has_next: false });
      expect(pluck(all.json().plugin_instances, 'display_name')).toEqual([
        'Gamma API',
        'beta utility',
        'Alpha utility',
      ]);
      const names = async (q: string) => pluck((await c.list(q)).json().plugin_instances, 'display_name');
      expect(await names(`plugin_definition_id=${core}&sort_by=display_name&sort_dir=asc`)).toEqual([
        'Alpha utility',
        'beta utility',
      ]);
      expect(await names('display_name=Gamma%20API')).toEqual(['Gamma API']);
      expect(await names('display_name=Gamma')).toEqual([]);
      expect(await names('enabled=false')).toEqual(['beta utility']);
      expect(await names('search=UTIL&sort_by=display_name&sort_dir=desc')).toEqual([
        'beta utility',
        'Alpha utility',
      ]);
      const page = await c.list('limit=1&offset=1&sort_by=created_at&sort_dir=asc');
      expect(page.json()).toMatchObject({
        total: 3,
        limit: 1,
        offset: 1,
        has_next: true,
        has_previous: true,
      });
      expect(pluck(page.json().plugin_instances, 'display_name')).toEqual(['beta utility']);
      expect((await c.list('sort_by=config_json')).status).toBe(400);
      expect((await c.list('enabled=yes')).status).toBe(400);
    } finally {
      await fresh.close();
    }
  });

  it('reads need plugin:read; create, patch and invoke need plugin:write; delete plugin:write or plugin:delete', async () => {
    const id = await api.instance('core');
    const reader = client(t, (await principal(t, ['plugin:read'])).headers);
    expect((await reader.get(id)).status).toBe(200);
    expect((await reader.list()).status).toBe(200);
    for (const res of [
      await reader.create({ plugin_definition_id: coreId, display_name: 'x', enabled: true }),
      await reader.patch(id, { enabled: false }),
      await reader.invoke(id, { action: 'echo', payload: {} }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.json().details).toEqual({ required_scopes: ['plugin:write'], mode: 'any' });
    }
    const removal = await reader.remove(id);
    expect(removal.status).toBe(403);
    expect(removal.json().details).toEqual({
      required_scopes: ['plugin:write', 'plugin:delete'],
      mode: 'any',
    });
    const writer = client(t, (await principal(t, ['plugin:write'])).headers);
    expect((await writer.get(id)).status).toBe(403);
    expect((await writer.patch(id, { display_name: 'by writer' })).status).toBe(200);
    expect((await writer.invoke(id, { action: 'echo', payload: { a: 1 } })).json()).toEqual({
      output: { a: 1 },
    });
    expect((await writer.remove(id)).status).toBe(204);
    const deleter = client(t, (await principal(t, ['plugin:delete'])).headers);
    const doomed = await api.instance('core');
    expect((await deleter.remove(doomed)).status).toBe(204);
    expect((await deleter.patch(doomed, { enabled: false })).status).toBe(403);
    const anonymous = await t.app.inject({ method: 'POST', url: '/api/v1/plugin_instance', payload: {} });
    expect(anonymous.statusCode).toBe(401);
  });
});
