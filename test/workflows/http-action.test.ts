import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfter } from '../../src/areas/plugins/builtins/http.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, nodesOf, onlyRun, pluginInstance, publish, settle, workflow } from './helpers.js';

/**
 * The `http` action fails like HTTP fails (docs/plugins.md): a 503 fails the attempt, so the node's
 * retry_policy retries it, after the server's Retry-After; a 404 is an answer unless asked otherwise.
 */
describe(`http ACTION failures and retries (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let http: string;
  let server: Server;
  let base: string;
  const hits: Record<string, string[]> = {};
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    // /busy/<n>: 503 with Retry-After: 5 for the first n requests of that path, then 200.
    server = createServer((req, res) => {
      const path = req.url ?? '';
      hits[path] = [...(hits[path] ?? []), String(req.headers['idempotency-key'])];
      const busy = /^\/busy\/(\d+)/.exec(path);
      if (busy && hits[path].length <= Number(busy[1])) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
        return res.end(JSON.stringify({ error: 'busy' }));
      }
      if (path === '/missing')
        return res.writeHead(404, { 'content-type': 'text/plain' }).end('no such thing');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApp({
      clock,
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' },
    });
    a = await api(t);
    http = await pluginInstance(a, 'http');
  });
  afterAll(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const call = (path: string, extra: Record<string, unknown> = {}, node: Record<string, unknown> = {}) => ({
    key: 'call',
    type: 'ACTION',
    config: {
      plugin_instance_id: http,
      plugin_action: 'request',
      input_mapping: { method: 'POST', url: `${base}${path}`, body: { preserve: { hello: 'x' } }, ...extra },
    },
    ...node,
  });

  it('a 503 is retried per retry_policy, after Retry-After, with the same idempotency key', async () => {
    const wf = await workflow(a, {
      nodes: [call('/busy/1', {}, { retry_policy: { max_attempts: 3, backoff: 'fixed', base_seconds: 1 } })],
    });
    await publish(t);
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    const waiting = (await nodesOf(a, run.id)).call;
    expect(waiting).toMatchObject({ status: 'running', attempts: 1 });
    expect(waiting.error).toMatch(
      /^PLUGIN\.UPSTREAM_STATUS: http\.request: POST answered 503; headers \{.*"retry-after":"5".*\}; body \{"error":"busy"\}$/,
    );
    // Retry-After (5 s) wins over the policy's 1 s backoff.
    expect(Date.parse(waiting.resume_at) - clock.now().getTime()).toBe(5_000);
    clock.advance(1_000);
    await settle(t);
    expect(hits['/busy/1']).toHaveLength(1);
    clock.advance(4_000);
    await settle(t);
    const done = await onlyRun(a, wf.id);
    expect(done.run.status).toBe('completed');
    expect(done.nodes.call).toMatchObject({ status: 'completed', attempts: 2, output: { status: 200 } });
    expect(new Set(hits['/busy/1'])).toEqual(new Set([`${run.id}:call`]));
  });

  it('a 404 completes the node by default; fail_on_status ["4xx"] makes it fail', async () => {
    const answer = await workflow(a, { nodes: [call('/missing')] });
    await publish(t);
    await settle(t);
    const { nodes } = await onlyRun(a, answer.id);
    expect(nodes.call).toMatchObject({ status: 'completed', output: { status: 404, body: 'no such thing' } });

    const strict = await workflow(a, { nodes: [call('/missing', { fail_on_status: ['4xx'] })] });
    await publish(t);
    await settle(t);
    const failed = await onlyRun(a, strict.id);
    expect(failed.run.status).toBe('failed');
    expect(failed.nodes.call.error).toContain('PLUGIN.UPSTREAM_STATUS: http.request: POST answered 404;');
    expect(failed.nodes.call.error).toContain('body no such thing');
  });

  it('Retry-After in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-02-01T10:00:00.000Z');
    expect(retryAfter('120', now)).toBe(120_000);
    expect(retryAfter('Sun, 01 Feb 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfter('Sun, 01 Feb 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfter('soon', now)).toBeUndefined();
    expect(retryAfter(undefined, now)).toBeUndefined();
  });
});
