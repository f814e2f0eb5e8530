import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, settle, workflow } from './helpers.js';

/**
 * Legitimate traffic at any rate is never paused or dropped by default (docs/workflows.md "Loop
 * safety"): on a server with its defaults, 10,000 events posted through POST /event in batches, as
 * fast as they are accepted, each run their subscription's workflow, and the subscription stays on.
 */
describe(`a flood of user events on a default server (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  const TYPE = 'com.example.order.created';

  beforeAll(async () => {
    t = await startTestApp();
    a = await api(t);
    expect((await a.call('POST', '/event_definition', { event_type: TYPE })).status).toBe(200);
  });
  afterAll(() => t.close());

  it('runs all 10,000 events and keeps the subscription enabled', async () => {
    const wf = await workflow(
      a,
      { nodes: [{ key: 'total', type: 'COMPUTE', config: { logic: { var: 'event.data.total' } } }] },
      { event_type: TYPE },
    );
    const EVENTS = 10_000;
    const BATCH = 100;
    const posts = [];
    for (let b = 0; b < EVENTS / BATCH; b++) {
      const events = Array.from({ length: BATCH }, (_, i) => ({
        specversion: '1.0',
        id: `order-${b * BATCH + i}`,
        source: 'https://shop.example.com/orders',
        type: TYPE,
        data: { total: b * BATCH + i },
      }));
      posts.push(
        t.app.inject({
          method: 'POST',
          url: '/api/v1/event',
          headers: { ...a.h, 'content-type': 'application/cloudevents-batch+json' },
          payload: JSON.stringify(events),
        }),
      );
    }
    for (const res of await Promise.all(posts)) expect(res.statusCode).toBe(202);
    await settle(t);

    const count = async (status: string) =>
      (await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}&status=${status}&limit=1`)).body
        .total;
    expect(await count('completed')).toBe(EVENTS);
    expect(await count('skipped')).toBe(0);
    const sub = (await a.call('GET', `/event_subscription/${wf.id}`)).body;
    expect(sub).toMatchObject({ enabled: true, paused_reason: null, paused_at: null });
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).not.toContain('svc_workflow_runs_refused_total{');
  }, 120_000);
});
