import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, nodesOf, onlyRun, publish, settle, startWorkflowApp, workflow } from './helpers.js';
import { pluginCalls } from './plugin.js';

/** CONTRACTS §9: retry_policy (attempts, fixed and exponential backoff) and timeout_ms, with a manual clock. */
describe(`retry_policy and timeout_ms (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));
  const at = (ms: number) => new Date(ms).toISOString();

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  const flaky = (
    failTimes: number,
    retry: Record<string, unknown> | null,
    extra: Record<string, unknown> = {},
  ) => ({
    key: 'call',
    type: 'ACTION',
    config: {
      plugin_instance_id: wftest,
      plugin_action: 'flaky',
      input_mapping: { fail_times: failTimes, tag: Math.random() },
    },
    retry_policy: retry,
    ...extra,
  });

  it('without a retry policy a node makes one attempt', async () => {
    const wf = await workflow(a, { nodes: [flaky(1, null)] });
    await publish(t, {});
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.call).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('an input_mapping that cannot be evaluated fails the ACTION at once: no retry, the plugin never called', async () => {
    const recorded = () => pluginCalls().filter((c) => c.action === 'record').length;
    const callsBefore = recorded();
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'record',
            input_mapping: { broken: { '/': [1, { var: 'event.data.missing' }] } },
          },
          retry_policy: { max_attempts: 3, backoff: 'fixed', base_seconds: 0 },
        },
      ],
    });
    await publish(t, {});
    await settle(t);
    clock.advance(10_000);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.call).toMatchObject({ status: 'failed', attempts: 1 });
    expect(nodes.call.error).toMatch(/^input_mapping: /);
    expect(recorded()).toBe(callsBefore);
  });

  it('fixed backoff: waits base_seconds before each retry, as a persisted timer, until an attempt succeeds', async () => {
    const wf = await workflow(a, {
      nodes: [flaky(2, { max_attempts: 3, backoff: 'fixed', base_seconds: 5 })],
    });
    const t0 = clock.now().getTime();
    await publish(t, {});
    await settle(t);
    let { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');
    expect(nodes.call).toMatchObject({
      status: 'running',
      attempts: 1,
      error: 'PLUGIN.INVOCATION_FAILED: wftest.flaky failed: flaky failure 1',
      resume_at: at(t0 + 5_000),
    });
    clock.advance(4_999);
    await settle(t);
    expect((await nodesOf(a, run.id)).call.attempts).toBe(1);
    clock.advance(1);
    await settle(t);
    expect((await nodesOf(a, run.id)).call).toMatchObject({
      status: 'running',
      attempts: 2,
      resume_at: at(t0 + 10_000),
    });
    clock.advance(5_000);
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    expect(run.status).toBe('completed');
    expect(nodes.call).toMatchObject({
      status: 'completed',
      attempts: 3,
      error: null,
      resume_at: null,
      output: { succeeded_on: 3 },
    });
  });

  it('exponential backoff: waits base_seconds x 2^(k-1) before attempt k+1; the last failure fails the node', async () => {
    const wf = await workflow(a, {
      nodes: [flaky(10, { max_attempts: 4, backoff: 'exponential', base_seconds: 2 })],
    });
    const t0 = clock.now().getTime();
    await publish(t, {});
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    const waits: string[] = [];
    let now = t0;
    for (const wait of [2_000, 4_000, 8_000]) {
      const node = (await nodesOf(a, run.id)).call;
      waits.push(node.resume_at);
      expect(node.resume_at).toBe(at(now + wait));
      clock.advance(wait);
      now += wait;
      await settle(t);
    }
    expect(waits).toEqual([at(t0 + 2_000), at(t0 + 6_000), at(t0 + 14_000)]);
    const final = await onlyRun(a, wf.id);
    expect(final.run.status).toBe('failed');
    expect(final.nodes.call).toMatchObject({
      status: 'failed',
      attempts: 4,
      resume_at: null,
      error: 'PLUGIN.INVOCATION_FAILED: wftest.flaky failed: flaky failure 4',
    });
  });

  it('retries with base_seconds 0 immediately, without a timer', async () => {
    const wf = await workflow(a, {
      nodes: [flaky(1, { max_attempts: 2, backoff: 'fixed', base_seconds: 0 })],
    });
    await publish(t, {});
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.call.attempts).toBe(2);
  });

  it('timeout_ms bounds one attempt; a timed-out attempt fails saying so', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          timeout_ms: 50,
          config: { plugin_instance_id: wftest, plugin_action: 'slow', input_mapping: { ms: 5_000 } },
        },
      ],
    });
    await publish(t, {});
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.call).toMatchObject({
      status: 'failed',
      attempts: 1,
      error:
        "attempt 1 timed out after 50 ms (effective timeout: the smaller of timeout_ms 50 and the action's timeout_seconds 1)",
    });
  });

  it("the effective timeout is the action's timeout_seconds when that is smaller than timeout_ms", async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          timeout_ms: 60_000,
          config: { plugin_instance_id: wftest, plugin_action: 'slow', input_mapping: { ms: 4_000 } },
          retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 0 },
        },
      ],
    });
    await publish(t, {});
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    // Each timed-out attempt counts; the retry timed out too.
    expect(nodes.call).toMatchObject({
      status: 'failed',
      attempts: 2,
      error:
        "attempt 2 timed out after 1000 ms (effective timeout: the smaller of timeout_ms 60000 and the action's timeout_seconds 1)",
    });
    expect(pluginCalls().filter((c) => c.action === 'slow' && c.input.ms === 4_000)).toHaveLength(2);
  });

  it('a DELAY whose until_template fails is retried (rendered again), not completed when the backoff ends', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'd',
          type: 'DELAY',
          config: { until_template: '{{ event.data.nope }}' },
          retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 5 },
        },
      ],
    });
    const start = clock.now().getTime();
    await publish(t, {});
    await settle(t);
    let { run, nodes } = await onlyRun(a, wf.id);
    expect(nodes.d).toMatchObject({
      status: 'running',
      attempts: 1,
      resume_at: at(start + 5_000),
      error: 'until_template: event.data.nope has no value',
    });
    clock.advance(5_000);
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    expect(run.status).toBe('failed');
    expect(nodes.d).toMatchObject({
      status: 'failed',
      attempts: 2,
      output: null,
      error: 'until_template: event.data.nope has no value',
      input: { delay_ms: 0, until_template: '{{ event.data.nope }}' },
    });
  });

  it('no run is left running after its last node ended', async () => {
    const rows = await t.ctx.store.db
      .selectFrom('workflow_run')
      .select(['id', 'status', 'wake_at', 'locked_by'])
      .execute();
    for (const r of rows) {
      const nodes = await nodesOf(a, r.id);
      const open = Object.values(nodes).some((n) => n.status === 'running');
      if (r.status === 'running') expect(open).toBe(true);
      else expect(r).toMatchObject({ wake_at: null, locked_by: null });
    }
  });
});
