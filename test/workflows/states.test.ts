import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
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

/** SPEC "Workflow run" and "Workflow run node" state tables: one test per row, through HTTP. */
describe(`workflow state tables (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  describe('workflow run', () => {
    it('(none) -> running: a routed event creates the run and one run-node per graph node, pending until reached', async () => {
      // The run is written with its first persisted step (docs/workflows.md "Durability"): here the
      // DELAY it waits in, with the nodes after it still pending.
      const wf = await workflow(a, {
        nodes: [
          { key: 'a', type: 'DELAY', config: { delay_ms: 60_000 } },
          { key: 'b', type: 'SWITCH' },
          { key: 'c', type: 'END' },
        ],
        edges: [
          { from_node_id: 'a', to_node_id: 'b' },
          { from_node_id: 'b', to_node_id: 'c' },
        ],
      });
      const event = await publish(t, {});
      // Only the outbox drain (the router): its hand-over ends once the run is written.
      while (await job(t, 'outbox').run()) {}
      const [run] = await runsOf(a, wf.id);
      expect(run).toMatchObject({
        status: 'running',
        event_id: event.id,
        event_type: 'svc.user.created',
        trigger_event: event,
        started_at: clock.now().toISOString(),
        completed_at: null,
        error: null,
      });
      const nodes = (await a.call('GET', `/workflow_run/${run.id}/node`)).body.nodes;
      expect(
        nodes.map((n: { node_key: string; status: string; attempts: number; node_id: string }) => [
          n.node_key,
          n.status,
          n.attempts,
          n.node_id,
        ]),
      ).toEqual([
        ['a', 'running', 1, wf.nodeIds.a],
        ['b', 'pending', 0, wf.nodeIds.b],
        ['c', 'pending', 0, wf.nodeIds.c],
      ]);
      clock.advance(60_000);
      await settle(t);
      expect((await a.call('GET', `/workflow_run/${run.id}`)).body.status).toBe('completed');
    });

    it('running -> completed: traversal ends when all nodes finished', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'a', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'b', type: 'COMPUTE', config: { logic: 2 } },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, list } = await onlyRun(a, wf.id);
      expect(run).toMatchObject({
        status: 'completed',
        error: null,
        completed_at: clock.now().toISOString(),
      });
      expect(list.every((n: { status: string }) => n.status === 'completed')).toBe(true);
    });

    it('running -> completed: an END node reached; remaining unvisited nodes are not executed', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'end', type: 'END' },
          { key: 'later', type: 'COMPUTE', config: { logic: 1 } },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      expect(nodes.end.status).toBe('completed');
      expect(nodes.later).toMatchObject({ status: 'pending', output: null, started_at: null });
    });

    it('running -> failed: a node fails with continue_on_error false; the run stops at once', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'ok', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'boom', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.word' }] } } },
          { key: 'next', type: 'COMPUTE', config: { logic: 2 } },
        ],
        edges: [{ from_node_id: 'boom', to_node_id: 'next' }],
      });
      await publish(t, { word: 'x' });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run).toMatchObject({
        status: 'failed',
        error: 'node "boom" (COMPUTE) failed: arithmetic on a value that is not a number (NaN)',
        completed_at: clock.now().toISOString(),
      });
      expect(nodes.ok.status).toBe('completed');
      expect(nodes.boom.status).toBe('failed');
      expect(nodes.next.status).toBe('pending');
    });

    it('running -> running: a node fails with continue_on_error true; the failure is recorded and traversal continues', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'boom',
            type: 'ACTION',
            continue_on_error: true,
            config: { plugin_instance_id: wftest, plugin_action: 'flaky', input_mapping: { fail_times: 5 } },
          },
          { key: 'next', type: 'COMPUTE', config: { logic: { var: 'nodes.boom.output' } } },
        ],
        edges: [{ from_node_id: 'boom', to_node_id: 'next' }],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run).toMatchObject({ status: 'completed', error: null });
      expect(nodes.boom).toMatchObject({
        status: 'failed',
        error: 'PLUGIN.INVOCATION_FAILED: wftest.flaky failed: flaky failure 1',
      });
      // A failed node has no output in the context.
      expect(nodes.next).toMatchObject({ status: 'completed', output: { result: null } });
      expect(
        t.logs.some((l) => l.msg === 'plugin action invoked' && l.outcome === 'PLUGIN.INVOCATION_FAILED'),
      ).toBe(true);
    });
  });

  describe('workflow run node', () => {
    it('pending -> running: a reached node is dispatched by type (a DELAY shows it while it waits)', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'src', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'wait', type: 'DELAY', config: { delay_ms: 30_000 } },
        ],
        edges: [
          {
            from_node_id: 'src',
            to_node_id: 'wait',
            condition_jsonlogic: { '==': [{ var: 'nodes.src.output.result' }, 1] },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('running');
      expect(nodes.wait).toMatchObject({
        status: 'running',
        attempts: 1,
        started_at: clock.now().toISOString(),
        completed_at: null,
        input: { delay_ms: 30_000 },
        output: null,
      });
      clock.advance(30_000);
      await settle(t);
      expect((await nodesOf(a, run.id)).wait.status).toBe('completed');
    });

    it('pending -> skipped: every incoming edge has a condition and all are false', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'src', type: 'SWITCH' },
          { key: 'x', type: 'COMPUTE', config: { logic: 1 } },
        ],
        edges: [{ from_node_id: 'src', to_node_id: 'x', condition_jsonlogic: { var: 'event.data.go' } }],
      });
      await publish(t, { go: false });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      expect(nodes.x).toMatchObject({
        status: 'skipped',
        attempts: 0,
        input: null,
        output: null,
        started_at: null,
      });
      expect(nodes.x.skip_reason.edges).toEqual([
        { edge_id: wf.edgeIds[0], from_node_key: 'src', condition_jsonlogic: { var: 'event.data.go' } },
      ]);
    });

    it('running -> completed: input and output stored (input by type)', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'compute', type: 'COMPUTE', config: { logic: { '+': [1, 1] } } },
          {
            key: 'action',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'record',
              input_mapping: { v: { var: 'nodes.compute.output.result' } },
            },
          },
          { key: 'delay', type: 'DELAY', config: { delay_ms: 0 } },
          { key: 'switch', type: 'SWITCH' },
          { key: 'join', type: 'JOIN' },
          { key: 'end', type: 'END' },
        ],
        edges: [
          { from_node_id: 'compute', to_node_id: 'action' },
          { from_node_id: 'action', to_node_id: 'delay' },
          { from_node_id: 'delay', to_node_id: 'switch' },
          { from_node_id: 'switch', to_node_id: 'join' },
          { from_node_id: 'join', to_node_id: 'end' },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      expect(nodes.compute).toMatchObject({
        status: 'completed',
        input: { logic: { '+': [1, 1] } },
        output: { result: 2 },
      });
      expect(nodes.action).toMatchObject({
        status: 'completed',
        input: { v: 2 },
        output: { input: { v: 2 } },
      });
      expect(nodes.delay).toMatchObject({ status: 'completed', input: { delay_ms: 0 } });
      expect(nodes.switch).toMatchObject({ status: 'completed', input: null });
      expect(nodes.join).toMatchObject({ status: 'completed', input: null });
      expect(nodes.end).toMatchObject({ status: 'completed', input: null, output: null });
      for (const n of Object.values(nodes)) {
        expect(n.started_at).not.toBeNull();
        expect(n.completed_at).not.toBeNull();
        expect(n.error).toBeNull();
        expect(n.attempts).toBe(1);
      }
    });

    it('running -> failed: input and error stored (failed nodes keep their input)', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'compute',
            type: 'COMPUTE',
            config: { logic: { '*': [{ var: 'event.data.word' }, 2] } },
            continue_on_error: true,
          },
          {
            key: 'action',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'flaky',
              input_mapping: { fail_times: 1, who: { var: 'event.data.word' } },
            },
          },
        ],
      });
      await publish(t, { word: 'abc' });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.compute).toMatchObject({
        status: 'failed',
        input: { logic: { '*': [{ var: 'event.data.word' }, 2] } },
        output: null,
        error: 'arithmetic on a value that is not a number (NaN)',
      });
      expect(nodes.action).toMatchObject({
        status: 'failed',
        input: { fail_times: 1, who: 'abc' },
        output: null,
        error: 'PLUGIN.INVOCATION_FAILED: wftest.flaky failed: flaky failure 1',
        attempts: 1,
      });
      expect(nodes.action.completed_at).not.toBeNull();
    });
  });
});
