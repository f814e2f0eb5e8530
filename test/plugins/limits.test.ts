import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  api,
  type Json,
  nodesOf,
  publish,
  runsOf,
  settle,
  workflow,
} from '../workflows/helpers.js';

/**
 * docs/plugins.md "Limits": a plugin instance's rate_limit and max_concurrency, shared by every ACTION
 * and invoke of the instance, through HTTP, the engine and a real receiver that counts its requests.
 */
describe(`plugin instance limits (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let server: Server;
  let base: string;
  let httpDefinition: string;
  const clock = manualClock(new Date('2026-06-01T10:00:00.000Z'));
  /** Requests per tag, and the most in flight at once per tag (`/<ms>/<tag>/...`). */
  const hits = new Map<string, number>();
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const S = 1000;

  beforeAll(async () => {
    // /<ms>/<tag>/<anything>: answers 200 after <ms> real milliseconds.
    server = createServer((req, res) => {
      const [, ms, tag] = (req.url ?? '').split('/');
      hits.set(tag, (hits.get(tag) ?? 0) + 1);
      inFlight.set(tag, (inFlight.get(tag) ?? 0) + 1);
      maxInFlight.set(tag, Math.max(maxInFlight.get(tag) ?? 0, inFlight.get(tag) ?? 0));
      setTimeout(() => {
        inFlight.set(tag, (inFlight.get(tag) ?? 1) - 1);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }, Number(ms));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApp({
      clock,
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' },
    });
    a = await api(t);
    httpDefinition = (await a.call('GET', '/plugin_definition?name=http')).body.plugin_definitions[0].id;
  });
  afterAll(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function instance(limits: Record<string, unknown>): Promise<string> {
    const res = await a.call('POST', '/plugin_instance', {
      plugin_definition_id: httpDefinition,
      display_name: `limited-${newId().slice(0, 6)}`,
      enabled: true,
      ...limits,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id;
  }

  const invoke = async (id: string, path: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/plugin_instance/${id}/invoke`,
      headers: a.h,
      payload: { action: 'request', payload: { method: 'GET', url: `${base}${path}` } },
    });
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  };

  /** An ACTION calling `<base>/<ms>/<tag>/<event's user id>` through instance `id`. */
  const calling = (id: string, ms: number, tag: string) =>
    workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: id,
            plugin_action: 'request',
            input_mapping: {
              method: 'GET',
              url: { cat: [`${base}/${ms}/${tag}/`, { var: 'event.data.user_id' }] },
            },
          },
        },
      ],
    });

  async function callNodes(subscriptionId: string): Promise<Json[]> {
    const out: Json[] = [];
    for (const run of await runsOf(a, subscriptionId)) out.push((await nodesOf(a, run.id)).call);
    return out;
  }

  it('saves rate_limit and max_concurrency, answers them, changes and removes them, refuses bad ones', async () => {
    const id = await instance({ rate_limit: { limit: 5, period_ms: 1000 }, max_concurrency: 3 });
    const got = (await a.call('GET', `/plugin_instance/${id}`)).body;
    expect(got).toMatchObject({ rate_limit: { limit: 5, period_ms: 1000 }, max_concurrency: 3 });
    const patched = await a.call('PATCH', `/plugin_instance/${id}`, { rate_limit: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ rate_limit: null, max_concurrency: 3 });
    const plain = await instance({});
    expect((await a.call('GET', `/plugin_instance/${plain}`)).body).toMatchObject({
      rate_limit: null,
      max_concurrency: null,
    });
    for (const bad of [
      { max_concurrency: 0 },
      { rate_limit: { limit: 0, period_ms: 1000 } },
      { rate_limit: { limit: 1, period_ms: 86_400_001 } },
      { rate_limit: { limit: 1 } },
      { rate_limit: { limit: 1, period_ms: 10, burst: 2 } },
    ]) {
      const res = await a.call('PATCH', `/plugin_instance/${id}`, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
  });

  it('a manual invoke over the rate limit answers 429 PLUGIN.RATE_LIMITED with Retry-After, and goes once the window passed', async () => {
    const tag = `m${newId().slice(0, 6)}`;
    const id = await instance({ rate_limit: { limit: 2, period_ms: 60 * S } });
    expect((await invoke(id, `/0/${tag}/1`)).status).toBe(200);
    clock.advance(10 * S);
    expect((await invoke(id, `/0/${tag}/2`)).status).toBe(200);
    const refused = await invoke(id, `/0/${tag}/3`);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('PLUGIN.RATE_LIMITED');
    expect(refused.body.details).toMatchObject({ limit: 'rate_limit', retry_after_ms: 50 * S });
    expect(refused.headers['retry-after']).toBe('50');
    expect(hits.get(tag)).toBe(2);
    clock.advance(50 * S);
    expect((await invoke(id, `/0/${tag}/4`)).status).toBe(200);
    expect(hits.get(tag)).toBe(3);
  });

  it('a manual invoke over max_concurrency answers 429 while the other call is in flight', async () => {
    const tag = `k${newId().slice(0, 6)}`;
    const id = await instance({ max_concurrency: 1 });
    const slow = invoke(id, `/300/${tag}/1`);
    await new Promise((r) => setTimeout(r, 100));
    const refused = await invoke(id, `/0/${tag}/2`);
    expect(refused.status).toBe(429);
    expect(refused.body.details.limit).toBe('max_concurrency');
    expect(refused.headers['retry-after']).toBe('2');
    expect((await slow).status).toBe(200);
    expect((await invoke(id, `/0/${tag}/3`)).status).toBe(200);
    expect(hits.get(tag)).toBe(2);
  });

  it('ACTIONs over the rate limit wait their turn, uncounted, spaced by the window, first come first served', async () => {
    const tag = `r${newId().slice(0, 6)}`;
    const id = await instance({ rate_limit: { limit: 2, period_ms: 10 * S } });
    const wf = await calling(id, 0, tag);
    const t0 = clock.now().getTime();
    for (let i = 0; i < 5; i++) await publish(t);
    await settle(t);
    expect(hits.get(tag)).toBe(2);
    let nodes = await callNodes(wf.id);
    expect(nodes.filter((n) => n.status === 'completed')).toHaveLength(2);
    const waiting = nodes.filter((n) => n.status === 'running');
    expect(waiting).toHaveLength(3);
    for (const n of waiting) {
      expect(n.attempts).toBe(0);
      expect(n.waiting_for_limit).toEqual({ limit: 'rate_limit', plugin_instance_id: id });
    }
    // Turns: the third and fourth a window after the first two, the fifth a window after those.
    expect(waiting.map((n) => Date.parse(n.resume_at) - t0).sort((x, y) => x - y)).toEqual([
      10 * S,
      10 * S,
      20 * S,
    ]);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain(`svc_plugin_calls_waiting{plugin_instance_id="${id}",limit="rate_limit"} 3`);

    clock.advance(10 * S);
    await settle(t);
    expect(hits.get(tag)).toBe(4);
    clock.advance(10 * S);
    await settle(t);
    expect(hits.get(tag)).toBe(5);
    nodes = await callNodes(wf.id);
    expect(nodes.every((n) => n.status === 'completed' && n.attempts === 1)).toBe(true);
    expect(nodes.every((n) => n.waiting_for_limit === undefined)).toBe(true);
    const starts = nodes.map((n) => Date.parse(n.started_at) - t0).sort((x, y) => x - y);
    expect(starts).toEqual([0, 0, 10 * S, 10 * S, 20 * S]);
  });

  it('a cancelled run waiting for its turn gives the turn up: the next run takes it', async () => {
    const tag = `c${newId().slice(0, 6)}`;
    const id = await instance({ rate_limit: { limit: 1, period_ms: 10 * S } });
    const wf = await calling(id, 0, tag);
    const t0 = clock.now().getTime();
    // Runs made at one instant of the test's clock list in any order, and either of the first two
    // may win the window: each is known by its event's n, and the one that waits by its node.
    const runsByN = async () =>
      Object.fromEntries((await runsOf(a, wf.id)).map((r: Json) => [r.trigger_event.data.n, r]));
    await publish(t, { n: 1 });
    await publish(t, { n: 2 });
    await settle(t);
    const firstTwo = await runsByN();
    const waits = await Promise.all(
      [1, 2].map(async (n) => (await nodesOf(a, firstTwo[n].id)).call.resume_at),
    );
    expect(waits.filter((w) => w !== null)).toEqual([new Date(t0 + 10 * S).toISOString()]);
    const waiting = waits[0] === null ? 2 : 1;
    expect((await a.call('POST', `/workflow_run/${firstTwo[waiting].id}/cancel`, {})).status).toBe(200);
    await publish(t, { n: 3 });
    await settle(t);
    const third = (await runsByN())[3];
    expect((await nodesOf(a, third.id)).call.resume_at).toBe(new Date(t0 + 10 * S).toISOString());
    clock.advance(10 * S);
    await settle(t);
    expect(hits.get(tag)).toBe(2);
    const statuses = await runsByN();
    expect([1, 2, 3].map((n) => statuses[n].status)).toEqual(
      [1, 2, 3].map((n) => (n === waiting ? 'cancelled' : 'completed')),
    );
  });

  it('max_concurrency: runs over it wait without an attempt and start as slots free, never more in flight', async () => {
    const tag = `n${newId().slice(0, 6)}`;
    const id = await instance({ max_concurrency: 2 });
    const wf = await calling(id, 40, tag);
    for (let i = 0; i < 7; i++) await publish(t);
    await settle(t);
    expect(hits.get(tag)).toBe(7);
    expect(maxInFlight.get(tag)).toBe(2);
    const nodes = await callNodes(wf.id);
    expect(nodes.every((n) => n.status === 'completed' && n.attempts === 1)).toBe(true);
  });

  it('max_concurrency across the items of a FOREACH and a second run: the instance bounds them all', async () => {
    const tag = `f${newId().slice(0, 6)}`;
    const id = await instance({ max_concurrency: 3 });
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'each',
          type: 'FOREACH',
          config: {
            items: { var: 'event.data.items' },
            concurrency: 8,
            action: {
              plugin_instance_id: id,
              plugin_action: 'request',
              input_mapping: { method: 'GET', url: { cat: [`${base}/30/${tag}/`, { var: 'item' }] } },
            },
          },
        },
      ],
    });
    const items = Array.from({ length: 12 }, (_, i) => `i${i}`);
    await publish(t, { items });
    await publish(t, { items });
    await settle(t);
    expect(hits.get(tag)).toBe(24);
    expect(maxInFlight.get(tag)).toBe(3);
    for (const run of await runsOf(a, wf.id)) {
      expect(run.status).toBe('completed');
      const each = (await nodesOf(a, run.id)).each;
      expect(each.progress).toEqual({ total: 12, completed: 12, failed: 0, running: 0 });
    }
  });
});
