import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { outboxEvents } from '../events/helpers.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  api,
  job,
  nodesOf,
  onlyRun,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';
import { pluginCalls } from './plugin.js';

/**
 * Run control (docs/workflows.md "Run control") through HTTP and the real engine: cancel during a
 * DELAY and during an ACTION, re-run on the current graph, retry from the failed node.
 */
describe(`run control: cancel, rerun, retry (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-05-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  const post = (runId: string, verb: string) => a.call('POST', `/workflow_run/${runId}/${verb}`);

  it('cancels a run waiting in a 30-day DELAY: it ends at once and never resumes', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'wait', type: 'DELAY', config: { delay_ms: 30 * 24 * 3600 * 1000 } },
        { key: 'after', type: 'COMPUTE', config: { logic: 1 } },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'after' }],
    });
    await publish(t);
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');

    const cancelled = await post(run.id, 'cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      id: run.id,
      status: 'cancelled',
      error: expect.stringMatching(/^cancelled by user /),
      completed_at: expect.any(String),
    });
    const nodes = await nodesOf(a, run.id);
    expect(nodes.wait).toMatchObject({ status: 'failed', resume_at: null });
    expect(nodes.wait.error).toMatch(/^cancelled while running/);
    expect(nodes.after).toMatchObject({
      status: 'skipped',
      skip_reason: { message: 'cancelled: the run was cancelled before this node ran', edges: [] },
    });
    // The timer is gone: 31 days later nothing runs.
    clock.advance(31 * 24 * 3600 * 1000);
    await settle(t);
    a = await api(t); // a new sign-in: the old access token expired in those 31 days
    expect((await a.call('GET', `/workflow_run/${run.id}`)).body.status).toBe('cancelled');
    expect((await nodesOf(a, run.id)).after.status).toBe('skipped');
    const again = await post(run.id, 'cancel');
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'WORKFLOW.RUN_FINISHED', details: { status: 'cancelled' } });
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('cancels a run during an ACTION call: the call is neither recorded nor retried', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'hang', input_mapping: { ms: 400 } },
          retry_policy: { max_attempts: 3, backoff: 'fixed', base_seconds: 0 },
        },
      ],
    });
    const callsBefore = pluginCalls().filter((c) => c.action === 'hang').length;
    await publish(t);
    while (await job(t, 'outbox').run()) {}
    // The workflows job starts the call and waits for it; cancel meanwhile.
    const step = job(t, 'workflows').run();
    let runId = '';
    for (let i = 0; i < 100 && !runId; i++) {
      const runs = await runsOf(a, wf.id);
      const nodes = runs[0] ? await nodesOf(a, runs[0].id) : {};
      if (nodes.call?.status === 'running') runId = runs[0].id;
      else await new Promise((r) => setTimeout(r, 10));
    }
    expect(runId).not.toBe('');
    const cancelled = await post(runId, 'cancel');
    expect(cancelled.body.status).toBe('cancelled');
    await step;
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('cancelled');
    expect(nodes.call.status).toBe('failed');
    expect(nodes.call.output).toBeNull();
    expect(nodes.call.error).toContain('not retried');
    expect(pluginCalls().filter((c) => c.action === 'hang').length).toBe(callsBefore + 1);
    expect(t.logs.some((l) => l.msg === 'workflow engine: lease lost; another worker has the run')).toBe(
      true,
    );
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('reruns a run on the same event and the current graph, linked by rerun_of', async () => {
    const wf = await workflow(a, {
      nodes: [{ key: 'v', type: 'COMPUTE', config: { logic: 'first graph' } }],
    });
    await publish(t);
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    await a.call('PUT', `/event_subscription/${wf.id}/graph`, {
      nodes: [{ key: 'v', type: 'COMPUTE', config: { logic: 'second graph' } }],
      edges: [],
    });
    const rerun = await post(run.id, 'rerun');
    expect(rerun.status).toBe(200);
    expect(rerun.body).toMatchObject({
      rerun_of: run.id,
      event_id: run.event_id,
      trigger_event: run.trigger_event,
      graph_version: run.graph_version + 1,
      status: 'running',
    });
    expect(rerun.body.id).not.toBe(run.id);
    await settle(t);
    const runs = await runsOf(a, wf.id);
    expect(runs).toHaveLength(2);
    const again = runs.find((r) => r.id === rerun.body.id);
    expect(again.status).toBe('completed');
    expect((await nodesOf(a, again.id)).v.output).toEqual({ result: 'second graph' });
    expect((await nodesOf(a, run.id)).v.output).toEqual({ result: 'first graph' });
    // The event handed over again still starts no second run of its own.
    expect(runs.filter((r) => r.rerun_of === null)).toHaveLength(1);
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('cancels many: the open runs of a subscription, or a list of ids', async () => {
    const wf = await workflow(a, {
      nodes: [{ key: 'wait', type: 'DELAY', config: { delay_ms: 3_600_000 } }],
    });
    for (let i = 0; i < 3; i++) await publish(t);
    await settle(t);
    const open = (await runsOf(a, wf.id)).map((r) => r.id).sort();
    expect(open).toHaveLength(3);
    const bulk = (body: unknown) => a.call('POST', '/workflow_run/cancel', body);
    const first = await bulk({ run_ids: [open[0]] });
    expect(first.body).toEqual({ cancelled: [open[0]], has_more: false });
    const rest = await bulk({ event_subscription_id: wf.id });
    expect(rest.status).toBe(200);
    expect([...rest.body.cancelled].sort()).toEqual(open.slice(1));
    expect((await bulk({ event_subscription_id: wf.id })).body).toEqual({ cancelled: [], has_more: false });
    expect((await runsOf(a, wf.id)).every((r) => r.status === 'cancelled')).toBe(true);
    expect((await bulk({})).status).toBe(400);
    expect((await bulk({ run_ids: [open[0]], event_subscription_id: wf.id })).status).toBe(400);
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('replays the events of a time range to one subscription, its filters applied, in pages', async () => {
    clock.advance(1000); // past the events the other tests published
    const start = clock.now().toISOString();
    await publish(t, { replay: 'yes' }); // handled before the subscription exists: no run
    await settle(t);
    clock.advance(60_000);
    const wf = await workflow(
      a,
      { nodes: [{ key: 'v', type: 'COMPUTE', config: { logic: { var: 'event.data.replay' } } }] },
      { condition_jsonlogic: { '==': [{ var: 'event.data.replay' }, 'yes'] } },
    );
    await publish(t, { replay: 'yes' }); // gets its run
    clock.advance(60_000);
    await publish(t, { replay: 'no' }); // turned away by the condition
    await settle(t);
    const before = await runsOf(a, wf.id);
    expect(before).toHaveLength(1);
    const end = clock.now().toISOString();

    const replay = (body: Record<string, unknown>) =>
      a.call('POST', `/event_subscription/${wf.id}/replay`, body);
    const paged = await replay({ from: start, to: end, limit: 1 });
    expect(paged.status).toBe(200);
    expect(paged.body.run_ids).toHaveLength(1);
    expect(paged.body.next_from).toEqual(expect.any(String));
    const rest = await replay({ from: paged.body.next_from, to: end });
    expect(rest.body).toMatchObject({ skipped: 1, next_from: null });
    expect(rest.body.run_ids).toHaveLength(1);
    await settle(t);
    const after = await runsOf(a, wf.id);
    expect(after).toHaveLength(3);
    expect(after.every((r) => r.status === 'completed')).toBe(true);
    // The event that had no run got its first; the one that had, a re-run of it.
    const original = before[0];
    expect(after.filter((r) => r.rerun_of === original.id)).toHaveLength(1);
    expect(after.filter((r) => r.rerun_of === null)).toHaveLength(2);
    expect((await replay({ from: end, to: start })).status).toBe(400);
    expect(
      (
        await a.call('POST', '/event_subscription/00000000-0000-4000-8000-000000000000/replay', {
          from: start,
          to: end,
        })
      ).status,
    ).toBe(404);
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('retries a failed run from its failed node, keeping what completed', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'first', type: 'COMPUTE', config: { logic: { '+': [1, 1] } } },
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'flaky', input_mapping: { fail_times: 1 } },
        },
        { key: 'last', type: 'COMPUTE', config: { logic: { var: 'nodes.first.output.result' } } },
      ],
      edges: [
        { from_node_id: 'first', to_node_id: 'call' },
        { from_node_id: 'call', to_node_id: 'last' },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes: before } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(before.call.status).toBe('failed');
    expect(before.last.status).toBe('pending');
    expect((await post(run.id, 'rerun')).status).toBe(200);
    await settle(t);

    clock.advance(1000);
    const retried = await post(run.id, 'retry');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: run.id, status: 'running', error: null, completed_at: null });
    await settle(t);
    const after = await nodesOf(a, run.id);
    expect((await a.call('GET', `/workflow_run/${run.id}`)).body.status).toBe('completed');
    // The completed node was not run again: same completion time, same output.
    expect(after.first).toMatchObject({
      status: 'completed',
      completed_at: before.first.completed_at,
      output: { result: 2 },
    });
    expect(after.call).toMatchObject({ status: 'completed', attempts: 1, error: null });
    expect(after.last).toMatchObject({ status: 'completed', output: { result: 2 } });
    const again = await post(run.id, 'retry');
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('WORKFLOW.RUN_NOT_FAILED');
    expect((await post('00000000-0000-4000-8000-000000000000', 'retry')).status).toBe(404);
    expect((await post('00000000-0000-4000-8000-000000000000', 'cancel')).status).toBe(404);
  });
});

/**
 * Run events (docs/workflows.md "Run events"): a failed or cancelled run publishes its event with its
 * end; a completed run only while something names svc.workflow_run.completed.
 */
describe(`run events (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
  });
  afterAll(() => t.close());

  const published = (type: string) => outboxEvents(t, { type });

  it('publishes svc.workflow_run.failed and .cancelled always, .completed while a subscription names it', async () => {
    const failing = await workflow(a, {
      nodes: [{ key: 'bad', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.word' }] } } }],
    });
    await publish(t, { word: 'w' });
    await settle(t);
    const { run } = await onlyRun(a, failing.id);
    expect(run.status).toBe('failed');
    const [failed] = await published('svc.workflow_run.failed');
    expect(failed).toMatchObject({
      source: '/api/v1/workflow_run',
      subject: run.id,
      causationid: run.id,
      svcdepth: 1,
      data: {
        workflow_run_id: run.id,
        event_subscription_id: failing.id,
        status: 'failed',
        error: run.error,
        event_id: run.event_id,
        event_type: 'svc.user.created',
      },
    });
    await a.call('PATCH', `/event_subscription/${failing.id}`, { enabled: false });

    // Nobody names .completed: a completed run publishes nothing.
    const fine = await workflow(a, { nodes: [{ key: 'ok', type: 'COMPUTE', config: { logic: 1 } }] });
    await publish(t);
    await settle(t);
    expect(await published('svc.workflow_run.completed')).toEqual([]);
    // An alerting subscription on .completed (the interest is read again after 5 s).
    const alert = await workflow(
      a,
      { nodes: [{ key: 'seen', type: 'END' }] },
      { event_type: 'svc.workflow_run.completed' },
    );
    await new Promise((r) => setTimeout(r, 5_100));
    await publish(t);
    await settle(t);
    // Exactly one: the alerting run that event started completes too, but reports nothing itself.
    const completed = await published('svc.workflow_run.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0].data).toMatchObject({ status: 'completed', event_subscription_id: fine.id });
    const alerts = await runsOf(a, alert.id);
    expect(alerts.map((r: { status: string }) => r.status)).toEqual(['completed']);

    const waiting = await workflow(a, {
      nodes: [{ key: 'wait', type: 'DELAY', config: { delay_ms: 3_600_000 } }],
    });
    await publish(t);
    await settle(t);
    const [open] = (await runsOf(a, waiting.id)).filter((r) => r.status === 'running');
    await a.call('POST', `/workflow_run/${open.id}/cancel`);
    const cancelled = (await published('svc.workflow_run.cancelled')).find((e) => e.subject === open.id);
    expect(cancelled.data).toMatchObject({
      status: 'cancelled',
      error: expect.stringMatching(/^cancelled by user /),
    });
  }, 20_000);
});
