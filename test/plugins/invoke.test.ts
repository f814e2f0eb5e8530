import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/http/errors.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { onlyRun, publish, settle, workflow, api as workflowApi } from '../workflows/helpers.js';
import { type Answer, client, pluginDir, pluginModule } from './helpers.js';

const SECRET = 'probe-secret-value-7f3a9c';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** A package plugin whose actions exercise every branch of the invocation path. */
const probe = {
  name: 'probe',
  version: '1.0.0',
  instance_config_schema: {
    type: 'object',
    properties: { token: { type: 'string', minLength: 8 }, region: { type: 'string' } },
    additionalProperties: false,
  },
  actions: [
    {
      name: 'whoami',
      input_schema: { type: 'object' },
      output_schema: { type: 'object' },
      idempotent: true,
      timeout_seconds: 5,
    },
    {
      name: 'token_digest',
      input_schema: {},
      output_schema: { type: 'object', required: ['digest'] },
      idempotent: true,
      timeout_seconds: 5,
    },
    { name: 'hang', input_schema: {}, output_schema: {}, idempotent: false, timeout_seconds: 1 },
    { name: 'cooperative', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 30 },
    {
      name: 'bad_output',
      input_schema: {},
      output_schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
      idempotent: true,
      timeout_seconds: 5,
    },
    { name: 'leaky_failure', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 5 },
    { name: 'echo_config', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 5 },
    {
      name: 'secret_as_key',
      input_schema: {},
      output_schema: { type: 'object', additionalProperties: false },
      idempotent: true,
      timeout_seconds: 5,
    },
    {
      name: 'nothing',
      input_schema: {},
      output_schema: { type: 'null' },
      idempotent: true,
      timeout_seconds: 5,
    },
  ],
};

const probeHandlers = `{
  whoami: ({ config, input, idempotencyKey, signal }) => ({
    config_keys: Object.keys(config).sort(),
    region: config.region ?? null,
    input,
    idempotency_key: idempotencyKey ?? null,
    has_signal: signal instanceof AbortSignal && !signal.aborted,
  }),
  token_digest: async ({ config }) => {
    const { createHash } = await import('node:crypto');
    return { digest: createHash('sha256').update(config.token, 'utf8').digest('hex') };
  },
  hang: () => new Promise(() => {}),
  cooperative: ({ signal }) => new Promise((_, reject) => {
    signal.addEventListener('abort', () => {
      globalThis.__probeAborted = (globalThis.__probeAborted ?? 0) + 1;
      reject(new Error('stopped'));
    });
  }),
  bad_output: () => ({ n: 'not a number' }),
  leaky_failure: ({ config }) => { throw new Error('login refused for token ' + config.token); },
  nothing: () => undefined,
  echo_config: ({ config, input }) => ({
    config,
    input,
    header: 'Bearer ' + config.token,
    list: [config.token, { deeper: 'x' + config.token + 'y' }],
    ['key_' + config.token]: true,
    region_upper: config.region ? config.region.toUpperCase() : null,
    untouched: 42,
  }),
  secret_as_key: ({ config }) => ({ ['field_' + config.token]: 1 }),
}`;

describe(`plugin invocation (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  const answers: Answer[] = [];
  beforeAll(async () => {
    const dir = pluginDir();
    dir.write('probe/index.mjs', pluginModule(probe, probeHandlers));
    t = await startTestApp({ env: { SVC_PLUGIN_DIR: dir.root } });
    api = client(t, (await admin(t)).headers, answers);
    expect((await api.vault('probe_token', SECRET)).status).toBe(200);
    expect((await api.vault('probe_region', 'eu-west', 'VAR')).status).toBe(200);
  });
  afterAll(() => t.close());

  describe('core built-in', () => {
    let core: string;
    beforeAll(async () => {
      core = await api.instance('core');
    });

    it('attempts that start together read their instances in one statement; an unknown instance fails alone', async () => {
      const other = await api.instance('core');
      const ids = [core, other, core, other, core, 'no-such-instance', core, other];
      const before = t.ctx.store.activity.statements;
      const results = await Promise.allSettled(
        ids.map((id) => t.ctx.services.plugins.prepareAction(id, 'echo')),
      );
      expect(t.ctx.store.activity.statements - before).toBe(1);
      expect(results.map((r) => r.status)).toEqual(
        ids.map((id) => (id === 'no-such-instance' ? 'rejected' : 'fulfilled')),
      );
      const refused = results[5] as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(AppError);
      expect((refused.reason as AppError).code).toBe('PLUGIN.INSTANCE_NOT_FOUND');
      // A change committed before an invocation asks is seen by it: nothing is cached.
      expect((await api.patch(other, { enabled: false })).status).toBe(200);
      const [disabled, enabled] = await Promise.all([
        api.invoke(other, { action: 'echo' }),
        api.invoke(core, { action: 'echo' }),
      ]);
      expect(disabled.json().code).toBe('PLUGIN.INSTANCE_DISABLED');
      expect(enabled.status).toBe(200);
    });

    it('echo answers {output: <payload>}; no payload means {}', async () => {
      const res = await api.invoke(core, {
        action: 'echo',
        payload: { a: [1, 'two', null], b: { c: true } },
      });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ output: { a: [1, 'two', null], b: { c: true } } });
      expect((await api.invoke(core, { action: 'echo' })).json()).toEqual({ output: {} });
      expect((await api.invoke(core, { action: 'echo', payload: 'text' })).json()).toEqual({
        output: 'text',
      });
    });

    it('fail answers 502 PLUGIN.INVOCATION_FAILED with the handler message', async () => {
      const res = await api.invoke(core, { action: 'fail', payload: { message: 'boom from the test' } });
      expect(res.status).toBe(502);
      expect(res.json()).toEqual({
        code: 'PLUGIN.INVOCATION_FAILED',
        message: 'core.fail failed: boom from the test',
      });
    });

    it('sleep waits and answers; an invalid payload is 400 PLUGIN.INVALID_INPUT with the validator messages', async () => {
      expect((await api.invoke(core, { action: 'sleep', payload: { ms: 5 } })).json()).toEqual({
        output: { slept_ms: 5 },
      });
      const bad = await api.invoke(core, { action: 'sleep', payload: { ms: -1, extra: true } });
      expect(bad.status).toBe(400);
      expect(bad.json().code).toBe('PLUGIN.INVALID_INPUT');
      expect(bad.json().details.errors).toEqual(
        expect.arrayContaining([
          { path: '/ms', message: 'must be >= 0' },
          { path: '/extra', message: 'is not an allowed property' },
        ]),
      );
      expect(bad.json().message).toMatch(/^payload does not match the input_schema of core.sleep: /);
    });

    it('an unknown action is 400 PLUGIN.ACTION_NOT_FOUND naming the actions there are', async () => {
      const res = await api.invoke(core, { action: 'explode' });
      expect(res.status).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'PLUGIN.ACTION_NOT_FOUND',
        details: { field: 'action', allowed_values: ['echo', 'fail', 'sleep'] },
      });
    });

    it('a disabled instance is 422, a deleted or unknown one 404, a bad body 400', async () => {
      const id = await api.instance('core');
      await api.patch(id, { enabled: false });
      const disabled = await api.invoke(id, { action: 'echo' });
      expect(disabled.status).toBe(422);
      expect(disabled.json().code).toBe('PLUGIN.INSTANCE_DISABLED');
      await api.patch(id, { enabled: true });
      expect((await api.invoke(id, { action: 'echo' })).status).toBe(200);
      await api.remove(id);
      const deleted = await api.invoke(id, { action: 'echo' });
      expect(deleted.status).toBe(404);
      expect(deleted.json().code).toBe('PLUGIN.INSTANCE_NOT_FOUND');
      expect((await api.invoke('unknown-id', { action: 'echo' })).status).toBe(404);
      const noAction = await api.invoke(core, { payload: {} });
      expect(noAction.status).toBe(400);
      expect(noAction.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'action' } });
      expect((await api.invoke(core, { action: 'echo', extra: 1 })).status).toBe(400);
    });
  });

  describe('package plugin', () => {
    it('the handler gets the resolved config, the input, the Idempotency-Key and a live signal', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token', region: '$var:probe_region' });
      const res = await api.invoke(
        id,
        { action: 'whoami', payload: { x: 1 } },
        { 'idempotency-key': 'node-7-attempt-1' },
      );
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({
        output: {
          config_keys: ['region', 'token'],
          // A VAR is plaintext the vault answers to any reader: only SECRET values are masked.
          region: 'eu-west',
          input: { x: 1 },
          idempotency_key: 'node-7-attempt-1',
          has_signal: true,
        },
      });
      const digest = await api.invoke(id, { action: 'token_digest' });
      expect(digest.json()).toEqual({ output: { digest: sha256(SECRET) } });
    });

    it('vault references resolve at invocation only: the stored config keeps them', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token' });
      const row = await t.ctx.store.db
        .selectFrom('plugin_instance')
        .select('config_json')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.config_json).toBe('{"token":"$secret:probe_token"}');
      expect((await api.get(id)).json().config_json).toEqual({ token: '$secret:probe_token' });
    });

    it('a missing vault key is 422 VAULT.RESOLVE_FAILED, a disabled entry 422 VAULT.DISABLED', async () => {
      const missing = await api.instance('probe', { token: '$secret:no_such_key' });
      const res = await api.invoke(missing, { action: 'token_digest' });
      expect(res.status).toBe(422);
      expect(res.json().code).toBe('VAULT.RESOLVE_FAILED');
      const entry = await api.vault('probe_off', 'disabled-secret-value');
      await api.call('PATCH', `/vault_entry/${entry.json().id}`, { enabled: false });
      const off = await api.instance('probe', { token: '$secret:probe_off' });
      const disabled = await api.invoke(off, { action: 'token_digest' });
      expect(disabled.status).toBe(422);
      expect(disabled.json().code).toBe('VAULT.DISABLED');
    });

    it('a handler that ignores its signal still answers 504 PLUGIN.TIMEOUT at timeout_seconds', async () => {
      const id = await api.instance('probe', {});
      const started = Date.now();
      const res = await api.invoke(id, { action: 'hang' });
      expect(res.status).toBe(504);
      expect(res.json()).toEqual({
        code: 'PLUGIN.TIMEOUT',
        message: 'probe.hang timed out after 1000 ms',
        details: { timeout_ms: 1000 },
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    });

    it('an output that does not match output_schema is 502 PLUGIN.INVALID_OUTPUT', async () => {
      const id = await api.instance('probe', {});
      const res = await api.invoke(id, { action: 'bad_output' });
      expect(res.status).toBe(502);
      expect(res.json()).toMatchObject({
        code: 'PLUGIN.INVALID_OUTPUT',
        details: { errors: [{ path: '/n', message: 'must be integer' }] },
      });
      expect(res.body).not.toContain('not a number');
      expect((await api.invoke(id, { action: 'nothing' })).json()).toEqual({ output: null });
    });

    it('resolved values never reach a response, an error message, a log line or the store', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token' });
      const failed = await api.invoke(id, { action: 'leaky_failure' });
      expect(failed.status).toBe(502);
      expect(failed.json().message).toBe('probe.leaky_failure failed: login refused for token ******');
      await api.invoke(id, { action: 'whoami', payload: {} });
      await api.invoke(id, { action: 'token_digest' });
      for (const a of answers) expect(a.body).not.toContain(SECRET);
      expect(t.logText()).not.toContain(SECRET);
      expect(t.logText()).toContain('plugin action invoked');
      const rows = await t.ctx.store.db.selectFrom('plugin_instance').select('config_json').execute();
      for (const r of rows) expect(r.config_json ?? '').not.toContain(SECRET);
    });
  });

  describe('resolved values are scrubbed from what leaves the plugin service', () => {
    it('anywhere in the output: values, embedded in longer strings, object keys', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token', region: '$var:probe_region' });
      const res = await api.invoke(id, { action: 'echo_config', payload: { note: 'no secrets here' } });
      expect(res.status, res.body).toBe(200);
      expect(res.json()).toEqual({
        output: {
          // Masking a VAR everywhere it occurs would mangle unrelated text ("eu" inside "queue").
          config: { token: '******', region: 'eu-west' },
          input: { note: 'no secrets here' },
          header: 'Bearer ******',
          list: ['******', { deeper: 'x******y' }],
          'key_******': true,
          region_upper: 'EU-WEST',
          untouched: 42,
        },
      });
      expect(res.body).not.toContain(SECRET);
    });

    it('in error details as well as messages', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token' });
      const res = await api.invoke(id, { action: 'secret_as_key' });
      expect(res.status).toBe(502);
      expect(res.json()).toEqual({
        code: 'PLUGIN.INVALID_OUTPUT',
        message:
          'output of probe.secret_as_key does not match its output_schema: /field_****** is not an allowed property',
        details: { errors: [{ path: '/field_******', message: 'is not an allowed property' }] },
      });
      expect(res.body).not.toContain(SECRET);
    });

    it('POST .../invoke resolves references in the payload like an ACTION node does, and scrubs them', async () => {
      const core = await api.instance('core');
      const res = await api.invoke(core, {
        action: 'echo',
        payload: { auth: '$secret:probe_token', region: '$var:probe_region', kept: 'plain' },
      });
      expect(res.status).toBe(200);
      // The handler saw the resolved values; the answer never shows the secret (VAR values are not secret).
      expect(res.json()).toEqual({ output: { auth: '******', region: 'eu-west', kept: 'plain' } });
      expect(res.body).not.toContain(SECRET);
      const missing = await api.invoke(core, { action: 'echo', payload: { auth: '$secret:no_such_key' } });
      expect(missing.status).toBe(422);
      expect(missing.json().code).toBe('VAULT.RESOLVE_FAILED');
      const disabled = await api.invoke(core, { action: 'echo', payload: { auth: '$secret:probe_off' } });
      expect(disabled.status).toBe(422);
      expect(disabled.json().code).toBe('VAULT.DISABLED');
      expect(t.logText()).not.toContain(SECRET);
    });

    it('a workflow ACTION node stores the scrubbed output, never the resolved value', async () => {
      const id = await api.instance('probe', { token: '$secret:probe_token' });
      const wf = await workflowApi(t);
      const { id: subscriptionId } = await workflow(wf, {
        nodes: [
          {
            id: 'e',
            key: 'echo',
            type: 'ACTION',
            config: { plugin_instance_id: id, plugin_action: 'echo_config', input_mapping: {} },
          },
        ],
      });
      await publish(t);
      await settle(t);
      const { run, nodes } = await onlyRun(wf, subscriptionId);
      expect(run.status).toBe('completed');
      expect(nodes.echo.output).toMatchObject({ config: { token: '******' }, header: 'Bearer ******' });
      const rows = await t.ctx.store.db
        .selectFrom('workflow_run_node')
        .select(['output', 'input', 'error'])
        .where('workflow_run_id', '=', run.id)
        .execute();
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(SECRET);
      expect(rows[0].output).toContain('Bearer ******');
    });

    it('a secret resolved into an ACTION input mapping is masked in the output the node stores', async () => {
      const id = await api.instance('probe', {});
      const wf = await workflowApi(t);
      const { id: subscriptionId } = await workflow(wf, {
        nodes: [
          {
            id: 'e',
            key: 'echo',
            type: 'ACTION',
            config: {
              plugin_instance_id: id,
              plugin_action: 'echo_config',
              input_mapping: { auth: '$secret:probe_token', region: '$var:probe_region' },
            },
          },
        ],
      });
      await publish(t);
      await settle(t);
      const { run, nodes } = await onlyRun(wf, subscriptionId);
      expect(run.status).toBe('completed');
      // The handler got the resolved values; what the run keeps masks the secret, not the VAR.
      expect(nodes.echo.output).toMatchObject({ input: { auth: '******', region: 'eu-west' } });
      const rows = await t.ctx.store.db
        .selectFrom('workflow_run_node')
        .select(['output', 'input', 'error'])
        .where('workflow_run_id', '=', run.id)
        .execute();
      expect(JSON.stringify(rows)).not.toContain(SECRET);
    });
  });

  describe('services.plugins (the path workflow ACTION nodes use)', () => {
    it('invoke answers the output and honours a shorter timeoutMs', async () => {
      const plugins = t.ctx.services.plugins;
      const core = await api.instance('core');
      await expect(plugins.invoke({ instanceId: core, action: 'echo', payload: { n: 1 } })).resolves.toEqual({
        n: 1,
      });
      const probeId = await api.instance('probe', {});
      const before = (globalThis as { __probeAborted?: number }).__probeAborted ?? 0;
      const err = await plugins
        .invoke({ instanceId: probeId, action: 'cooperative', timeoutMs: 50 })
        .catch((e) => e);
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({
        code: 'PLUGIN.TIMEOUT',
        status: 504,
        message: 'probe.cooperative timed out after 50 ms',
      });
      // The handler saw its signal abort: it can stop its work.
      expect((globalThis as { __probeAborted?: number }).__probeAborted).toBe(before + 1);
    });

    it("the caller's signal aborts the invocation", async () => {
      const probeId = await api.instance('probe', {});
      const controller = new AbortController();
      const pending = t.ctx.services.plugins.invoke({
        instanceId: probeId,
        action: 'hang',
        signal: controller.signal,
      });
      controller.abort(new Error('run cancelled'));
      await expect(pending).rejects.toMatchObject({
        code: 'PLUGIN.INVOCATION_FAILED',
        message: 'probe.hang was aborted by its caller',
      });
      const timedOut = await t.ctx.services.plugins
        .invoke({ instanceId: probeId, action: 'hang', signal: AbortSignal.timeout(20) })
        .catch((e: AppError) => e);
      expect((timedOut as AppError).code).toBe('PLUGIN.TIMEOUT');
    });

    it('describeAction answers idempotent, timeout_seconds and the schemas', async () => {
      const plugins = t.ctx.services.plugins;
      const http = await api.instance('http', {});
      const described = await plugins.describeAction(http, 'request');
      expect(described).toMatchObject({ idempotent: false, timeout_seconds: 30 });
      expect(described.input_schema).toMatchObject({ required: ['method', 'url'] });
      expect(described.output_schema).toMatchObject({ required: ['status', 'headers', 'body'] });
      const core = await api.instance('core');
      expect(await plugins.describeAction(core, 'echo')).toEqual({
        idempotent: true,
        timeout_seconds: 10,
        input_schema: {},
        output_schema: {},
      });
      await expect(plugins.describeAction(core, 'nope')).rejects.toMatchObject({
        code: 'PLUGIN.ACTION_NOT_FOUND',
      });
      await expect(plugins.describeAction('missing', 'echo')).rejects.toMatchObject({
        code: 'PLUGIN.INSTANCE_NOT_FOUND',
      });
    });
  });
});
