import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as fetchWith } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnCli, waitForOutput } from './helpers/cli.js';
import { pluginDir, pluginModule, simpleManifest } from './plugins/helpers.js';

/**
 * Graceful shutdown of the real `svc serve` process (issue: stop accepting, finish in-flight requests,
 * close the store; a second signal exits at once). A package plugin whose action takes 1.5 s keeps a
 * request in flight while the signals arrive.
 */
describe('svc serve shutdown', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  async function serveWithSlowAction() {
    const dir = mkdtempSync(join(tmpdir(), 'svc-shutdown-'));
    const plugins = pluginDir();
    plugins.write(
      'slow/index.mjs',
      pluginModule(
        simpleManifest('slow'),
        // It says when it starts, so the test knows the request is in flight (requests log once answered).
        "{ run: () => { console.log('slow action started'); return new Promise((resolve) => setTimeout(() => resolve({ done: true }), 1500)); } }",
      ),
    );
    const child = spawnCli(['serve'], {
      SVC_DATABASE_URL: `sqlite:${dir}/svc.db`,
      PORT: '0',
      SVC_PLUGIN_DIR: plugins.root,
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: 'root-password',
    });
    cleanups.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      rmSync(plugins.root, { recursive: true, force: true });
    });
    const line = await waitForOutput(child, /listening on/);
    const address = /listening on (http:\/\/[^ ]+)/.exec(line)![1];
    const api = async (method: string, path: string, body?: unknown, token?: string) => {
      const res = await fetch(`${address}/api/v1${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // biome-ignore lint/suspicious/noExplicitAny: the test reads a few fields of several answers
      return { status: res.status, body: (await res.json()) as any };
    };
    const login = await api('POST', '/auth/login/credentials', {
      email: 'root@example.test',
      password: 'root-password',
    });
    const token = login.body.access_token as string;
    const definitions = await api('GET', '/plugin_definition?name=slow', undefined, token);
    const instance = await api(
      'POST',
      '/plugin_instance',
      {
        plugin_definition_id: definitions.body.plugin_definitions[0].id,
        display_name: 'slow',
        enabled: true,
      },
      token,
    );
    expect(instance.status).toBe(200);
    /**
     * Starts the 1.5 s invocation; resolves once the action has started, with the answer still pending
     * (wrapped: an async function would otherwise wait for it).
     */
    const slowRequest = async (): Promise<{ answer: Promise<Response> }> => {
      const arrived = waitForOutput(child, /slow action started/);
      const answer = fetch(`${address}/api/v1/plugin_instance/${instance.body.id}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ action: 'run' }),
      });
      answer.catch(() => {});
      await arrived;
      return { answer };
    };
    return { child, address, slowRequest };
  }

  const exitOf = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  it('SIGTERM: stops accepting, answers the request in flight, closes the store, exits 0', async () => {
    const { child, address, slowRequest } = await serveWithSlowAction();
    const { answer: inFlight } = await slowRequest();
    const exited = exitOf(child);
    const clean = waitForOutput(child, /shut down cleanly/);
    child.kill('SIGTERM');
    await waitForOutput(child, /shutting down: finishing in-flight work/);
    // A new connection is refused while the old request is still being served.
    const fresh = new Agent();
    await expect(fetchWith(`${address}/healthz`, { dispatcher: fresh })).rejects.toThrow();
    await fresh.close();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ output: { done: true } });
    await clean;
    expect(await exited).toBe(0);
  }, 60_000);

  it('a second signal exits at once, without waiting for the request in flight', async () => {
    const { child, slowRequest } = await serveWithSlowAction();
    const { answer: inFlight } = await slowRequest();
    const exited = exitOf(child);
    const second = waitForOutput(child, /second signal: exiting now/);
    child.kill('SIGTERM');
    await waitForOutput(child, /shutting down: finishing in-flight work/);
    child.kill('SIGINT');
    await second;
    expect(await exited).toBe(1);
    // The process was gone before the action's 1.5 s were up: the request never got its answer.
    await expect(inFlight).rejects.toThrow();
  }, 60_000);
});
