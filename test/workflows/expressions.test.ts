import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, onlyRun, publish, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * Loud expressions (docs/workflows.md "Templates"): an unknown operator inside an expression is
 * refused when saved with its JSON path and the operator meant; a template key one typo away from an
 * operator saves with a warning; `preserve` writes a literal.
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
    const res = await a.call('PUT', `/event_subscription/${sub.body.id}/graph`, { nodes, edges });
    return Object.assign(res, { subId: sub.body.id as string });
  }

  it('a one-key object whose key is no operator is a template; one a typo away from one saves with a warning', async () => {
    const res = await putGraph([
      { key: 'score', type: 'COMPUTE', config: { logic: { vr: 'event.data.name' } } },
      {
        key: 'text',
        type: 'COMPUTE',
        config: { logic: { text: { cat: ['Hi ', { var: 'event.data.name' }] } } },
      },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual([
      'nodes.0 (key "score").config.logic: "vr" is no operator, so this object is a template and "vr" a key of its output; did you mean the operator "var"? (field nodes.0.config.logic)',
    ]);
    // The graph's own answer (GET) carries no warnings: they are about the save.
    expect((await a.call('GET', `/event_subscription/${res.subId}/graph`)).body.warnings).toBeUndefined();
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
    // One level down the one template rule applies: a one-key object of no operator is a template.
    expect(nested.status).toBe(200);
    expect(nested.body.warnings).toBeUndefined();
  });
});
