import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';
import { startTestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  api,
  type Json,
  job,
  nodesOf,
  onlyRun,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';

/** docs/workflows.md "CALL": a node that runs another subscription as a child run, through HTTP and the engine. */
describe(`CALL (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-05-01T10:00:00.000Z'));
  const NOTIFY = 'com.example.oncall.notify';
  const PAID = 'com.example.call.paid';
  const HOUR = 3_600_000;

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
    for (const [type, schema] of [
      [
        NOTIFY,
        {
          type: 'object',
          required: ['message'],
          properties: { message: { type: 'string' }, level: { type: 'integer' } },
        },
      ],
      [PAID, { type: 'object', properties: { order_id: { type: 'string' } } }],
    ] as const) {
      const res = await a.call('POST', '/event_definition', { event_type: type, data_schema: schema });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
  });
  afterAll(() => t.close());

  /** The reusable flow: "notify on-call", on its own event type. */
  const notifyFlow = (nodes?: unknown[], edges?: unknown[]) =>
    workflow(
      a,
      {
        nodes: nodes ?? [
          {
            key: 'format',
            type: 'COMPUTE',
            config: { logic: { text: { cat: ['page: ', { var: 'event.data.message' }] } } },
          },
        ],
        edges,
      },
      { event_type: NOTIFY },
    );

  const caller = (
    childId: string,
    extra: Record<string, unknown> = {},
    node: Record<string, unknown> = {},
  ) => ({
    key: 'page',
    type: 'CALL',
    config: {
      subscription_id: childId,
      input: { message: { cat: ['user ', { var: 'event.data.user_id' }] }, level: 2 },
      ...extra,
    },
    ...node,
  });

  const childrenOf = async (runId: string): Promise<Json[]> => {
    const res = await a.call('GET', `/workflow_run?parent_run_id=${runId}&sort_dir=asc`);
    expect(res.status).toBe(200);
    return res.body.runs;
  };

  it('wait true: the child runs the called graph on its own event, and the node completes with its outputs', async () => {
    const child = await notifyFlow();
    // Another subscription on the child's type: a child's trigger event starts only the child.
    const bystander = await notifyFlow();
    const parent = await workflow(a, { nodes: [caller(child.id)] });
    const graph = (await a.call('GET', `/event_subscription/${parent.id}/graph`)).body;
    expect(graph.available_paths).toEqual(
      expect.arrayContaining([
        'nodes.page.output.run_id',
        'nodes.page.output.status',
        'nodes.page.output.outputs',
      ]),
    );
    const event = await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, parent.id);
    expect(run).toMatchObject({ status: 'completed', parent_run_id: null, parent_node_key: null });
    const kids = await childrenOf(run.id);
    expect(kids).toHaveLength(1);
    const kid = kids[0];
    expect(kid).toMatchObject({
      status: 'completed',
      event_subscription_id: child.id,
      parent_run_id: run.id,
      parent_node_key: 'page',
      event_type: NOTIFY,
    });
    expect(kid.trigger_event).toMatchObject({
      type: NOTIFY,
      data: { message: `user ${event.data.user_id}`, level: 2 },
      svcdepth: 1,
      causationid: run.id,
    });
    expect(nodes.page).toMatchObject({
      status: 'completed',
      input: { subscription_id: child.id, run_id: kid.id, input: { level: 2 } },
      output: {
        run_id: kid.id,
        status: 'completed',
        outputs: { format: { text: `page: user ${event.data.user_id}` } },
      },
    });
    expect(await runsOf(a, bystander.id)).toHaveLength(0);
    // The run list filters by parent and answers the link both ways.
    expect((await a.call('GET', `/workflow_run/${kid.id}`)).body.parent_run_id).toBe(run.id);
  });

  it('wait false: the node completes at once with the child run id; the child runs on', async () => {
    const child = await notifyFlow([{ key: 'nap', type: 'DELAY', config: { delay_ms: HOUR } }]);
    const parent = await workflow(a, {
      nodes: [
        caller(child.id, { wait: false }),
        { key: 'after', type: 'COMPUTE', config: { logic: { ok: true } } },
      ],
      edges: [{ from_node_id: 'page', to_node_id: 'after' }],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, parent.id);
    expect(run.status).toBe('completed');
    const [kid] = await childrenOf(run.id);
    expect(nodes.page.output).toEqual({ run_id: kid.id });
    expect(kid.status).toBe('running');
    clock.advance(HOUR);
    await settle(t);
    expect((await a.call('GET', `/workflow_run/${kid.id}`)).body.status).toBe('completed');
  });

  it("a child's failure is retried by the parent's retry_policy with a new child, then fails the node", async () => {
    const child = await notifyFlow([
      {
        key: 'send',
        type: 'ACTION',
        config: { plugin_instance_id: wftest, plugin_action: 'fail_with', input_mapping: { why: 'down' } },
      },
    ]);
    const parent = await workflow(a, {
      nodes: [
        caller(child.id, {}, { retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 60 } }),
      ],
    });
    await publish(t);
    await settle(t);
    let { run, nodes } = await onlyRun(a, parent.id);
    expect(run.status).toBe('running');
    expect(nodes.page).toMatchObject({ status: 'running', attempts: 1 });
    expect(nodes.page.error).toMatch(/^WORKFLOW\.CHILD_RUN_FAILED: child run \S+ failed: node "send"/);
    clock.advance(60_000);
    await settle(t);
    ({ run, nodes } = await onlyRun(a, parent.id));
    expect(run.status).toBe('failed');
    expect(nodes.page).toMatchObject({ status: 'failed', attempts: 2 });
    const kids = await childrenOf(run.id);
    expect(kids.map((k: Json) => k.status)).toEqual(['failed', 'failed']);
    expect(nodes.page.input.run_id).toBe(kids[1].id);
  });

  it('a failure branch reads the child failure as nodes.<key>.error with its code', async () => {
    const child = await notifyFlow([
      {
        key: 'send',
        type: 'ACTION',
        config: { plugin_instance_id: wftest, plugin_action: 'fail_with', input_mapping: {} },
      },
    ]);
    const parent = await workflow(a, {
      nodes: [
        caller(child.id),
        { key: 'fallback', type: 'COMPUTE', config: { logic: { code: { var: 'nodes.page.error.code' } } } },
      ],
      edges: [{ from_node_id: 'page', to_node_id: 'fallback', on_failure: true }],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, parent.id);
    expect(run.status).toBe('completed');
    expect(nodes.fallback.output).toEqual({ code: 'WORKFLOW.CHILD_RUN_FAILED' });
  });

  it('cancelling the parent cancels the child it waits for; cancelling a child fails the waiting node', async () => {
    const child = await notifyFlow([{ key: 'nap', type: 'DELAY', config: { delay_ms: HOUR } }]);
    const parent = await workflow(a, { nodes: [caller(child.id)] });
    await publish(t);
    await publish(t);
    await settle(t);
    const [first, second] = await runsOf(a, parent.id);
    const [kid1] = await childrenOf(first.id);
    const [kid2] = await childrenOf(second.id);
    expect([first.status, kid1.status]).toEqual(['running', 'running']);

    expect((await a.call('POST', `/workflow_run/${first.id}/cancel`)).status).toBe(200);
    const cancelledKid = (await a.call('GET', `/workflow_run/${kid1.id}`)).body;
    expect(cancelledKid.status).toBe('cancelled');
    expect(cancelledKid.error).toBe(`cancelled: its parent run ${first.id} was cancelled`);

    expect((await a.call('POST', `/workflow_run/${kid2.id}/cancel`)).status).toBe(200);
    await settle(t);
    const after = (await a.call('GET', `/workflow_run/${second.id}`)).body;
    expect(after.status).toBe('failed');
    expect((await nodesOf(a, second.id)).page.error).toMatch(
      /^WORKFLOW\.CHILD_RUN_CANCELLED: child run \S+ was cancelled: cancelled by user/,
    );
  });

  it('a parent that fails on another branch cancels the child it was waiting for', async () => {
    const child = await notifyFlow([{ key: 'nap', type: 'DELAY', config: { delay_ms: HOUR } }]);
    const parent = await workflow(a, {
      nodes: [
        caller(child.id),
        { key: 'nap', type: 'DELAY', config: { delay_ms: 60_000 } },
        {
          key: 'boom',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'fail_with', input_mapping: {} },
        },
      ],
      edges: [{ from_node_id: 'nap', to_node_id: 'boom' }],
    });
    await publish(t);
    await settle(t);
    const { run } = await onlyRun(a, parent.id);
    const [kid] = await childrenOf(run.id);
    expect(kid.status).toBe('running');
    clock.advance(60_000);
    await settle(t);
    const { run: ended, nodes } = await onlyRun(a, parent.id);
    expect(ended.status).toBe('failed');
    expect(nodes.page.error).toMatch(/its child run is cancelled$/);
    const gone = (await a.call('GET', `/workflow_run/${kid.id}`)).body;
    expect(gone.status).toBe('cancelled');
    expect(gone.error).toBe(`cancelled: its parent run ${run.id} failed while it ran`);
  });

  it('a child that waits for an event: the parent waits with it, and gets what the event brought', async () => {
    const child = await notifyFlow([
      {
        key: 'wait',
        type: 'WAIT_EVENT',
        config: {
          event_type: PAID,
          correlation: { run: { var: 'event.data.message' }, event: { var: 'event.data.order_id' } },
          timeout_ms: 3 * HOUR,
        },
      },
    ]);
    const parent = await workflow(a, {
      nodes: [
        caller(child.id, { input: { message: { var: 'event.data.order' } } }),
        {
          key: 'report',
          type: 'COMPUTE',
          config: { logic: { got: { var: 'nodes.page.output.outputs.wait.event.data.order_id' } } },
        },
      ],
      edges: [{ from_node_id: 'page', to_node_id: 'report' }],
    });
    await publish(t, { order: 'ord-7' });
    await settle(t);
    const { run } = await onlyRun(a, parent.id);
    const [kid] = await childrenOf(run.id);
    expect([run.status, kid.status]).toEqual(['running', 'running']);
    clock.advance(60_000);
    const sent = await a.call('POST', '/event', {
      specversion: '1.0',
      id: newId(),
      source: '/payments',
      type: PAID,
      data: { order_id: 'ord-7' },
    });
    expect(sent.status).toBe(202);
    await settle(t);
    const done = await onlyRun(a, parent.id);
    const nodes = done.nodes;
    expect(done.run.status).toBe('completed');
    expect(nodes.report.output).toEqual({ got: 'ord-7' });
    expect(nodes.page.output.outputs.wait).toMatchObject({ timed_out: false, event: { type: PAID } });
  });

  it('an input its type refuses fails the node at once; a literal one is refused at save', async () => {
    const child = await notifyFlow();
    const parent = await workflow(a, {
      nodes: [
        caller(
          child.id,
          { input: { message: { var: 'event.data.user_id' }, level: { var: 'event.data.email' } } },
          { retry_policy: { max_attempts: 3, base_seconds: 1 } },
        ),
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, parent.id);
    expect(run.status).toBe('failed');
    expect(nodes.page).toMatchObject({ status: 'failed', attempts: 1 });
    expect(nodes.page.error).toMatch(
      /^EVENT\.INVALID: Event data of com\.example\.oncall\.notify does not match its data_schema: \/level must be integer/,
    );
    expect(await childrenOf(run.id)).toHaveLength(0);

    const sub = await a.call('POST', '/event_subscription', {
      name: `c-${newId().slice(0, 6)}`,
      event_type: 'svc.user.created',
    });
    const refused = await a.call('PUT', `/event_subscription/${sub.body.id}/graph`, {
      nodes: [caller(child.id, { input: { level: 1 } })],
      edges: [],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.details.field).toBe('nodes.0.config.input.message');
    const missing = await a.call('PUT', `/event_subscription/${sub.body.id}/graph`, {
      nodes: [caller('no-such-subscription')],
      edges: [],
    });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/subscription "no-such-subscription" not found/);
  });

  it('a graph that calls itself, directly or through others, is refused at save naming the cycle', async () => {
    const a1 = await notifyFlow();
    const b1 = await notifyFlow([caller(a1.id, { input: { message: 'from b' } })]);
    const self = await a.call('PUT', `/event_subscription/${a1.id}/graph`, {
      nodes: [caller(a1.id, { input: { message: 'again' } })],
      edges: [],
    });
    expect(self.status).toBe(400);
    expect(self.body.details).toMatchObject({
      field: 'nodes.0.config.subscription_id',
      cycle: [a1.id, a1.id],
    });
    const through = await a.call('PUT', `/event_subscription/${a1.id}/graph`, {
      nodes: [
        {
          key: 'each',
          type: 'FOREACH',
          config: { items: [1, 2], call: { subscription_id: b1.id, input: { message: 'loop' } } },
        },
      ],
      edges: [],
    });
    expect(through.status).toBe(400);
    expect(through.body.message).toContain(`the call makes a cycle: ${a1.id} -> ${b1.id} -> ${a1.id}`);
    expect(through.body.details.field).toBe('nodes.0.config.call.subscription_id');
  });

  it('retention keeps a parent while a child it started runs, and lets it go after', async () => {
    const child = await notifyFlow([{ key: 'nap', type: 'DELAY', config: { delay_ms: HOUR } }]);
    const parent = await workflow(
      a,
      { nodes: [caller(child.id, { wait: false })] },
      {
        retention: { completed_runs_seconds: 60, failed_runs_seconds: 60 },
      },
    );
    await publish(t);
    await settle(t);
    const { run } = await onlyRun(a, parent.id);
    expect(run.status).toBe('completed');
    const prune = async () => {
      while (await job(t, 'prune').run()) {}
    };
    clock.advance(120_000);
    await prune();
    expect((await runsOf(a, parent.id)).map((r: Json) => r.id)).toEqual([run.id]);
    clock.advance(HOUR);
    await settle(t);
    expect((await childrenOf(run.id))[0].status).toBe('completed');
    await prune();
    expect(await runsOf(a, parent.id)).toEqual([]);
  });

  it('simulation runs the child in place, with nothing written', async () => {
    const child = await notifyFlow();
    const parent = await workflow(a, {
      nodes: [caller(child.id), caller(child.id, { wait: false }, { key: 'fire' })],
    });
    const res = await a.call('POST', `/event_subscription/${parent.id}/test`, {
      event: {
        specversion: '1.0',
        id: newId(),
        source: '/api/v1/user',
        type: 'svc.user.created',
        data: { user_id: 'u-sim', email: 'sim@example.test' },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const byKey = Object.fromEntries(res.body.nodes.map((n: Json) => [n.key, n]));
    expect(byKey.page.output).toEqual({
      run_id: null,
      status: 'completed',
      outputs: { format: { text: 'page: user u-sim' } },
      simulated: true,
    });
    expect(byKey.fire.output).toEqual({ run_id: null, simulated: true });
    expect(await runsOf(a, child.id)).toHaveLength(0);
  });
});

/** docs/workflows.md "Loop safety": the depth guard holds across calls. */
describe(`CALL and the depth guard (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  const TYPE = 'com.example.depth.step';

  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_WORKFLOW_MAX_DEPTH: '2' } });
    a = await api(t);
    expect((await a.call('POST', '/event_definition', { event_type: TYPE })).status).toBe(200);
  });
  afterAll(() => t.close());

  it('a child one level too deep is not started: its CALL fails with WORKFLOW.DEPTH_EXCEEDED', async () => {
    const leaf = await workflow(
      a,
      { nodes: [{ key: 'x', type: 'COMPUTE', config: { logic: { ok: true } } }] },
      { event_type: TYPE },
    );
    const middle = await workflow(
      a,
      { nodes: [{ key: 'down', type: 'CALL', config: { subscription_id: leaf.id, input: {} } }] },
      { event_type: TYPE },
    );
    const top = await workflow(a, {
      nodes: [{ key: 'down', type: 'CALL', config: { subscription_id: middle.id, input: {} } }],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, top.id);
    expect(run.status).toBe('failed');
    expect(nodes.down.error).toMatch(/^WORKFLOW\.CHILD_RUN_FAILED: /);
    const [mid] = (await a.call('GET', `/workflow_run?parent_run_id=${run.id}`)).body.runs;
    const midNodes = await nodesOf(a, mid.id);
    expect(midNodes.down.error).toBe(
      'WORKFLOW.DEPTH_EXCEEDED: the child run would be 2 runs deep (SVC_WORKFLOW_MAX_DEPTH 2); a workflow that calls itself?',
    );
    expect(await runsOf(a, leaf.id)).toEqual([]);
  });
});
