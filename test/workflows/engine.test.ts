import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/app/runtime.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, job, nodesOf, onlyRun, publish, runsOf, startWorkflowApp, workflow } from './helpers.js';

/** The `workflows` job as a pool: slow ACTIONs do not hold up other runs; a graceful stop waits for them. */
describe(`workflow engine scheduling (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp());
  });
  afterAll(() => t.close());

  it('a run waiting on a slow ACTION does not hold up runs that arrive meanwhile', async () => {
    const slow = await workflow(a, {
      nodes: [
        {
          key: 'slow',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'hang', input_mapping: { ms: 1_500 } },
        },
      ],
    });
    await publish(t, {});
    // The router hands the new run to the engine, which starts its ACTION at once.
    while (await job(t, 'outbox').run()) {}
    const fast = await workflow(
      a,
      { nodes: [{ key: 'quick', type: 'COMPUTE', config: { logic: 1 } }] },
      { event_type: 'svc.user.updated' },
    );
    const userId = (await runsOf(a, slow.id))[0].trigger_event.subject;
    await t.ctx.store.transaction((tx) =>
      t.ctx.services.events.publish(tx, {
        type: 'svc.user.updated',
        source: '/api/v1/user',
        subject: userId,
        data: { user_id: userId, email: 'x@example.test' },
      }),
    );
    while (await job(t, 'outbox').run()) {}
    // The new run is driven while the slow one is in flight.
    expect((await onlyRun(a, fast.id)).run.status).toBe('completed');
    const slowRun = (await runsOf(a, slow.id))[0];
    expect(slowRun.status).toBe('running');
    expect((await nodesOf(a, slowRun.id)).slow.status).toBe('running');
    while (await job(t, 'workflows').run()) {}
    expect((await onlyRun(a, slow.id)).run.status).toBe('completed');
  });

  it('a graceful stop lets the runs in flight finish their ACTION', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'hang_once', input_mapping: { ms: 700 } },
        },
      ],
    });
    const worker = createWorker(t.ctx);
    worker.start();
    await publish(t, {});
    for (let i = 0; i < 200; i++) {
      const [run] = await runsOf(a, wf.id);
      if (run && (await nodesOf(a, run.id)).call.status === 'running') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await worker.stop();
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.call).toMatchObject({ status: 'completed', attempts: 1, output: { done: true } });
  });
});
