import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName, freshDatabase, onPostgres, type TestDatabase } from '../helpers/store.js';
import { client, pluck, pluginDir, pluginModule, simpleManifest } from './helpers.js';

const GIT_HEAD = '0123456789abcdef0123456789abcdef01234567';

/** SVC_PLUGIN_DIR with every kind of folder discovery has to handle. */
function buildPluginDir() {
  const dir = pluginDir();
  // A plain folder: no package.json, index.mjs.
  dir.write(
    'plain/index.mjs',
    pluginModule(simpleManifest('plain'), '{ run: ({ input }) => ({ plain: input }) }'),
  );
  // An npm-style package: CommonJS main, version from package.json, gitHead from npm's metadata.
  dir.write('npm-style/package.json', {
    name: 'svc-plugin-npm',
    version: '3.1.4',
    main: 'lib/main.cjs',
    gitHead: GIT_HEAD,
  });
  const { version: _v, ...noVersion } = simpleManifest('npmstyle');
  dir.write(
    'npm-style/lib/main.cjs',
    `module.exports = { manifest: ${JSON.stringify(noVersion)}, handlers: { run: ({ input, config }) => ({ doubled: input.n * 2, greeting: config.greeting ?? null }) } };`,
  );
  // A scoped package whose entry comes from "exports" (import condition), exported as `plugin`.
  dir.write('@acme/scoped/package.json', {
    name: '@acme/svc-scoped',
    version: '0.2.0',
    type: 'module',
    exports: { '.': { import: './esm.js', require: './missing.cjs' } },
  });
  dir.write(
    '@acme/scoped/esm.js',
    `export const plugin = { manifest: ${JSON.stringify(simpleManifest('scoped'))}, handlers: { run: () => 'scoped' } };`,
  );
  // A git checkout: dist_commit is its HEAD.
  dir.write('gitrepo/index.mjs', pluginModule(simpleManifest('gitrepo'), '{ run: () => null }'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.test', '-c', 'user.name=t', ...args], {
      cwd: join(dir.root, 'gitrepo'),
      encoding: 'utf8',
    }).trim();
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'plugin');
  const gitCommit = git('rev-parse', 'HEAD');
  // Broken ones: an invalid JSON Schema, a missing handler, a taken name, no entry module.
  dir.write(
    'broken-schema/index.mjs',
    pluginModule(
      { ...simpleManifest('brokenschema'), instance_config_schema: { type: 'no-such-type' } },
      '{ run: () => 1 }',
    ),
  );
  dir.write('no-handler/index.mjs', pluginModule(simpleManifest('nohandler'), '{}'));
  dir.write('dupe/index.mjs', pluginModule(simpleManifest('http'), '{ run: () => 1 }'));
  dir.write('empty/README.md', 'nothing to load');
  dir.write('.hidden/index.mjs', 'throw new Error("hidden folders are never imported")');
  dir.write('notes.txt', 'files at the top level are ignored');
  // The directory as an npm project: its dependencies installed in node_modules are plugins too;
  // other packages there (their dependencies) are never imported.
  dir.write('package.json', {
    name: 'my-plugins',
    private: true,
    dependencies: { 'svc-plugin-installed': '^1.0.0', 'not-installed': '1.0.0' },
  });
  dir.write('node_modules/svc-plugin-installed/package.json', {
    name: 'svc-plugin-installed',
    version: '1.0.0',
    type: 'module',
  });
  dir.write(
    'node_modules/svc-plugin-installed/index.js',
    pluginModule(simpleManifest('installed', { version: '1.0.0' }), '{ run: () => "installed" }'),
  );
  dir.write(
    'node_modules/left-pad/index.js',
    'throw new Error("a dependency of a plugin is never imported")',
  );
  return { root: dir.root, gitCommit };
}

describe(`package plugins in SVC_PLUGIN_DIR (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let dir: ReturnType<typeof buildPluginDir>;
  beforeAll(async () => {
    dir = buildPluginDir();
    t = await startTestApp({ env: { SVC_PLUGIN_DIR: dir.root } });
    api = client(t, (await admin(t)).headers);
  });
  afterAll(() => t.close());

  it('loads folders, npm packages (scoped too) and installed dependencies, with package metadata', async () => {
    const all = (await api.definitions('runtime=package&limit=100')).json().plugin_definitions;
    expect(pluck(all, 'name')).toEqual([
      'core',
      'email',
      'gitrepo',
      'http',
      'installed',
      'npmstyle',
      'plain',
      'scoped',
    ]);
    const byName = Object.fromEntries(all.map((d: { name: string }) => [d.name, d]));
    expect(byName.plain).toMatchObject({
      version: '1.0.0',
      plugin_key: 'package:plain',
      dist_name: null,
      dist_commit: null,
      enabled: true,
    });
    expect(byName.plain.entrypoint).toBe(join(dir.root, 'plain', 'index.mjs'));
    expect(byName.npmstyle).toMatchObject({
      version: '3.1.4',
      plugin_key: 'package:svc-plugin-npm',
      dist_name: 'svc-plugin-npm',
      dist_commit: GIT_HEAD,
    });
    expect(byName.npmstyle.entrypoint).toBe(join(dir.root, 'npm-style', 'lib', 'main.cjs'));
    expect(byName.scoped).toMatchObject({
      plugin_key: 'package:@acme/svc-scoped',
      dist_name: '@acme/svc-scoped',
    });
    expect(byName.scoped.entrypoint).toBe(join(dir.root, '@acme', 'scoped', 'esm.js'));
    expect(byName.gitrepo).toMatchObject({ dist_name: null, dist_commit: dir.gitCommit });
    expect(byName.installed).toMatchObject({
      plugin_key: 'package:svc-plugin-installed',
      dist_name: 'svc-plugin-installed',
    });
    expect(byName.http.plugin_key).toBe('builtin:http');
    expect(byName.plain.actions).toEqual([
      {
        name: 'run',
        title: 'Run',
        description: '',
        input_schema: {},
        output_schema: {},
        idempotent: true,
        timeout_seconds: 5,
      },
    ]);
  });

  it('logs why a plugin was left out, and never imports dependencies or hidden folders', () => {
    const errors = t.logs.filter((l) => l.level === 50).map((l) => JSON.stringify(l));
    const about = (text: string) => errors.filter((e) => e.includes(text));
    expect(about('broken-schema')[0]).toMatch(/instance_config_schema is not a valid JSON Schema/);
    expect(about('no-handler')[0]).toMatch(/no handler function for action \\"run\\"/);
    expect(about('"empty"')[0] ?? about('/empty')[0]).toMatch(/no entry module/);
    expect(about('not-installed')[0]).toMatch(/not installed/);
    expect(about('plugin name already taken')[0]).toContain('"kept":"builtin:http"');
    expect(t.logText()).not.toContain('never imported');
  });

  it('discovering again changes nothing that did not change (same ids, same updated_at)', async () => {
    const before = (await api.definitions('name=plain')).json().plugin_definitions[0];
    const report = await t.ctx.services.plugins.discover();
    expect(report.disabled).toEqual([]);
    expect(report.loaded).toContain('plain');
    expect((await api.definitions('name=plain')).json().plugin_definitions[0]).toEqual(before);
    expect((await api.definitions('limit=100')).json().total).toBe(8);
  });

  it('a package plugin is invoked in-process through the API', async () => {
    const id = await api.instance('npmstyle', { greeting: 'hi' });
    const res = await api.invoke(id, { action: 'run', payload: { n: 21 } });
    expect(res.json()).toEqual({ output: { doubled: 42, greeting: 'hi' } });
    const scoped = await api.instance('scoped');
    expect((await api.invoke(scoped, { action: 'run' })).json()).toEqual({ output: 'scoped' });
  });
});

describe(`a plugin that disappears is disabled, and comes back (${dialectName})`, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = onPostgres
      ? await freshDatabase()
      : { url: `sqlite:${mkdtempSync(join(tmpdir(), 'svc-plugins-db-'))}/svc.db`, drop: async () => {} };
  });
  afterAll(() => database.drop());

  it('upserts by name across start-ups', async () => {
    const dir = pluginDir();
    dir.write('plain/index.mjs', pluginModule(simpleManifest('plain'), '{ run: () => "ok" }'));

    const first = await startTestApp({ databaseUrl: database.url, env: { SVC_PLUGIN_DIR: dir.root } });
    const a = client(first, (await admin(first)).headers);
    const definitionId = await a.definitionId('plain');
    const instanceId = await a.instance('plain');
    expect((await a.invoke(instanceId, { action: 'run' })).json()).toEqual({ output: 'ok' });

    const second = await startTestApp({ databaseUrl: database.url });
    try {
      // A process started with other settings marks it disabled, but does not stop one that loaded it.
      expect((await a.invoke(instanceId, { action: 'run' })).json()).toEqual({ output: 'ok' });
      await first.close();
      const b = client(second, (await admin(second)).headers);
      const gone = (await b.definitions('name=plain')).json().plugin_definitions[0];
      expect(gone).toMatchObject({ id: definitionId, enabled: false });
      expect((await b.definitions('enabled=false')).json().total).toBe(1);
      const invoked = await b.invoke(instanceId, { action: 'run' });
      expect(invoked.status).toBe(422);
      expect(invoked.json()).toMatchObject({ code: 'PLUGIN.DEFINITION_DISABLED' });
      const created = await b.create({
        plugin_definition_id: definitionId,
        display_name: 'x',
        enabled: true,
      });
      expect(created.status).toBe(422);
      expect(created.json().code).toBe('PLUGIN.DEFINITION_DISABLED');
      // The instance itself is untouched and still readable.
      expect((await b.get(instanceId)).json()).toMatchObject({ id: instanceId, enabled: true });
      expect(second.logText()).toContain('"disabled_plugins":["plain"]');
    } finally {
      await second.close();
    }

    const third = await startTestApp({ databaseUrl: database.url, env: { SVC_PLUGIN_DIR: dir.root } });
    try {
      const c = client(third, (await admin(third)).headers);
      const back = (await c.definitions('name=plain')).json();
      expect(back.total).toBe(1);
      expect(back.plugin_definitions[0]).toMatchObject({ id: definitionId, enabled: true });
      expect((await c.invoke(instanceId, { action: 'run' })).json()).toEqual({ output: 'ok' });
    } finally {
      await third.close();
    }
  });
});

describe(`service plugins in SVC_PLUGIN_SERVICES (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let server: Server;
  let base: string;
  const received: Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown> }> = [];
  const manifest = {
    name: 'remote',
    version: '4.0.0',
    dist_name: 'remote-plugin-service',
    dist_commit: 'f'.repeat(40),
    instance_config_schema: {
      type: 'object',
      required: ['api_key'],
      properties: { api_key: { type: 'string' } },
      additionalProperties: false,
    },
    actions: [
      {
        name: 'greet',
        title: 'Greet',
        description: 'Says hello',
        input_schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        output_schema: { type: 'object', required: ['greeting'] },
        idempotent: true,
        timeout_seconds: 5,
      },
      { name: 'explode', input_schema: {}, output_schema: {}, idempotent: false, timeout_seconds: 5 },
      { name: 'slow', input_schema: {}, output_schema: {}, idempotent: false, timeout_seconds: 1 },
      { name: 'no_output', input_schema: {}, output_schema: {}, idempotent: false, timeout_seconds: 5 },
    ],
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/svc/manifest') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(manifest));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/svc/invoke') {
        res.writeHead(404).end();
        return;
      }
      let raw = '';
      req.on('data', (c) => {
        raw += c;
      });
      req.on('end', () => {
        const body = JSON.parse(raw) as { action: string; input: { name: string } };
        received.push({ headers: req.headers, body });
        const json = (status: number, value: unknown) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
        if (body.action === 'greet') return json(200, { output: { greeting: `hello ${body.input.name}` } });
        if (body.action === 'explode') return json(500, { error: { message: 'database is down' } });
        if (body.action === 'no_output') return json(200, { result: 1 });
        // slow: never answers; the invocation times out.
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/svc`;
    t = await startTestApp({ env: { SVC_PLUGIN_SERVICES: `${base}/ , http://127.0.0.1:1/down` } });
    api = client(t, (await admin(t)).headers);
    await api.vault('remote_key', 'remote-api-key-value');
  });
  afterAll(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('lists the service definition from its manifest; an unreachable service is logged and left out', async () => {
    const res = await api.definitions('runtime=service');
    expect(res.json().total).toBe(1);
    expect(res.json().plugin_definitions[0]).toMatchObject({
      name: 'remote',
      version: '4.0.0',
      runtime: 'service',
      entrypoint: base,
      plugin_key: `service:${base}`,
      dist_name: 'remote-plugin-service',
      dist_commit: 'f'.repeat(40),
      enabled: true,
    });
    expect(res.json().plugin_definitions[0].actions[0]).toMatchObject({
      name: 'greet',
      title: 'Greet',
      idempotent: true,
    });
    const down = t.logs.find((l) => l.msg === 'plugin service not loaded');
    expect(down).toMatchObject({ plugin_service: 'http://127.0.0.1:1/down' });
  });

  it('invokes through POST <base>/invoke with the resolved config, the input and the idempotency key', async () => {
    const id = await api.instance('remote', { api_key: '$secret:remote_key' });
    const res = await api.invoke(
      id,
      { action: 'greet', payload: { name: 'Ada' } },
      { 'idempotency-key': 'k-1' },
    );
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ output: { greeting: 'hello Ada' } });
    const last = received.at(-1)!;
    expect(last.body).toEqual({
      plugin: 'remote',
      action: 'greet',
      config: { api_key: 'remote-api-key-value' },
      input: { name: 'Ada' },
      idempotency_key: 'k-1',
    });
    expect(last.headers['idempotency-key']).toBe('k-1');
    expect(last.headers['content-type']).toBe('application/json');
    expect(t.logText()).not.toContain('remote-api-key-value');
  });

  it('a service error, a missing output and a silent service map to documented codes', async () => {
    const id = await api.instance('remote', { api_key: 'literal-key' });
    const failed = await api.invoke(id, { action: 'explode' });
    expect(failed.status).toBe(502);
    expect(failed.json()).toEqual({
      code: 'PLUGIN.INVOCATION_FAILED',
      message: 'remote.explode failed: plugin service answered 500: database is down',
    });
    const noOutput = await api.invoke(id, { action: 'no_output' });
    expect(noOutput.status).toBe(502);
    expect(noOutput.json().message).toBe(
      'remote.no_output failed: plugin service answered 200 without an "output" field',
    );
    const slow = await api.invoke(id, { action: 'slow' });
    expect(slow.status).toBe(504);
    expect(slow.json().code).toBe('PLUGIN.TIMEOUT');
    const invalid = await api.invoke(id, { action: 'greet', payload: { name: 5 } });
    expect(invalid.status).toBe(400);
    expect(invalid.json().code).toBe('PLUGIN.INVALID_INPUT');
  });
});

describe(`plugin settings (${dialectName})`, () => {
  it('SVC_PLUGIN_SERVICES takes comma-separated http(s) URLs and refuses anything else', () => {
    expect(
      loadConfig({ SVC_PLUGIN_SERVICES: ' https://a.test/x/ ,http://b.test:81,' }).pluginServices,
    ).toEqual(['https://a.test/x/', 'http://b.test:81']);
    expect(loadConfig({}).pluginServices).toEqual([]);
    expect(() => loadConfig({ SVC_PLUGIN_SERVICES: 'https://a.test,ftp://b.test' })).toThrow(
      'SVC_PLUGIN_SERVICES must use https: or http:, got "ftp:"',
    );
    expect(() => loadConfig({ SVC_PLUGIN_SERVICES: 'not a url' })).toThrow(
      'SVC_PLUGIN_SERVICES must be a URL',
    );
  });

  it('a missing SVC_PLUGIN_DIR is logged and the built-ins still load', async () => {
    const t = await startTestApp({ env: { SVC_PLUGIN_DIR: join(tmpdir(), 'svc-no-such-plugin-dir') } });
    try {
      const api = client(t, (await admin(t)).headers);
      expect(pluck((await api.definitions()).json().plugin_definitions, 'name')).toEqual([
        'core',
        'email',
        'http',
      ]);
      expect(
        t.logs.find((l) => l.msg === 'SVC_PLUGIN_DIR is not a directory; no package plugins loaded'),
      ).toBeDefined();
    } finally {
      await t.close();
    }
  });
});
