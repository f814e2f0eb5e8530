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
  job,
  nodesOf,
  onlyRun,
  pluginInstance,
  publish,
  settle,
  workflow,
} from './helpers.js';

/**
 * docs/workflows.md "FOREACH": a node that runs an action or another subscription per item, in order,
 * at most `concurrency` at once, through HTTP, the engine and a real receiver that counts the calls
 * in flight.
 */
describe(`FOREACH (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let http: string;
  let server: Server;
  let base: string;
  const clock = manualClock(new Date('2026-06-01T10:00:00.000Z'));
  const LINE = 'com.example.foreach.line';
  /** Requests per path, and the most in flight at once per test (`/hold/<ms>/<tag>`). */
  const hits = new Map<string, number>();
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();

  beforeAll(async () => {
    // /hold/<ms>/<tag>/<item>: answers after <ms>; /fail/<tag>/<item>: 500 for item "bad";
    // /flaky/<tag>/<item>: 503 the first time each item asks.
    server = createServer((req, res) => {
      const path = req.url ?? '';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const [, kind, ...rest] = path.split('/');
      const tag = kind === 'hold' ? rest[1] : rest[0];
      const now = (inFlight.get(tag) ?? 0) + 1;
      inFlight.set(tag, now);
      maxInFlight.set(tag, Math.max(maxInFlight.get(tag) ?? 0, now));
      const answer = (status: number, body: unknown) => {
        inFlight.set(tag, (inFlight.get(tag) ?? 1) - 1);
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (kind === 'hold') setTimeout(() => answer(200, { item: rest[2] }), Number(rest[0]));
      else if (kind === 'fail') answer(rest[1] === 'bad' ? 500 : 200, { item: rest[1] });
      else if (kind === 'flaky') answer(hits.get(path) === 1 ? 503 : 200, { item: rest[1] });
      else answer(404, {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApp({
      clock,
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' },
    });
    a = await api(t);
    http = await pluginInstance(a, 'http');
    const res = await a.call('POST', '/event_definition', {
      event_type: LINE,
      data_schema: { type: 'object', required: ['sku'], properties: { sku: { type: 'string' } } },
    });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A FOREACH over the trigger's `items`, calling `<base><path>/<item>` for each. */
  const each = (path: string, config: Record<string, unknown> = {}, node: Record<string, unknown> = {}) => ({
    key: 'each',
    type: 'FOREACH',
    config: {
      items: { var: 'event.data.items' },
      action: {
        plugin_instance_id: http,
        plugin_action: 'request',
        input_mapping: { method: 'GET', url: { cat: [`${base}${path}/`, { var: 'item' }] } },
      },
      ...config,
    },
    ...node,
  });

  const items = (n: number) => Array.from({ length: n }, (_, i) => `i${i}`);

  it('runs every item, at most `concurrency` at once, and answers results in item order', async () => {
    const tag = `c${newId().slice(0, 6)}`;
    const wf = await workflow(a, { nodes: [each(`/hold/15/${tag}`, { concurrency: 4 })] });
    const graph = (await a.call('GET', `/event_subscription/${wf.id}/graph`)).body;
    expect(graph.available_paths).toContain('nodes.each.output.results');
    await publish(t, { items: items(20) });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(maxInFlight.get(tag)).toBe(4);
    expect(nodes.each.input).toEqual({ count: 20, concurrency: 4, on_item_failure: 'fail' });
    expect(nodes.each.progress).toEqual({ total: 20, completed: 20, failed: 0, running: 0 });
    const results = nodes.each.output.results;
    expect(results.map((r: Json) => r.index)).toEqual([...Array(20).keys()]);
    expect(results.map((r: Json) => r.output.body.item)).toEqual(items(20));
    expect(results.every((r: Json) => r.status === 'completed')).toBe(true);
    for (const item of items(20)) expect(hits.get(`/hold/15/${tag}/${item}`)).toBe(1);
  });

  it('on_item_failure fail: stops starting items at the first failure and fails once those in flight end', async () => {
    const tag = `f${newId().slice(0, 6)}`;
    const wf = await workflow(a, {
      nodes: [
        each(`/fail/${tag}`, { concurrency: 1 }),
        { key: 'after', type: 'COMPUTE', config: { logic: { ran: true } } },
      ],
      edges: [{ from_node_id: 'each', to_node_id: 'after' }],
    });
    await publish(t, { items: ['a', 'b', 'bad', 'c', 'd'] });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.each.status).toBe('failed');
    expect(nodes.each.error).toMatch(
      /^WORKFLOW\.ITEM_FAILED: item 2 failed: PLUGIN\.UPSTREAM_STATUS: .*500.*; 2 of 5 items were not started$/,
    );
    expect(nodes.each.progress).toEqual({ total: 5, completed: 2, failed: 1, running: 0 });
    expect(hits.get(`/fail/${tag}/c`)).toBeUndefined();
    expect(nodes.after.status).toBe('pending');
  });

  it('on_item_failure continue: every item runs, the failed ones in the results with their error', async () => {
    const tag = `k${newId().slice(0, 6)}`;
    const wf = await workflow(a, {
      nodes: [each(`/fail/${tag}`, { concurrency: 2, on_item_failure: 'continue' })],
    });
    await publish(t, { items: ['a', 'bad', 'c'] });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    const results = nodes.each.output.results;
    expect(results.map((r: Json) => r.status)).toEqual(['completed', 'failed', 'completed']);
    expect(results[1].error).toMatch(/^PLUGIN\.UPSTREAM_STATUS: /);
    expect(results[1]).not.toHaveProperty('output');
  });

  it("the node's retry_policy applies per item, with each item's own idempotency key", async () => {
    const tag = `r${newId().slice(0, 6)}`;
    const wf = await workflow(a, {
      nodes: [
        each(
          `/flaky/${tag}`,
          { concurrency: 3 },
          { retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 30 } },
        ),
      ],
    });
    await publish(t, { items: ['x', 'y', 'z'] });
    await settle(t);
    let { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');
    expect(nodes.each.progress).toEqual({ total: 3, completed: 0, failed: 0, running: 3 });
    clock.advance(30_000);
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    expect(run.status).toBe('completed');
    for (const item of ['x', 'y', 'z']) expect(hits.get(`/flaky/${tag}/${item}`)).toBe(2);
    expect(nodes.each.output.results.map((r: Json) => r.output.body.item)).toEqual(['x', 'y', 'z']);
  });

  it('a list longer than max_items, or no list at all, fails the node with a clear error', async () => {
    const tooMany = await workflow(a, { nodes: [each('/fail/m', { max_items: 3 })] });
    const notList = await workflow(a, { nodes: [each('/fail/n', { items: { var: 'event.data.email' } })] });
    await publish(t, { items: items(5) });
    await settle(t);
    expect((await onlyRun(a, tooMany.id)).nodes.each.error).toBe(
      'items: 5 items, more than max_items 3 (at most 10000)',
    );
    expect((await onlyRun(a, notList.id)).nodes.each.error).toBe(
      'items: must yield a list, it yielded a string',
    );
    const refused = await a.call('PUT', `/event_subscription/${tooMany.id}/graph`, {
      nodes: [each('/x', { max_items: 20_000 })],
      edges: [],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.details.field).toBe('nodes.0.config.max_items');
    const both = await a.call('PUT', `/event_subscription/${tooMany.id}/graph`, {
      nodes: [each('/x', { call: { subscription_id: tooMany.id } })],
      edges: [],
    });
    expect(both.status).toBe(400);
    expect(both.body.message).toMatch(/exactly one of config\.action or config\.call/);
  });

  it('with call: a child run per item, each waited for, their outputs in the results', async () => {
    const child = await workflow(
      a,
      {
        nodes: [
          { key: 'price', type: 'COMPUTE', config: { logic: { sku: { var: 'event.data.sku' }, ok: true } } },
        ],
      },
      { event_type: LINE },
    );
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'each',
          type: 'FOREACH',
          config: {
            items: { var: 'event.data.items' },
            concurrency: 2,
            call: { subscription_id: child.id, input: { sku: { var: 'item' } } },
          },
        },
      ],
    });
    await publish(t, { items: ['s1', 's2', 's3'] });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    const kids = (await a.call('GET', `/workflow_run?parent_run_id=${run.id}&sort_dir=asc`)).body.runs;
    expect(kids).toHaveLength(3);
    expect(kids.every((k: Json) => k.parent_node_key === 'each' && k.status === 'completed')).toBe(true);
    expect(nodes.each.output.results.map((r: Json) => r.output.outputs.price.sku)).toEqual([
      's1',
      's2',
      's3',
    ]);
    expect(nodes.each.output.results[0].output.run_id).toBe(
      kids.find((k: Json) => k.trigger_event.data.sku === 's1').id,
    );
  });

  it('with call: cancelling the run cancels the child runs of the items in flight', async () => {
    const child = await workflow(
      a,
      { nodes: [{ key: 'nap', type: 'DELAY', config: { delay_ms: 3_600_000 } }] },
      { event_type: LINE },
    );
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'each',
          type: 'FOREACH',
          config: {
            items: { var: 'event.data.items' },
            concurrency: 2,
            call: { subscription_id: child.id, input: { sku: { var: 'item' } } },
          },
        },
      ],
    });
    await publish(t, { items: ['s1', 's2', 's3'] });
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    const children = async () =>
      (await a.call('GET', `/workflow_run?parent_run_id=${run.id}&sort_dir=asc`)).body.runs as Json[];
    expect((await children()).map((k) => k.status)).toEqual(['running', 'running']);
    expect((await a.call('POST', `/workflow_run/${run.id}/cancel`)).status).toBe(200);
    const kids = await children();
    expect(kids.map((k) => k.status)).toEqual(['cancelled', 'cancelled']);
    for (const k of kids) expect(k.error).toBe(`cancelled: its parent run ${run.id} was cancelled`);
    expect((await nodesOf(a, run.id)).each.progress).toEqual({
      total: 3,
      completed: 0,
      failed: 2,
      running: 0,
    });
  });

  it('a retried run runs its failed FOREACH again from the first item', async () => {
    const tag = `t${newId().slice(0, 6)}`;
    // Each item fails the first time it asks: the first item fails the node (no retry policy).
    const wf = await workflow(a, { nodes: [each(`/flaky/${tag}`, { concurrency: 1 })] });
    await publish(t, { items: ['a', 'b'] });
    await settle(t);
    let { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.each.progress).toEqual({ total: 2, completed: 0, failed: 1, running: 0 });
    expect((await a.call('POST', `/workflow_run/${run.id}/retry`)).status).toBe(200);
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    // Item a asks again (its second request succeeds); item b fails its first and the node fails again.
    expect(hits.get(`/flaky/${tag}/a`)).toBe(2);
    expect(hits.get(`/flaky/${tag}/b`)).toBe(1);
    expect(run.status).toBe('failed');
    expect(nodes.each.progress).toEqual({ total: 2, completed: 1, failed: 1, running: 0 });
    expect(nodes.each.error).toMatch(/^WORKFLOW\.ITEM_FAILED: item 1 failed: /);
  });

  it('cancel stops the rest: items not started never run', async () => {
    const tag = `x${newId().slice(0, 6)}`;
    const wf = await workflow(a, {
      nodes: [
        each(`/flaky/${tag}`, { concurrency: 2 }, { retry_policy: { max_attempts: 2, base_seconds: 60 } }),
      ],
    });
    await publish(t, { items: items(6) });
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect((await a.call('POST', `/workflow_run/${run.id}/cancel`)).status).toBe(200);
    clock.advance(120_000);
    await settle(t);
    const nodes = await nodesOf(a, run.id);
    expect(nodes.each.status).toBe('failed');
    expect(nodes.each.progress).toEqual({ total: 6, completed: 0, failed: 2, running: 0 });
    expect([...hits.keys()].filter((p) => p.startsWith(`/flaky/${tag}/`)).sort()).toEqual([
      `/flaky/${tag}/i0`,
      `/flaky/${tag}/i1`,
    ]);
  });

  it('retention removes a run with its items', async () => {
    const wf = await workflow(a, { nodes: [each('/fail/p')] }, { retention: { completed_runs_seconds: 60 } });
    await publish(t, { items: ['a', 'b', 'c'] });
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    const itemRows = () =>
      t.ctx.store.db
        .selectFrom('workflow_run_item')
        .select('id')
        .where('workflow_run_id', '=', run.id)
        .execute();
    expect(await itemRows()).toHaveLength(3);
    clock.advance(61_000);
    while (await job(t, 'prune').run()) {}
    expect(await itemRows()).toHaveLength(0);
    expect((await a.call('GET', `/workflow_run/${run.id}`)).status).toBe(404);
  });

  it('simulation runs the items in place: an action echoes each input, a call runs its child', async () => {
    const child = await workflow(
      a,
      { nodes: [{ key: 'price', type: 'COMPUTE', config: { logic: { sku: { var: 'event.data.sku' } } } }] },
      { event_type: LINE },
    );
    const wf = await workflow(a, {
      nodes: [
        each('/hold/1/sim'),
        {
          key: 'calls',
          type: 'FOREACH',
          config: {
            items: { var: 'event.data.items' },
            call: { subscription_id: child.id, input: { sku: { var: 'item' } } },
          },
        },
      ],
    });
    const res = await a.call('POST', `/event_subscription/${wf.id}/test`, {
      event: {
        specversion: '1.0',
        id: newId(),
        source: '/api/v1/user',
        type: 'svc.user.created',
        data: { user_id: 'u', email: 'u@example.test', items: ['p', 'q'] },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const byKey = Object.fromEntries(res.body.nodes.map((n: Json) => [n.key, n]));
    expect(byKey.each.output.results).toEqual([
      {
        index: 0,
        status: 'completed',
        output: { simulated: true, input: { method: 'GET', url: `${base}/hold/1/sim/p` } },
      },
      {
        index: 1,
        status: 'completed',
        output: { simulated: true, input: { method: 'GET', url: `${base}/hold/1/sim/q` } },
      },
    ]);
    expect(byKey.calls.output.results.map((r: Json) => r.output.outputs.price.sku)).toEqual(['p', 'q']);
    expect(hits.has(`/hold/1/sim/p`)).toBe(false);
  });
});
