import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, settle, startWorkflowApp, workflow } from './helpers.js';

/** docs/workflows.md "WAIT_EVENT": many runs waiting, each resumed by its own event, none by another's. */
describe(`WAIT_EVENT at volume (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  const PAID = 'com.example.invoice.paid';
  const COUNT = 10_000;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
    expect((await a.call('POST', '/event_definition', { event_type: PAID })).status).toBe(200);
  });
  afterAll(() => t.close());

  /** Publishes `count` svc.user.created events (500 to a transaction), the i-th for user `k<i>`. */
  async function users(count: number): Promise<void> {
    for (let i = 0; i < count; i += 500) {
      await t.ctx.store.transaction(async (tx) => {
        for (let j = i; j < Math.min(count, i + 500); j++) {
          await t.ctx.services.events.publish(tx, {
            type: 'svc.user.created',
            source: '/api/v1/user',
            subject: `k${j}`,
            data: { user_id: `k${j}`, email: `k${j}@example.test` },
          });
        }
      });
      await settle(t);
    }
  }

  /** POSTs `count` payments through `POST /event` (batches of 100), the i-th for invoice `k<i>`. */
  async function payments(count: number): Promise<void> {
    for (let i = 0; i < count; i += 100) {
      const batch = Array.from({ length: Math.min(100, count - i) }, (_, j) => ({
        specversion: '1.0',
        id: `pay-${i + j}`,
        source: '/payments',
        type: PAID,
        data: { invoice: `k${i + j}` },
      }));
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/event',
        headers: { ...a.h, 'content-type': 'application/cloudevents-batch+json' },
        payload: JSON.stringify(batch),
      });
      expect(res.statusCode, res.body).toBe(202);
      if ((i / 100) % 5 === 4 || i + 100 >= count) await settle(t);
    }
  }

  it(`${COUNT} waiting runs are resumed by ${COUNT} events, each by its own`, async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'wait',
          type: 'WAIT_EVENT',
          config: {
            event_type: PAID,
            correlation: { run: { var: 'event.data.user_id' }, event: { var: 'event.data.invoice' } },
            timeout_ms: 86_400_000,
          },
        },
        {
          key: 'check',
          type: 'COMPUTE',
          config: {
            logic: { '==': [{ var: 'nodes.wait.output.event.data.invoice' }, { var: 'event.data.user_id' }] },
          },
        },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'check' }],
    });
    await users(COUNT);
    const count = async (status: string) =>
      (await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}&status=${status}&limit=1`)).body
        .total;
    expect(await count('running')).toBe(COUNT);
    await payments(COUNT);
    expect(await count('completed')).toBe(COUNT);
    // Each run saw its own event: the COMPUTE compares the event's key with the run's.
    const rows = await t.ctx.store.db
      .selectFrom('workflow_run_node')
      .innerJoin('workflow_run', 'workflow_run.id', 'workflow_run_node.workflow_run_id')
      .select(['workflow_run_node.output'])
      .where('workflow_run.event_subscription_id', '=', wf.id)
      .where('workflow_run_node.node_key', '=', 'check')
      .execute();
    expect(rows).toHaveLength(COUNT);
    expect(rows.every((r) => JSON.parse(r.output as string).result === true)).toBe(true);
  }, 300_000);
});
