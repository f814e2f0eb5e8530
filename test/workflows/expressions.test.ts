import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, onlyRun, publish, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * Loud expressions (docs/workflows.md "Templates"): a one-key object whose key is no operator is a
 * typo, refused when saved with its JSON path and the operator meant; `preserve` writes a literal.
 */
describe(`expressions are checked when saved (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
  });
  afterAll(() => t.close());

  async function putGraph(nodes: unknown[], edges: unknown[] = []) {
    const sub = await a.call('POST', '/event_subscription', { name: 'expr', event_type: 'svc.user.created' });
    return a.call('PUT', `/event_subscription/${sub.body.id}/graph`, { nodes, edges });
  }

  it('a misspelt operator in a COMPUTE is 400 with its path and the operator meant', async () => {
    const res = await putGraph([
      { key: 'score', type: 'COMPUTE', config: { logic: { vr: 'event.data.name' } } },
    ]);
    expect(res).toEqual({
      status: 400,
      body: {
        code: 'WORKFLOW.INVALID_GRAPH',
        message:
          'nodes.0 (key "score").config.logic: unknown operator "vr" (did you mean "var"?); an object with one key is an operation (write a literal one as {"preserve": {"vr": ...}})',
        details: { field: 'nodes.0.config.logic' },
      },
    });
  });

  it('an unknown operator deep inside an expression is 400 naming where', async () => {
    const res = await putGraph([
      { key: 'a', type: 'COMPUTE', config: { logic: { if: [{ '==': [1, 1] }, { no_such_op: [1, 2] }, 0] } } },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(
      'nodes.0 (key "a").config.logic: not a valid JSONLogic expression: at if.1: unknown operator "no_such_op"',
    );
    expect(res.body.details).toEqual({ field: 'nodes.0.config.logic.if.1' });
  });

  it('edge conditions, subscription conditions and /workflow/evaluate say the same', async () => {
    const edge = await putGraph(
      [
        { key: 'a', type: 'COMPUTE', config: { logic: 1 } },
        { key: 'b', type: 'END' },
      ],
      [{ from_node_id: 'a', to_node_id: 'b', condition_jsonlogic: { and: [true, { mising: ['x'] }] } }],
    );
    expect(edge.status).toBe(400);
    expect(edge.body.message).toBe(
      'edges.0: condition_jsonlogic is not a valid JSONLogic expression: at and.1: unknown operator "mising" (did you mean "missing"?)',
    );
    expect(edge.body.details).toEqual({ field: 'edges.0.condition_jsonlogic.and.1' });

    const sub = await a.call('POST', '/event_subscription', {
      name: 'cond',
      event_type: 'svc.user.created',
      condition_jsonlogic: { '==': [{ vra: 'event.type' }, 'x'] },
    });
    expect(sub.status).toBe(400);
    expect(sub.body.details).toEqual({ field: 'condition_jsonlogic.==.0' });
    expect(sub.body.message).toContain('unknown operator "vra" (did you mean "var"?)');

    const evaluated = await a.call('POST', '/workflow/evaluate', {
      expression: { cat: ['a', { literal: 1, other: 2 }] },
      data: {},
    });
    expect(evaluated).toEqual({
      status: 400,
      body: {
        code: 'WORKFLOW.EXPRESSION_INVALID',
        message:
          'expression.cat.1: an object with several keys ("literal", "other") is not an operation; write a literal object as {"preserve": {...}}',
        details: { field: 'expression.cat.1' },
      },
    });
  });

  it('preserve writes a literal; eachKey computes a one-key object; several keys make a template', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'out',
          type: 'COMPUTE',
          config: {
            logic: {
              literal: { preserve: { vr: 'kept as it is', var: 'not read' } },
              computed: { eachKey: { email: { var: 'event.data.email' } } },
              list: [{ var: 'event.data.n' }, 'x'],
            },
          },
        },
      ],
    });
    const event = await publish(t, { n: 3 });
    await settle(t);
    const { nodes } = await onlyRun(a, wf.id);
    expect(nodes.out.output).toEqual({
      literal: { vr: 'kept as it is', var: 'not read' },
      computed: { email: event.data.email },
      list: [3, 'x'],
    });
  });

  it('the top of an input mapping names the input fields, even just one', async () => {
    const wftest = (await a.call('GET', '/plugin_instance?limit=1')).body.plugin_instances[0].id;
    const ok = await putGraph([
      {
        key: 'call',
        type: 'ACTION',
        config: { plugin_instance_id: wftest, plugin_action: 'record', input_mapping: { email: 'x' } },
      },
    ]);
    expect(ok.status).toBe(200);
    const nested = await putGraph([
      {
        key: 'call',
        type: 'ACTION',
        config: {
          plugin_instance_id: wftest,
          plugin_action: 'record',
          input_mapping: { headers: { Authorization: '$secret:token' } },
        },
      },
    ]);
    expect(nested.status).toBe(400);
    expect(nested.body.details).toEqual({ field: 'nodes.0.config.input_mapping.headers' });
    expect(nested.body.message).toContain('write a literal one as {"preserve": {"Authorization": ...}}');
  });
});
