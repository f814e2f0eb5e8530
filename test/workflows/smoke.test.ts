import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, onlyRun, publish, settle, workflow } from './helpers.js';

describe(`workflow smoke (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  beforeAll(async () => {
    t = await startTestApp();
    a = await api(t);
  });
  afterAll(() => t.close());

  it('runs a COMPUTE -> SWITCH -> branches -> JOIN graph from a published event', async () => {
    const wf = await workflow(a, {
      nodes: [
        { id: 'c', key: 'score', type: 'compute', config: { logic: { '*': [{ var: 'event.data.n' }, 2] } } },
        { id: 's', key: 'route', type: 'SWITCH' },
        {
          id: 'hi',
          key: 'high',
          type: 'COMPUTE',
          config: { logic: { cat: ['high ', { var: 'nodes.score.output.result' }] } },
        },
        { id: 'lo', key: 'low', type: 'COMPUTE', config: { logic: 'low' } },
        { id: 'j', key: 'join', type: 'JOIN', config: { mode: 'ANY' } },
      ],
      edges: [
        { from_node_id: 'c', to_node_id: 's' },
        {
          from_node_id: 's',
          to_node_id: 'hi',
          condition_jsonlogic: { '>': [{ var: 'nodes.score.output.result' }, 10] },
        },
        {
          from_node_id: 's',
          to_node_id: 'lo',
          condition_jsonlogic: { '<=': [{ var: 'nodes.score.output.result' }, 10] },
        },
        { from_node_id: 'hi', to_node_id: 'j' },
        { from_node_id: 'lo', to_node_id: 'j' },
      ],
    });
    await publish(t, { n: 21 });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.score.output).toEqual({ result: 42 });
    expect(nodes.high).toMatchObject({ status: 'completed', output: { result: 'high 42' } });
    expect(nodes.low.status).toBe('skipped');
    expect(nodes.join).toMatchObject({
      status: 'completed',
      output: { mode: 'ANY', completed: ['high'], skipped: ['low'] },
    });
  });
});
