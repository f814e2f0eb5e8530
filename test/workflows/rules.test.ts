import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  nodesOf,
  onlyRun,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';
import { pluginCalls } from './plugin.js';

/** SPEC "Workflow execution rules" 1-6, Pipeline 3 (routing) and the durability rules, through HTTP. */
describe(`workflow execution rules (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  describe('rule 1: topological (Kahn) order', () => {
    it('traverses in dependency order, not in the order the nodes were sent', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'third',
            type: 'COMPUTE',
            config: { logic: { '+': [{ var: 'nodes.second.output.result' }, 100] } },
          },
          {
            key: 'second',
            type: 'COMPUTE',
            config: { logic: { '*': [{ var: 'nodes.first.output.result' }, 10] } },
          },
          { key: 'first', type: 'COMPUTE', config: { logic: { var: 'event.data.n' } } },
        ],
        edges: [
          { from_node_id: 'first', to_node_id: 'second' },
          { from_node_id: 'second', to_node_id: 'third' },
        ],
      });
      await publish(t, { n: 7 });
      await settle(t);
      const { run, nodes, list } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      expect(nodes.third.output).toEqual({ result: 170 });
      // The node list follows the traversal order.
      expect(list.map((n: { node_key: string }) => n.node_key)).toEqual(['first', 'second', 'third']);
    });

    it('a cycle is an error: the graph is refused with 400 naming the nodes', async () => {
      const created = await a.call('POST', '/event_subscription', {
        name: 'cyclic',
        event_type: 'svc.user.created',
      });
      const res = await a.call('PUT', `/event_subscription/${created.body.id}/graph`, {
        nodes: [
          { key: 'a', type: 'SWITCH' },
          { key: 'b', type: 'SWITCH' },
        ],
        edges: [
          { from_node_id: 'a', to_node_id: 'b' },
          { from_node_id: 'b', to_node_id: 'a' },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'WORKFLOW.INVALID_GRAPH',
        message: 'the graph has a cycle: a -> b -> a',
        details: { field: 'edges', cycle: ['a', 'b'] },
      });
    });
  });

  describe('rule 2: the skip rule', () => {
    it('skips only when every incoming edge is conditional and false; records which edges', async () => {
      const f = { '==': [1, 2] };
      const tr = { '==': [1, 1] };
      const wf = await workflow(a, {
        nodes: [
          { key: 'src', type: 'SWITCH' },
          { key: 'lonely', type: 'SWITCH' },
          { key: 'off', type: 'SWITCH' },
          { key: 'both_false', type: 'SWITCH' },
          { key: 'one_true', type: 'SWITCH' },
          { key: 'after_skipped', type: 'SWITCH' },
        ],
        edges: [
          { id: 'e_off', from_node_id: 'src', to_node_id: 'off', condition_jsonlogic: f },
          { id: 'e_bf1', from_node_id: 'src', to_node_id: 'both_false', condition_jsonlogic: f },
          {
            id: 'e_bf2',
            from_node_id: 'lonely',
            to_node_id: 'both_false',
            condition_jsonlogic: { '>': [{ var: 'event.data.n' }, 5] },
          },
          { from_node_id: 'src', to_node_id: 'one_true', condition_jsonlogic: f },
          { from_node_id: 'lonely', to_node_id: 'one_true', condition_jsonlogic: tr },
          // An edge without a condition always passes, even from a skipped node.
          { from_node_id: 'off', to_node_id: 'after_skipped' },
        ],
      });
      await publish(t, { n: 1 });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      // Source nodes are always reachable.
      expect(nodes.src.status).toBe('completed');
      expect(nodes.lonely.status).toBe('completed');
      expect(nodes.off.status).toBe('skipped');
      expect(nodes.both_false.status).toBe('skipped');
      expect(nodes.both_false.skip_reason).toEqual({
        message: 'every incoming edge has a condition and all 2 evaluated false (from "src", "lonely")',
        edges: [
          { edge_id: expect.any(String), from_node_key: 'src', condition_jsonlogic: f },
          {
            edge_id: expect.any(String),
            from_node_key: 'lonely',
            condition_jsonlogic: { '>': [{ var: 'event.data.n' }, 5] },
          },
        ],
      });
      expect(nodes.both_false.skip_reason.edges.map((e: { edge_id: string }) => e.edge_id)).toEqual([
        wf.edgeIds[1],
        wf.edgeIds[2],
      ]);
      expect(nodes.one_true.status).toBe('completed');
      expect(nodes.one_true.skip_reason).toBeNull();
      expect(nodes.after_skipped.status).toBe('completed');
      expect(nodes.off.started_at).toBeNull();
    });
  });

  describe('rule 3: dispatch by type', () => {
    it('ACTION invokes the plugin action with the evaluated input mapping and stores it as input', async () => {
      const mapping = {
        user: { var: 'event.data.user_id' },
        literal: 'as-is',
        number: 3,
        nested: { sum: { '+': [1, { var: 'event.data.n' }] }, keep: { preserve: { not_an_operator: true } } },
        list: [{ var: 'event.data.n' }, 'x'],
      };
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'act',
            type: 'ACTION',
            config: { plugin_instance_id: wftest, plugin_action: 'record', input_mapping: mapping },
          },
        ],
      });
      const event = await publish(t, { n: 4 });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      const expected = {
        user: event.data.user_id,
        literal: 'as-is',
        number: 3,
        nested: { sum: 5, keep: { not_an_operator: true } },
        list: [4, 'x'],
      };
      expect(run.status).toBe('completed');
      expect(nodes.act).toMatchObject({
        status: 'completed',
        node_type: 'ACTION',
        attempts: 1,
        input: expected,
      });
      expect(nodes.act.output).toEqual({ idempotency_key: `${run.id}:act`, input: expected });
      expect(pluginCalls().filter((c) => c.key === `${run.id}:act`)).toHaveLength(1);
    });

    it('COMPUTE evaluates JSONLogic; a scalar result is wrapped as {result}, an object is kept', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'scalar', type: 'COMPUTE', config: { logic: { '*': [{ var: 'event.data.n' }, 3] } } },
          { key: 'object', type: 'COMPUTE', config: { logic: { preserve: { band: 'high' } } } },
          { key: 'list', type: 'COMPUTE', config: { logic: { merge: [[1], [2]] } } },
        ],
      });
      await publish(t, { n: 2 });
      await settle(t);
      const { nodes } = await onlyRun(a, wf.id);
      expect(nodes.scalar.output).toEqual({ result: 6 });
      expect(nodes.object.output).toEqual({ band: 'high' });
      expect(nodes.list.output).toEqual({ result: [1, 2] });
    });

    it('DELAY waits delay_ms as a persisted timer, then the run goes on', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'wait', type: 'DELAY', config: { delay_ms: 60_000 } },
          { key: 'after', type: 'COMPUTE', config: { logic: 'done' } },
        ],
        edges: [{ from_node_id: 'wait', to_node_id: 'after' }],
      });
      const start = clock.now().getTime();
      await publish(t, {});
      await settle(t);
      let { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('running');
      expect(nodes.wait).toMatchObject({
        status: 'running',
        input: { delay_ms: 60_000, until: new Date(start + 60_000).toISOString() },
        resume_at: new Date(start + 60_000).toISOString(),
      });
      expect(nodes.after.status).toBe('pending');
      clock.advance(59_999);
      await settle(t);
      expect((await nodesOf(a, run.id)).after.status).toBe('pending');
      clock.advance(1);
      await settle(t);
      ({ run, nodes } = await onlyRun(a, wf.id));
      expect(run.status).toBe('completed');
      expect(nodes.wait).toMatchObject({
        status: 'completed',
        output: { until: new Date(start + 60_000).toISOString(), delay_ms: 60_000 },
      });
      expect(nodes.after.status).toBe('completed');
    });

    it('DELAY waits until the timestamp its until_template renders', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'until', type: 'DELAY', config: { until_template: '{{ event.data.appointment - 1h }}' } },
          { key: 'remind', type: 'COMPUTE', config: { logic: 'reminded' } },
        ],
        edges: [{ from_node_id: 'until', to_node_id: 'remind' }],
      });
      const appointment = new Date(clock.now().getTime() + 3 * 3_600_000).toISOString();
      await publish(t, { appointment });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      const due = new Date(Date.parse(appointment) - 3_600_000).toISOString();
      expect(nodes.until).toMatchObject({
        status: 'running',
        resume_at: due,
        input: { delay_ms: 2 * 3_600_000, until: due },
      });
      clock.advance(2 * 3_600_000);
      await settle(t);
      expect((await a.call('GET', `/workflow_run/${run.id}`)).body.status).toBe('completed');
      expect((await nodesOf(a, run.id)).remind.status).toBe('completed');
    });

    it('a DELAY whose template cannot render fails with the reason', async () => {
      const wf = await workflow(a, {
        nodes: [{ key: 'd', type: 'DELAY', config: { until_template: '{{ event.data.nope }}' } }],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.d.error).toBe('until_template: event.data.nope has no value');
      // Input is still {delay_ms: <number>} (SPEC): nothing was scheduled, so 0; the template is kept.
      expect(nodes.d.input).toEqual({ delay_ms: 0, until_template: '{{ event.data.nope }}' });
    });

    it('DELAY input delay_ms is always the number of milliseconds scheduled (0 for a past timestamp)', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'past', type: 'DELAY', config: { until_template: '{{ event.data.at - 1h }}' } },
          {
            key: 'both',
            type: 'DELAY',
            config: { delay_ms: 1000, until_template: '{{ now + 90s }}' },
          },
        ],
        edges: [{ from_node_id: 'past', to_node_id: 'both' }],
      });
      const start = clock.now().getTime();
      await publish(t, { at: new Date(start).toISOString() });
      await settle(t);
      const { nodes } = await onlyRun(a, wf.id);
      expect(nodes.past).toMatchObject({
        status: 'completed',
        // A time in the past completes at once: it ends when it was reached.
        input: { delay_ms: 0, until: new Date(start).toISOString() },
      });
      // With both, the later end wins, and delay_ms says how long that is from scheduling.
      expect(nodes.both).toMatchObject({
        status: 'running',
        input: { delay_ms: 90_000, until: new Date(start + 90_000).toISOString() },
      });
      for (const n of Object.values(nodes)) expect(typeof n.input.delay_ms).toBe('number');
      clock.advance(90_000);
      await settle(t);
    });

    it('SWITCH does nothing itself: its outgoing edge conditions route', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'sw', type: 'SWITCH', config: { mode: 'first_true' } },
          { key: 'big', type: 'COMPUTE', config: { logic: 'big' } },
          { key: 'small', type: 'COMPUTE', config: { logic: 'small' } },
        ],
        edges: [
          {
            from_node_id: 'sw',
            to_node_id: 'big',
            condition_jsonlogic: { '>=': [{ var: 'event.data.n' }, 10] },
          },
          {
            from_node_id: 'sw',
            to_node_id: 'small',
            condition_jsonlogic: { '<': [{ var: 'event.data.n' }, 10] },
          },
        ],
      });
      await publish(t, { n: 3 });
      await settle(t);
      const { nodes } = await onlyRun(a, wf.id);
      expect(nodes.sw).toMatchObject({ status: 'completed', input: null, output: null });
      expect(nodes.big.status).toBe('skipped');
      expect(nodes.small.status).toBe('completed');
    });

    it('JOIN with n_required fails the run when fewer predecessors completed', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'ok1', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'bad', type: 'COMPUTE', config: { logic: { throw: 'nope' } }, continue_on_error: true },
          { key: 'ok2', type: 'COMPUTE', config: { logic: 2 } },
          { key: 'join', type: 'JOIN', config: { mode: 'N_OF_M', n_required: 3 } },
          { key: 'after', type: 'COMPUTE', config: { logic: 3 } },
        ],
        edges: [
          { from_node_id: 'ok1', to_node_id: 'join' },
          { from_node_id: 'bad', to_node_id: 'join' },
          { from_node_id: 'ok2', to_node_id: 'join' },
          { from_node_id: 'join', to_node_id: 'after' },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.join.status).toBe('failed');
      expect(nodes.join.error).toBe(
        'JOIN N_OF_M needs 3 completed predecessors (completed: "ok1", "ok2"; failed: "bad"; skipped: none)',
      );
      expect(run.error).toBe(`node "join" (JOIN) failed: ${nodes.join.error}`);
      expect(nodes.after.status).toBe('pending');
    });

    it('JOIN ALL needs every non-skipped predecessor completed; ANY needs one (CONTRACTS §9)', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'ok', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'bad', type: 'COMPUTE', config: { logic: { throw: 'x' } }, continue_on_error: true },
          { key: 'gate', type: 'SWITCH' },
          { key: 'off', type: 'COMPUTE', config: { logic: 0 } },
          { key: 'all_skip_ok', type: 'JOIN', config: { mode: 'ALL' }, continue_on_error: true },
          { key: 'all_with_failure', type: 'JOIN', continue_on_error: true },
          { key: 'any', type: 'JOIN', config: { mode: 'ANY' } },
        ],
        edges: [
          { from_node_id: 'gate', to_node_id: 'off', condition_jsonlogic: { '==': [1, 0] } },
          { from_node_id: 'ok', to_node_id: 'all_skip_ok' },
          { from_node_id: 'off', to_node_id: 'all_skip_ok' },
          { from_node_id: 'ok', to_node_id: 'all_with_failure' },
          { from_node_id: 'bad', to_node_id: 'all_with_failure' },
          { from_node_id: 'bad', to_node_id: 'any' },
          { from_node_id: 'ok', to_node_id: 'any' },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(nodes.all_skip_ok).toMatchObject({
        status: 'completed',
        output: { mode: 'ALL', completed: ['ok'], failed: [], skipped: ['off'], pending: [] },
      });
      expect(nodes.all_with_failure.status).toBe('failed');
      expect(nodes.all_with_failure.error).toContain(
        'JOIN ALL needs every non-skipped predecessor completed',
      );
      expect(nodes.any).toMatchObject({
        status: 'completed',
        output: { completed: ['ok'], failed: ['bad'] },
      });
      expect(run.status).toBe('completed');
    });

    it('JOIN timeout_ms runs from the first arrival: a branch still running when it passes fails the JOIN', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'fast', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'slow', type: 'DELAY', config: { delay_ms: 5_000 } },
          { key: 'join', type: 'JOIN', config: { mode: 'ALL', timeout_ms: 1_000 } },
        ],
        edges: [
          { from_node_id: 'fast', to_node_id: 'join' },
          { from_node_id: 'slow', to_node_id: 'join' },
        ],
      });
      await publish(t, {});
      await settle(t);
      clock.advance(5_000);
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.join.error).toBe(
        'JOIN ALL timed out: timeout_ms 1000 passed after the first predecessor finished (completed: "fast"; failed: none; skipped: none; still running: "slow")',
      );
      // The timer was set when "fast" arrived, one second ahead.
      expect(
        Date.parse(nodes.join.completed_at) - Date.parse(nodes.fast.completed_at),
      ).toBeGreaterThanOrEqual(1_000);
    });

    it('END stops traversal and completes the run; unvisited nodes are not executed', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'first', type: 'COMPUTE', config: { logic: 1 } },
          { key: 'stop', type: 'END' },
          {
            key: 'never',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'record',
              input_mapping: { marker: 'never' },
            },
          },
        ],
        edges: [
          { from_node_id: 'first', to_node_id: 'stop' },
          { from_node_id: 'stop', to_node_id: 'never' },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      expect(run.completed_at).toBe(nodes.stop.completed_at);
      expect(nodes.stop).toMatchObject({ status: 'completed', output: null });
      expect(nodes.never).toMatchObject({ status: 'pending', attempts: 0, started_at: null });
      expect(pluginCalls().some((c) => c.input.marker === 'never')).toBe(false);
    });
  });

  describe('rule 4: node types', () => {
    it('are compared case-insensitively and stored upper case', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'c', type: 'Compute', config: { logic: 1 } },
          { key: 'e', type: 'end' },
        ],
        edges: [{ from_node_id: 'c', to_node_id: 'e' }],
      });
      const graph = await a.call('GET', `/event_subscription/${wf.id}/graph`);
      expect(graph.body.nodes.map((n: { type: string }) => n.type)).toEqual(['COMPUTE', 'END']);
      await publish(t, {});
      await settle(t);
      const { list } = await onlyRun(a, wf.id);
      expect(list.map((n: { node_type: string }) => n.node_type)).toEqual(['COMPUTE', 'END']);
    });
  });

  describe('rule 5: the expression context', () => {
    it('holds event (id, source, type, subject, time, data) and nodes.<key>.output; dot paths only', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'first', type: 'COMPUTE', config: { logic: { preserve: { deep: { value: 42 } } } } },
          {
            key: 'probe',
            type: 'COMPUTE',
            config: {
              logic: {
                // An object that is not an operation is a template: its values are evaluated.
                id: { var: 'event.id' },
                source: { var: 'event.source' },
                type: { var: 'event.type' },
                subject: { var: 'event.subject' },
                time: { var: 'event.time' },
                n: { var: 'event.data.n' },
                dot: { var: 'event.data.list.1' },
                bracket: { var: 'event.data.list[1]' },
                output: { var: 'nodes.first.output.deep.value' },
                proto: { var: 'nodes.constructor' },
              },
            },
          },
        ],
        edges: [{ from_node_id: 'first', to_node_id: 'probe' }],
      });
      const event = await publish(t, { n: 9, list: ['a', 'b'] });
      await settle(t);
      const { nodes } = await onlyRun(a, wf.id);
      expect(nodes.probe.output).toEqual({
        id: event.id,
        source: '/api/v1/user',
        type: 'svc.user.created',
        subject: event.subject,
        time: event.time,
        n: 9,
        dot: 'b',
        bracket: null,
        output: 42,
        proto: null,
      });
    });
  });

  describe('rule 6: vault references in input mappings', () => {
    it('are resolved after JSONLogic, only whole-string references, never stored or returned', async () => {
      expect(
        (await a.call('POST', '/vault_entry', { key: 'wf_greeting', kind: 'VAR', value: 'hello' })).status,
      ).toBe(200);
      expect(
        (await a.call('POST', '/vault_entry', { key: 'wf_token', kind: 'SECRET', value: 'tok-SECRET-123' }))
          .status,
      ).toBe(200);
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'vars',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'record',
              input_mapping: {
                greeting: '$var:wf_greeting',
                computed: { cat: ['$var:', 'wf_greeting'] },
                inline: 'say $var:wf_greeting',
              },
            },
          },
          {
            key: 'secret',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'flaky',
              input_mapping: { token: '$secret:wf_token', fail_times: 0 },
            },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      // The plugin saw the resolved values (a reference built by JSONLogic is resolved too: second pass).
      expect(nodes.vars.output.input).toEqual({
        greeting: 'hello',
        computed: 'hello',
        inline: 'say $var:wf_greeting',
      });
      const secretCall = pluginCalls().find((c) => c.action === 'flaky' && c.key === `${run.id}:secret`);
      expect(secretCall?.input.token).toBe('tok-SECRET-123');
      // Stored inputs keep the references.
      expect(nodes.vars.input).toEqual({
        greeting: '$var:wf_greeting',
        computed: '$var:wf_greeting',
        inline: 'say $var:wf_greeting',
      });
      expect(nodes.secret.input).toEqual({ token: '$secret:wf_token', fail_times: 0 });
      const everything = JSON.stringify([run, nodes, (await a.call('GET', `/workflow_run/${run.id}`)).body]);
      expect(everything).not.toContain('tok-SECRET-123');
      expect(t.logText()).not.toContain('tok-SECRET-123');
    });

    it('a resolved secret never reaches the node error, even when the plugin puts it in its message', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'leaky',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'fail_with',
              input_mapping: { token: '$secret:wf_token', plain: 'visible' },
            },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.leaky.error).toBe(
        'PLUGIN.INVOCATION_FAILED: wftest.fail_with failed: rejected: {"token":"******","plain":"visible"}',
      );
      expect(JSON.stringify(run)).not.toContain('tok-SECRET-123');
    });

    it('a secret echoed URL-encoded, base64, hex, upper-cased or inside Basic auth is masked in the stored output', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'echo',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'encode',
              input_mapping: { value: '$secret:wf_token' },
            },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('completed');
      const output = nodes.echo.output;
      for (const [field, text] of Object.entries(output)) expect(text, field).toContain('******');
      const secret = 'tok-SECRET-123';
      const b = Buffer.from(secret);
      const stored = JSON.stringify([
        nodes,
        (await a.call('POST', `/workflow_run/${run.id}/context`, { node_key: 'echo' })).body,
      ]);
      for (const spelling of [
        secret,
        encodeURIComponent(secret),
        b.toString('base64'),
        b.toString('base64url'),
        b.toString('hex'),
        b.toString('hex').toUpperCase(),
        secret.toUpperCase(),
        Buffer.from(`svc-user:${secret}`).toString('base64'),
      ]) {
        expect(stored, spelling).not.toContain(spelling);
      }
    });

    it('a reference that cannot be resolved fails the node with the vault error', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'act',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'record',
              input_mapping: { x: '$secret:wf_missing' },
            },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(nodes.act.status).toBe('failed');
      expect(nodes.act.error).toMatch(/^VAULT\.RESOLVE_FAILED: /);
      expect(nodes.act.input).toEqual({ x: '$secret:wf_missing' });
    });

    it('a reference to a disabled vault entry fails the node with VAULT.DISABLED', async () => {
      const created = await a.call('POST', '/vault_entry', {
        key: 'wf_disabled',
        kind: 'SECRET',
        value: 'tok-DISABLED-456',
      });
      expect(created.status).toBe(200);
      expect((await a.call('PATCH', `/vault_entry/${created.body.id}`, { enabled: false })).status).toBe(200);
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'act',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'record',
              input_mapping: { x: '$secret:wf_disabled', y: { var: 'event.data.n' } },
            },
          },
          { key: 'next', type: 'COMPUTE', config: { logic: 1 } },
        ],
        edges: [{ from_node_id: 'act', to_node_id: 'next' }],
      });
      await publish(t, { n: 3 });
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/^node "act" \(ACTION\) failed: VAULT\.DISABLED: /);
      expect(nodes.act).toMatchObject({
        status: 'failed',
        attempts: 1,
        // The input keeps the reference (evaluated after JSONLogic, never resolved into storage).
        input: { x: '$secret:wf_disabled', y: 3 },
        output: null,
      });
      expect(nodes.act.error).toMatch(/^VAULT\.DISABLED: .*wf_disabled/);
      expect(nodes.next.status).toBe('pending');
      // The plugin was never called, and the value appears nowhere.
      expect(pluginCalls().filter((c) => c.key === `${run.id}:act`)).toEqual([]);
      expect(JSON.stringify([run, nodes])).not.toContain('tok-DISABLED-456');
      expect(t.logText()).not.toContain('tok-DISABLED-456');
    });
  });

  describe('routing (SPEC Pipeline 3)', () => {
    it('routes on event_type, exact source/subject filters and a truthy condition', async () => {
      const graph = { nodes: [{ key: 'n', type: 'END' }] };
      const plain = await workflow(a, graph);
      const other = await workflow(a, graph, { event_type: 'svc.user.deleted' });
      const source = await workflow(a, graph, { source_filter: '/api/v1/user' });
      const wrongSource = await workflow(a, graph, { source_filter: '/api/v1/user/' });
      const condition = await workflow(a, graph, {
        condition_jsonlogic: { '==': [{ var: 'event.data.tier' }, 'gold'] },
      });
      const disabled = await workflow(a, graph, { enabled: false });
      const event = await publish(t, { tier: 'gold' });
      const subject = await workflow(a, graph, { subject_filter: event.subject });
      // The subject-filtered subscription was created after this event was routed? No: routing happens
      // at drain time, below, so it sees the subscription.
      await publish(t, { tier: 'silver' });
      await settle(t);
      expect((await runsOf(a, plain.id)).length).toBe(2);
      expect((await runsOf(a, other.id)).length).toBe(0);
      expect((await runsOf(a, source.id)).length).toBe(2);
      expect((await runsOf(a, wrongSource.id)).length).toBe(0);
      const cond = await runsOf(a, condition.id);
      expect(cond.map((r) => r.event_id)).toEqual([event.id]);
      expect((await runsOf(a, disabled.id)).length).toBe(0);
      expect((await runsOf(a, subject.id)).map((r) => r.event_id)).toEqual([event.id]);
    });

    it('isolates failures per subscription: a condition that throws skips only its subscription', async () => {
      const broken = await workflow(
        a,
        { nodes: [{ key: 'n', type: 'END' }] },
        { condition_jsonlogic: { '/': [1, { var: 'event.data.zero' }] } },
      );
      const fine = await workflow(a, { nodes: [{ key: 'n', type: 'END' }] });
      await publish(t, { zero: 'x' });
      await settle(t);
      expect(await runsOf(a, broken.id)).toEqual([]);
      expect((await runsOf(a, fine.id)).map((r) => r.status)).toEqual(['completed']);
      const warning = t.logs.find(
        (l) => l.msg === 'workflow router: condition_jsonlogic failed; subscription skipped for this event',
      );
      expect(warning).toMatchObject({
        subscription_id: broken.id,
        reason: 'condition_jsonlogic: arithmetic on a value that is not a number (NaN)',
      });
      const tasks = await a.call('GET', '/event_delivery_task?status=FAILED');
      expect(tasks.body.tasks).toEqual([]);
    });

    it('starts exactly one run per (subscription, event id), however often the event is handed over', async () => {
      const wf = await workflow(a, { nodes: [{ key: 'n', type: 'COMPUTE', config: { logic: 1 } }] });
      const event = await publish(t, {});
      await settle(t);
      const router = t.ctx.services.eventHandlers.find((h) => h.name === 'workflow-router');
      // At-least-once delivery: the same event again, concurrently and later.
      await Promise.all([router?.handle([event]), router?.handle([event, event])]);
      await router?.handle([event]);
      await settle(t);
      const runs = await runsOf(a, wf.id);
      expect(runs.length).toBe(1);
      expect((await nodesOf(a, runs[0].id)).n.attempts).toBe(1);
    });

    it('a deleted subscription starts no new runs; its running runs finish', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'wait', type: 'DELAY', config: { delay_ms: 1_000 } },
          { key: 'done', type: 'COMPUTE', config: { logic: 'done' } },
        ],
        edges: [{ from_node_id: 'wait', to_node_id: 'done' }],
      });
      await publish(t, {});
      await settle(t);
      expect(await a.call('DELETE', `/event_subscription/${wf.id}`)).toEqual({
        status: 200,
        body: { status: 'deleted' },
      });
      await publish(t, {});
      clock.advance(1_000);
      await settle(t);
      const runs = await runsOf(a, wf.id);
      expect(runs.map((r) => r.status)).toEqual(['completed']);
      expect((await nodesOf(a, runs[0].id)).done.output).toEqual({ result: 'done' });
    });
  });

  describe('durability rules', () => {
    it('a run finishes on the graph it started with, even when the graph is saved again meanwhile', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'wait', type: 'DELAY', config: { delay_ms: 1_000 } },
          { key: 'old', type: 'COMPUTE', config: { logic: 'old graph' } },
        ],
        edges: [{ from_node_id: 'wait', to_node_id: 'old' }],
      });
      await publish(t, {});
      await settle(t);
      const put = await a.call('PUT', `/event_subscription/${wf.id}/graph`, {
        nodes: [{ key: 'new', type: 'COMPUTE', config: { logic: 'new graph' } }],
      });
      expect(put.status).toBe(200);
      clock.advance(1_000);
      await publish(t, {});
      await settle(t);
      const [first, second] = await runsOf(a, wf.id);
      expect(first.status).toBe('completed');
      expect(second.graph_version).toBe(first.graph_version + 1);
      expect(Object.keys(await nodesOf(a, first.id))).toEqual(['wait', 'old']);
      expect((await nodesOf(a, first.id)).old.output).toEqual({ result: 'old graph' });
      expect(Object.keys(await nodesOf(a, second.id))).toEqual(['new']);
    });

    it('plugins receive the stable idempotency key <run id>:<node key> on every attempt', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'flaky_call',
            type: 'ACTION',
            config: { plugin_instance_id: wftest, plugin_action: 'flaky', input_mapping: { fail_times: 2 } },
            retry_policy: { max_attempts: 3, backoff: 'fixed', base_seconds: 0 },
          },
        ],
      });
      await publish(t, {});
      await settle(t);
      const { run, nodes } = await onlyRun(a, wf.id);
      expect(nodes.flaky_call).toMatchObject({
        status: 'completed',
        attempts: 3,
        output: { succeeded_on: 3 },
      });
      const keys = pluginCalls()
        .filter((c) => c.action === 'flaky' && c.input.fail_times === 2)
        .map((c) => c.key);
      expect(keys).toEqual([`${run.id}:flaky_call`, `${run.id}:flaky_call`, `${run.id}:flaky_call`]);
    });
  });
});
