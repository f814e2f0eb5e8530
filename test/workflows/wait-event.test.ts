import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdOrWakeRuns } from '../../src/areas/workflows/claim-store.js';
import { manualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  job,
  nodesOf,
  onlyRun,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';

/** docs/workflows.md "WAIT_EVENT": runs that wait for an event, through HTTP, the outbox and the engine. */
describe(`WAIT_EVENT (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-04-01T10:00:00.000Z'));
  const PAID = 'com.example.payment.received';
  const DAY = 86_400_000;
  // Waits of hours: the suite's access tokens last a day of its manual clock.
  const HOUR = 3_600_000;

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
    const created = await a.call('POST', '/event_definition', {
      event_type: PAID,
      data_schema: {
        type: 'object',
        properties: { order_id: { type: 'string' }, amount: { type: 'number' } },
      },
    });
    expect(created.status).toBe(200);
  });
  afterAll(() => t.close());

  /** POST /event of a payment, as an outside system would send it. */
  const paid = async (data: Record<string, unknown>) => {
    const res = await a.call('POST', '/event', {
      specversion: '1.0',
      id: newId(),
      source: '/payments',
      type: PAID,
      data,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
  };

  /** wait -> paid (not timed out) | late (timed out); the key is the user's `order` field. */
  const payment = (extra: Record<string, unknown> = {}) => ({
    nodes: [
      {
        key: 'wait',
        type: 'WAIT_EVENT',
        config: {
          event_type: PAID,
          correlation: { run: { var: 'event.data.order' }, event: { var: 'event.data.order_id' } },
          timeout_ms: 3 * HOUR,
          ...extra,
        },
      },
      {
        key: 'paid',
        type: 'COMPUTE',
        config: { logic: { amount: { var: 'nodes.wait.output.event.data.amount' } } },
      },
      { key: 'late', type: 'COMPUTE', config: { logic: { reminded: true } } },
    ],
    edges: [
      {
        from_node_id: 'wait',
        to_node_id: 'paid',
        condition_jsonlogic: { '!': [{ var: 'nodes.wait.output.timed_out' }] },
      },
      {
        from_node_id: 'wait',
        to_node_id: 'late',
        condition_jsonlogic: { '!!': [{ var: 'nodes.wait.output.timed_out' }] },
      },
    ],
  });

  it('waits running, is not resumed by another key, and is resumed by its own', async () => {
    const wf = await workflow(a, payment());
    const graph = (await a.call('GET', `/event_subscription/${wf.id}/graph`)).body;
    expect(graph.available_paths).toEqual(
      expect.arrayContaining([
        'nodes.wait.output.timed_out',
        'nodes.wait.output.event.data',
        'nodes.wait.output.event.data.amount',
      ]),
    );
    await publish(t, { order: 'o1' });
    await settle(t);
    let { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');
    expect(nodes.wait).toMatchObject({
      status: 'running',
      input: {
        event_type: PAID,
        correlation_key: 'o1',
        timeout_at: new Date(clock.now().getTime() + 3 * HOUR).toISOString(),
      },
      resume_at: new Date(clock.now().getTime() + 3 * HOUR).toISOString(),
    });
    expect(nodes.wait).not.toHaveProperty('wait_key');
    expect(nodes.paid.status).toBe('pending');

    await paid({ order_id: 'o2', amount: 5 });
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    expect(run.status).toBe('running');
    expect(nodes.wait.status).toBe('running');

    clock.advance(60_000);
    await paid({ order_id: 'o1', amount: 42 });
    await settle(t);
    ({ run, nodes } = await onlyRun(a, wf.id));
    expect(run.status).toBe('completed');
    expect(nodes.wait.status).toBe('completed');
    expect(nodes.wait.output.timed_out).toBe(false);
    expect(nodes.wait.output.event).toMatchObject({
      type: PAID,
      source: '/payments',
      data: { order_id: 'o1', amount: 42 },
    });
    expect(nodes.wait.completed_at).toBe(clock.now().toISOString());
    expect(nodes.paid).toMatchObject({ status: 'completed', output: { amount: 42 } });
    expect(nodes.late.status).toBe('skipped');
  });

  it('times out with {event: null, timed_out: true}, and edge conditions route on it', async () => {
    const wf = await workflow(a, payment());
    await publish(t, { order: 'o3' });
    await settle(t);
    clock.advance(3 * HOUR - 1);
    await settle(t);
    expect((await onlyRun(a, wf.id)).run.status).toBe('running');
    clock.advance(1);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.wait).toMatchObject({ status: 'completed', output: { event: null, timed_out: true } });
    expect(nodes.late).toMatchObject({ status: 'completed', output: { reminded: true } });
    expect(nodes.paid.status).toBe('skipped');
    // A payment after the timeout resumes nothing.
    await paid({ order_id: 'o3', amount: 1 });
    await settle(t);
    expect((await nodesOf(a, run.id)).wait.output.timed_out).toBe(true);
  });

  it('without correlation the next event of the type resumes every run waiting for it; one before the wait does not count', async () => {
    const wf = await workflow(a, {
      nodes: [{ key: 'wait', type: 'WAIT_EVENT', config: { event_type: PAID, timeout_ms: DAY } }],
    });
    // Sent before any run waits: it resumes nothing (no look-back).
    await paid({ order_id: 'early', amount: 1 });
    await settle(t);
    await publish(t);
    await publish(t);
    await settle(t);
    expect((await runsOf(a, wf.id)).map((r) => r.status)).toEqual(['running', 'running']);
    await paid({ order_id: 'any', amount: 7 });
    await settle(t);
    const runs = await runsOf(a, wf.id);
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    for (const r of runs) {
      expect((await nodesOf(a, r.id)).wait.output.event.data).toEqual({ order_id: 'any', amount: 7 });
    }
  });

  it('one event resumes every run waiting on its key', async () => {
    const wf = await workflow(a, payment());
    await publish(t, { order: 'shared' });
    await publish(t, { order: 'shared' });
    await publish(t, { order: 'other' });
    await settle(t);
    await paid({ order_id: 'shared', amount: 3 });
    await settle(t);
    expect((await runsOf(a, wf.id)).map((r) => r.status).sort()).toEqual([
      'completed',
      'completed',
      'running',
    ]);
  });

  it('keys are compared as JSON values: 42 and "42" differ', async () => {
    const wf = await workflow(a, payment());
    await publish(t, { order: 42 });
    await settle(t);
    await paid({ order_id: '42', amount: 1 });
    await settle(t);
    expect((await onlyRun(a, wf.id)).run.status).toBe('running');
  });

  it('cancel ends the wait: the node fails saying so and a later event resumes nothing', async () => {
    const wf = await workflow(a, payment());
    await publish(t, { order: 'c1' });
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect((await a.call('POST', `/workflow_run/${run.id}/cancel`, {})).status).toBe(200);
    await paid({ order_id: 'c1', amount: 1 });
    await settle(t);
    const after = await onlyRun(a, wf.id);
    expect(after.run.status).toBe('cancelled');
    expect(after.nodes.wait.status).toBe('failed');
    expect(after.nodes.wait.error).toMatch(/^cancelled while running/);
    expect(after.nodes.paid.status).toBe('skipped');
  });

  it('a key that is not a scalar fails the node at once, naming correlation.run', async () => {
    const wf = await workflow(
      a,
      payment({ correlation: { run: { var: 'event.data' }, event: { var: 'event.data.order_id' } } }),
    );
    await publish(t, { order: 'x' });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.wait.status).toBe('failed');
    expect(nodes.wait.error).toMatch(
      /^correlation\.run: a correlation key must be a string, a number or a boolean, not \{/,
    );
    const throwing = await workflow(
      a,
      payment({
        correlation: { run: { '/': [1, { var: 'event.data.none' }] }, event: { var: 'event.data.order_id' } },
      }),
    );
    await publish(t, { order: 'y' });
    await settle(t);
    const thrown = await onlyRun(a, throwing.id);
    expect(thrown.run.status).toBe('failed');
    expect(thrown.nodes.wait.error).toMatch(/^correlation\.run: arithmetic on a value that is not a number/);
    expect(thrown.nodes.wait.input.correlation_key).toBeNull();
    const missing = await workflow(a, payment());
    await publish(t, {});
    await settle(t);
    expect((await onlyRun(a, missing.id)).nodes.wait.error).toBe(
      'correlation.run: a correlation key must be a string, a number or a boolean, not null (the value is missing)',
    );
  });

  it('an event taking the wait while a worker holds the run (another branch in flight) makes the run due at its release', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'wait',
          type: 'WAIT_EVENT',
          config: {
            event_type: PAID,
            correlation: { run: { var: 'event.data.order' }, event: { var: 'event.data.order_id' } },
            timeout_ms: DAY,
          },
        },
        {
          key: 'slow',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'slow', input_mapping: { ms: 400 } },
        },
        { key: 'both', type: 'JOIN', config: { mode: 'ALL' } },
      ],
      edges: [
        { from_node_id: 'wait', to_node_id: 'both' },
        { from_node_id: 'slow', to_node_id: 'both' },
      ],
    });
    await publish(t, { order: 'held' });
    // The router hands the run to this process's engine, which holds it while `slow` is in flight.
    while (await job(t, 'outbox').run()) {}
    const { run } = await onlyRun(a, wf.id);
    const during = await nodesOf(a, run.id);
    expect(during.slow.status).toBe('running');
    expect(during.wait.status).toBe('running');
    await paid({ order_id: 'held', amount: 9 });
    while (await job(t, 'outbox').run()) {}
    expect((await nodesOf(a, run.id)).wait.status).toBe('completed');
    // The ACTION ends, the engine releases the run until the wait's timeout, finds the wait taken,
    // and the run goes on now: no clock moves here.
    await settle(t);
    const after = await onlyRun(a, wf.id);
    expect(after.run.status).toBe('completed');
    expect(after.nodes.wait.output).toMatchObject({
      timed_out: false,
      event: { data: { order_id: 'held' } },
    });
    expect(after.nodes.both.status).toBe('completed');
  });

  it('refuses configs that cannot wait, naming the field', async () => {
    const sub = await workflow(a, { nodes: [{ key: 'x', type: 'END' }] });
    const put = (config: unknown, extra: Record<string, unknown> = {}) =>
      a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [{ key: 'w', type: 'WAIT_EVENT', config, ...extra }],
      });
    const cases: Array<[unknown, string, RegExp, Record<string, unknown>?]> = [
      [
        { event_type: 'com.example.nope', timeout_ms: 1000 },
        'nodes.0.config.event_type',
        /is not registered/,
      ],
      [{ event_type: PAID }, 'nodes.0.config.timeout_ms', /timeout_ms is required/],
      [{ event_type: PAID, timeout_ms: 0 }, 'nodes.0.config.timeout_ms', /between 1 and/],
      [{ event_type: PAID, timeout_ms: 366 * DAY }, 'nodes.0.config.timeout_ms', /365 days/],
      [{ timeout_ms: 1000 }, 'nodes.0.config.event_type', /event_type is required/],
      [
        { event_type: PAID, timeout_ms: 1000, correlation: { run: { var: 'a' } } },
        'nodes.0.config.correlation.event',
        /required/,
      ],
      [
        { event_type: PAID, timeout_ms: 1000, correlation: { run: { vr: 'a' }, event: { var: 'b' } } },
        'nodes.0.config.correlation.run',
        /not a valid JSONLogic/,
      ],
      [{ event_type: PAID, timeout_ms: 1000, after: 1 }, 'nodes.0.config.after', /does not take "after"/],
      [{ event_type: PAID, timeout_ms: 1000 }, 'nodes.0.timeout_ms', /config.timeout_ms/, { timeout_ms: 5 }],
    ];
    for (const [config, field, message, extra] of cases) {
      const res = await put(config, extra);
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.code).toBe('WORKFLOW.INVALID_GRAPH');
      expect(res.body.details.field).toBe(field);
      expect(res.body.message).toMatch(message);
    }
    expect((await put({ event_type: PAID, timeout_ms: 365 * DAY })).status).toBe(200);
  });

  it('the simulation resumes a WAIT_EVENT with a given event that brings its key, and times it out without one', async () => {
    const wf = await workflow(a, payment());
    const trigger = {
      specversion: '1.0',
      id: 'sim-w',
      source: '/api/v1/user',
      type: 'svc.user.created',
      data: { user_id: 'u', email: 'u@example.test', order: 's1' },
    };
    const event = (orderId: string, amount: number) => ({
      specversion: '1.0',
      id: `p-${orderId}`,
      source: '/payments',
      type: PAID,
      data: { order_id: orderId, amount },
    });
    const byKey = (body: { nodes: Array<{ key: string; status: string; output: unknown }> }) =>
      Object.fromEntries(body.nodes.map((n) => [n.key, n]));
    const resumed = await a.call('POST', `/event_subscription/${wf.id}/test`, {
      event: trigger,
      events: [event('other', 1), event('s1', 12)],
    });
    expect(resumed.status).toBe(200);
    expect(byKey(resumed.body).wait.output).toMatchObject({
      timed_out: false,
      simulated: true,
      event: { id: 'p-s1' },
    });
    expect(byKey(resumed.body).paid).toMatchObject({ status: 'completed', output: { amount: 12 } });
    const timedOut = await a.call('POST', `/event_subscription/${wf.id}/test`, { event: trigger });
    expect(byKey(timedOut.body).wait.output).toEqual({ event: null, timed_out: true, simulated: true });
    expect(byKey(timedOut.body).late.status).toBe('completed');
    // Nothing was persisted or resumed by the simulation.
    expect(await runsOf(a, wf.id)).toEqual([]);
  });
  it('a resume holds for the matching engine only the runs it has room for; the rest are due, a held one is left alone', async () => {
    const wf = await workflow(a, payment());
    for (const order of ['h1', 'h2', 'h3']) await publish(t, { order });
    await settle(t);
    const ids = (await runsOf(a, wf.id)).map((r) => r.id as string);
    expect(ids).toHaveLength(3);
    const at = clock.now().toISOString();
    const later = new Date(clock.now().getTime() + 60_000).toISOString();
    // A third run is held by another worker meanwhile: it is neither taken nor made due.
    await t.ctx.store.db
      .updateTable('workflow_run')
      .set({ locked_by: 'other-worker', wake_at: later })
      .where('id', '=', ids[2])
      .execute();
    const held = await t.ctx.store.transaction((tx) =>
      holdOrWakeRuns(tx.db, tx.dialect, ids, { workerId: 'me', leaseUntil: later, room: 1 }, at),
    );
    expect(held.map((r) => r.id)).toHaveLength(1);
    const rows = await t.ctx.store.db
      .selectFrom('workflow_run')
      .select(['id', 'locked_by', 'wake_at'])
      .where('id', 'in', ids)
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(held[0].id)).toMatchObject({ locked_by: 'me', wake_at: later });
    const due = ids.slice(0, 2).find((id) => id !== held[0].id) as string;
    expect(byId.get(due)).toMatchObject({ locked_by: null, wake_at: at });
    expect(byId.get(ids[2])).toMatchObject({ locked_by: 'other-worker', wake_at: later });
    // Let the runs go again for the suite's other cases.
    await t.ctx.store.db
      .updateTable('workflow_run')
      .set({ locked_by: null, wake_at: later })
      .where('id', 'in', ids)
      .execute();
  });
});
