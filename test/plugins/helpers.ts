import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestApp } from '../helpers/app.js';

export interface Answer {
  status: number;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads answers of many shapes
  json(): any;
}

/** Calls the API with `headers` and records every answer's body (for leak scans). */
export function client(t: TestApp, headers: Record<string, string>, record: Answer[] = []) {
  async function call(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    extra = {},
  ) {
    const res = await t.app.inject({
      method,
      url: `/api/v1${url}`,
      headers: { ...headers, ...extra },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    const answer = { status: res.statusCode, body: res.body, json: () => res.json() };
    record.push(answer);
    return answer;
  }
  return {
    record,
    call,
    definitions: (query = '') => call('GET', `/plugin_definition${query ? `?${query}` : ''}`),
    /** The id of the definition named `name` (fails the test when absent). */
    async definitionId(name: string): Promise<string> {
      const res = await call('GET', `/plugin_definition?name=${encodeURIComponent(name)}`);
      const found = res.json().plugin_definitions?.[0];
      if (!found) throw new Error(`no plugin definition named ${name}: ${res.body}`);
      return found.id;
    },
    create: (body: Record<string, unknown>) => call('POST', '/plugin_instance', body),
    /** Creates an enabled instance of the definition named `name` and answers its id. */
    async instance(name: string, config?: Record<string, unknown> | null): Promise<string> {
      const res = await call('POST', '/plugin_instance', {
        plugin_definition_id: await this.definitionId(name),
        display_name: `${name} instance`,
        enabled: true,
        ...(config === undefined ? {} : { config_json: config }),
      });
      if (res.status !== 200) throw new Error(`instance not created: ${res.status} ${res.body}`);
      return res.json().id;
    },
    get: (id: string) => call('GET', `/plugin_instance/${id}`),
    list: (query = '') => call('GET', `/plugin_instance${query ? `?${query}` : ''}`),
    patch: (id: string, body: Record<string, unknown>) => call('PATCH', `/plugin_instance/${id}`, body),
    remove: (id: string) => call('DELETE', `/plugin_instance/${id}`),
    invoke: (id: string, body: Record<string, unknown>, extra: Record<string, string> = {}) =>
      call('POST', `/plugin_instance/${id}/invoke`, body, extra),
    /** A short message through a new `email` instance whose SMTP server is `host`:`port` (no auth). */
    async sendMail(host: string, port: number) {
      const id = await this.instance('email', { host, port, from: 'noreply@example.test' });
      return call('POST', `/plugin_instance/${id}/invoke`, {
        action: 'send',
        payload: { to: 'a@example.test', subject: 's', text: 't' },
      });
    },
    vault: (key: string, value: string, kind: 'SECRET' | 'VAR' = 'SECRET') =>
      call('POST', '/vault_entry', { key, kind, value }),
  };
}

/** A fresh directory for plugin folders; `write` creates files under it (parents included). */
export function pluginDir() {
  const root = mkdtempSync(join(tmpdir(), 'svc-plugins-'));
  return {
    root,
    write(path: string, content: string | object) {
      const full = join(root, path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
      return full;
    },
  };
}

/** The source of an ES module exporting `{ manifest, handlers }` as default. */
export function pluginModule(manifest: object, handlers: string): string {
  return `export default { manifest: ${JSON.stringify(manifest)}, handlers: ${handlers} };\n`;
}

/** A minimal manifest with one action `run` (any input, any output). */
export function simpleManifest(name: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    version: '1.0.0',
    instance_config_schema: { type: 'object' },
    actions: [
      {
        name: 'run',
        title: 'Run',
        input_schema: {},
        output_schema: {},
        idempotent: true,
        timeout_seconds: 5,
      },
    ],
    ...extra,
  };
}

/** One field of every item of a list answer. */
export const pluck = (items: Array<Record<string, unknown>>, key: string): unknown[] =>
  items.map((i) => i[key]);
