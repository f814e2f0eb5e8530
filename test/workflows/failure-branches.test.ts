import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, onlyRun, publish, settle, startWorkflowApp, workflow } from './helpers.js';
import { pluginCalls } from './plugin.js';

/** docs/workflows.md "Failure branches": edges with on_failure, through HTTP and the real engine. */
describe(`failure branches (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  /** charge -> ship -> done; charge -(on_failure)-> refund -> done (a JOIN ALL). */
  const shop = (chargeAction: 'fail_with' | 'record', tag: string) => ({
    nodes: [
      {
        key: 'charge',
        type: 'ACTION',
        config: { plugin_instance_id: wftest, plugin_action: chargeAction, input_mapping: { tag } },
        retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 0 },
      },
      {
        key: 'ship',
        type: 'ACTION',
        config: { plugin_instance_id: wftest, plugin_action: 'record', input_mapping: { ship: tag } },
      },
      {
        key: 'refund',
        type: 'ACTION',
        config: {
          plugin_instance_id: wftest,
          plugin_action: 'record',
          input_mapping: {
            refund: tag,
            why: { var: 'nodes.charge.error.message' },
            code: { var: 'nodes.charge.error.code' },
          },
        },
      },
      { key: 'done', type: 'JOIN', config: { mode: 'ALL' } },
    ],
    edges: [
      { from_node_id: 'charge', to_node_id: 'ship' },
      { from_node_id: 'charge', to_node_id: 'refund', on_failure: true },
      { from_node_id: 'ship', to_node_id: 'done' },
      { from_node_id: 'refund', to_node_id: 'done' },
    ],
  });

  it('a charge failing after its retries follows the refund path: the run completes, the ordinary path is skipped', async () => {
    const wf = await workflow(a, shop('fail_with', 'f1'));
    const graph = (await a.call('GET', `/event_subscription/${wf.id}/graph`)).body;
    expect(graph.edges.map((e: { on_failure: boolean }) => e.on_failure)).toEqual([
      false,
      true,
      false,
      false,
    ]);
    expect(graph.available_paths).toEqual(
      expect.arrayContaining(['nodes.charge.error', 'nodes.charge.error.code', 'nodes.charge.error.message']),
    );
    expect(graph.available_paths).not.toContain('nodes.ship.error');
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run).toMatchObject({ status: 'completed', error: null });
    expect(nodes.charge).toMatchObject({ status: 'failed', attempts: 2 });
    expect(nodes.charge.error).toMatch(
      /^PLUGIN.INVOCATION_FAILED: wftest.fail_with failed: rejected: \{"tag":"f1"\}/,
    );
    expect(nodes.ship).toMatchObject({ status: 'skipped' });
    expect(nodes.ship.skip_reason.message).toBe(
      'no incoming edge was taken: "charge" failed and its failure follows its on_failure edges',
    );
    expect(nodes.ship.skip_reason.edges).toEqual([
      expect.objectContaining({ from_node_key: 'charge', not_taken: 'source_failed' }),
    ]);
    expect(nodes.refund).toMatchObject({ status: 'completed' });
    expect(nodes.refund.input).toEqual({
      refund: 'f1',
      why: nodes.charge.error,
      code: 'PLUGIN.INVOCATION_FAILED',
    });
    const refunds = pluginCalls().filter((c) => c.input.refund === 'f1');
    expect(refunds).toHaveLength(1);
    expect(pluginCalls().filter((c) => c.input.ship === 'f1')).toHaveLength(0);
    // A JOIN ALL counts the handled failure's untaken branch as skipped.
    expect(nodes.done).toMatchObject({ status: 'completed' });
    expect(nodes.done.output).toMatchObject({ completed: ['refund'], skipped: ['ship'], failed: [] });
    // The context of the failure path holds the error, as the mapping saw it.
    const ctx = await a.call('POST', `/workflow_run/${run.id}/context`, { node_key: 'refund' });
    expect(ctx.status).toBe(200);
    expect(ctx.body.context.nodes.charge).toEqual({
      output: null,
      error: { code: 'PLUGIN.INVOCATION_FAILED', message: nodes.charge.error },
    });
    expect(ctx.body.available_paths).toContain('nodes.charge.error.message');
  });

  it('a charge that succeeds takes its ordinary path; the on_failure edge is not followed', async () => {
    const wf = await workflow(a, shop('record', 'ok1'));
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.charge.status).toBe('completed');
    expect(nodes.ship.status).toBe('completed');
    expect(nodes.refund).toMatchObject({ status: 'skipped' });
    expect(nodes.refund.skip_reason.message).toBe(
      'no incoming edge was taken: "charge" did not fail, so its on_failure edge is not followed',
    );
    expect(nodes.refund.skip_reason.edges[0].not_taken).toBe('source_did_not_fail');
    expect(nodes.done.output).toMatchObject({ completed: ['ship'], skipped: ['refund'] });
    expect(pluginCalls().filter((c) => c.input.refund === 'ok1')).toHaveLength(0);
  });

  it('an on_failure edge may carry a condition; an error without a code has none in the context', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'charge', type: 'ACTION', config: { plugin_instance_id: wftest, plugin_action: 'record' } },
        { key: 'missing', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.nothing' }] } } },
        {
          key: 'by_code',
          type: 'COMPUTE',
          config: { logic: { code: { var: 'nodes.missing.error.code' } } },
        },
        {
          key: 'by_message',
          type: 'COMPUTE',
          config: { logic: { seen: { var: 'nodes.missing.error.message' } } },
        },
      ],
      edges: [
        { from_node_id: 'charge', to_node_id: 'missing' },
        {
          from_node_id: 'missing',
          to_node_id: 'by_code',
          on_failure: true,
          condition_jsonlogic: { '!!': [{ var: 'nodes.missing.error.code' }] },
        },
        {
          from_node_id: 'missing',
          to_node_id: 'by_message',
          on_failure: true,
          condition_jsonlogic: { in: ['not a number', { var: 'nodes.missing.error.message' }] },
        },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.missing.status).toBe('failed');
    // An expression's error has no code: the condition on the code is false, the one on the message true.
    expect(nodes.missing.error).toMatch(/not a number/);
    expect(nodes.by_code.status).toBe('skipped');
    expect(nodes.by_code.skip_reason.message).toMatch(
      /^every incoming edge has a condition and all 1 evaluated false/,
    );
    expect(nodes.by_message).toMatchObject({ status: 'completed', output: { seen: nodes.missing.error } });
  });

  it('a node without an on_failure edge fails the run, as before', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'charge', type: 'ACTION', config: { plugin_instance_id: wftest, plugin_action: 'fail_with' } },
        { key: 'after', type: 'END' },
      ],
      edges: [{ from_node_id: 'charge', to_node_id: 'after' }],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/^node "charge" \(ACTION\) failed: PLUGIN.INVOCATION_FAILED: /);
    expect(nodes.after.status).toBe('pending');
  });

  it('a failing COMPUTE and an input mapping that cannot be evaluated are handled the same way', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'calc', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.nothing' }] } } },
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'record',
            input_mapping: { bad: { '/': [1, { var: 'event.data.nothing' }] } },
          },
        },
        { key: 'calc_failed', type: 'COMPUTE', config: { logic: { ok: true } } },
        { key: 'call_failed', type: 'END' },
      ],
      edges: [
        { from_node_id: 'calc', to_node_id: 'calc_failed', on_failure: true },
        { from_node_id: 'calc_failed', to_node_id: 'call' },
        { from_node_id: 'call', to_node_id: 'call_failed', on_failure: true },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.calc.status).toBe('failed');
    expect(nodes.calc_failed.status).toBe('completed');
    expect(nodes.call.status).toBe('failed');
    expect(nodes.call.error).toMatch(/^input_mapping: /);
    expect(nodes.call_failed.status).toBe('completed');
  });

  it('refuses on_failure edges that cannot mean anything, with the field named', async () => {
    const sub = await workflow(a, { nodes: [{ key: 'x', type: 'END' }] });
    const put = (nodes: unknown[], edges: unknown[]) =>
      a.call('PUT', `/event_subscription/${sub.id}/graph`, { nodes, edges });
    const withContinue = await put(
      [
        {
          key: 'c',
          type: 'ACTION',
          continue_on_error: true,
          config: { plugin_instance_id: wftest, plugin_action: 'record' },
        },
        { key: 'r', type: 'END' },
      ],
      [{ from_node_id: 'c', to_node_id: 'r', on_failure: true }],
    );
    expect(withContinue.status).toBe(400);
    expect(withContinue.body.code).toBe('WORKFLOW.INVALID_GRAPH');
    expect(withContinue.body.details.field).toBe('edges.0.on_failure');
    expect(withContinue.body.message).toMatch(/continue_on_error/);
    const fromEnd = await put(
      [
        { key: 'e', type: 'END' },
        { key: 'r', type: 'END' },
      ],
      [{ from_node_id: 'e', to_node_id: 'r', on_failure: true }],
    );
    expect(fromEnd.status).toBe(400);
    expect(fromEnd.body.details.field).toBe('edges.0.on_failure');
    const notBoolean = await put(
      [
        { key: 'a', type: 'SWITCH' },
        { key: 'r', type: 'END' },
      ],
      [{ from_node_id: 'a', to_node_id: 'r', on_failure: 'yes' }],
    );
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.body.code).toBe('VALIDATION_ERROR');
  });

  it('the simulation follows a failure branch as the engine does', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'calc', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.nothing' }] } } },
        { key: 'ok', type: 'COMPUTE', config: { logic: { fine: true } } },
        { key: 'recover', type: 'COMPUTE', config: { logic: { why: { var: 'nodes.calc.error.message' } } } },
      ],
      edges: [
        { from_node_id: 'calc', to_node_id: 'ok' },
        { from_node_id: 'calc', to_node_id: 'recover', on_failure: true },
      ],
    });
    const sim = await a.call('POST', `/event_subscription/${wf.id}/test`, {
      event: {
        specversion: '1.0',
        id: 'sim-1',
        type: 'svc.user.created',
        source: '/test',
        data: { user_id: 'u', email: 'u@example.test' },
      },
    });
    expect(sim.status).toBe(200);
    const byKey = Object.fromEntries(sim.body.nodes.map((n: { key: string }) => [n.key, n]));
    expect(sim.body.status).toBe('completed');
    expect(byKey.calc.status).toBe('failed');
    expect(byKey.ok.status).toBe('skipped');
    expect(byKey.recover.status).toBe('completed');
    expect(byKey.recover.output.why).toBe(byKey.calc.error);
  });
});
