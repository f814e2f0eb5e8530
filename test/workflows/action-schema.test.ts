import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, pluginInstance, startWorkflowApp } from './helpers.js';

/**
 * An ACTION's input mapping is checked against its action's input_schema when the graph is saved
 * (docs/workflows.md "Save-time checks"), and the simulation validates the evaluated input as an
 * invocation does, so the test bench fails where a real run would.
 */
describe(`ACTION input mappings against the action's input_schema (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let http: string;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
    http = await pluginInstance(a, 'http');
  });
  afterAll(() => t.close());

  async function save(inputMapping: unknown) {
    const sub = await a.call('POST', '/event_subscription', {
      name: 'schema',
      event_type: 'svc.user.created',
    });
    const res = await a.call('PUT', `/event_subscription/${sub.body.id}/graph`, {
      nodes: [
        {
          key: 'post',
          type: 'ACTION',
          config: { plugin_instance_id: http, plugin_action: 'request', input_mapping: inputMapping },
        },
      ],
      edges: [],
    });
    return Object.assign(res, { subId: sub.body.id as string });
  }

  it('refuses a mapping without a required field, naming the node and the field', async () => {
    const res = await save({ method: 'POST' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'WORKFLOW.INVALID_GRAPH',
      message:
        'nodes.0 (key "post"): input_mapping.url is required by the action and not mapped (the input_schema of action "request")',
      details: { field: 'nodes.0.config.input_mapping.url' },
    });
  });

  it('refuses literals of the wrong type or outside an enum, at any depth', async () => {
    const port = await save({ method: 'POST', url: 8080 });
    expect(port.status).toBe(400);
    expect(port.body.details).toEqual({ field: 'nodes.0.config.input_mapping.url' });
    expect(port.body.message).toContain('input_mapping.url must be string, the mapping gives integer 8080');

    const verb = await save({ method: 'SEND', url: '/x' });
    expect(verb.status).toBe(400);
    expect(verb.body.message).toContain('input_mapping.method must be one of "GET"');

    const timeout = await save({ method: 'GET', url: '/x', timeout_ms: 'soon' });
    expect(timeout.status).toBe(400);
    expect(timeout.body.details).toEqual({ field: 'nodes.0.config.input_mapping.timeout_ms' });

    const extra = await save({ method: 'GET', url: '/x', verb: 'GET' });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toContain(
      'input_mapping.verb is not a field the action takes (it takes method, url,',
    );

    const header = await save({ method: 'GET', url: '/x', headers: { accept: 1 } });
    expect(header.status).toBe(400);
    expect(header.body.details).toEqual({ field: 'nodes.0.config.input_mapping.headers.accept' });
  });

  it('accepts values given by expressions, whose type is known only when the run evaluates them', async () => {
    const res = await save({
      method: { if: [{ var: 'event.data.email' }, 'POST', 'GET'] },
      url: { cat: ['/users/', { var: 'event.data.user_id' }] },
      timeout_ms: { '*': [1, 1000] },
      headers: { preserve: { authorization: '$secret:api_token' } },
    });
    expect(res.status).toBe(200);
  });

  it('the simulation fails an ACTION whose evaluated input the action would refuse, as a run would', async () => {
    // The mapping passes the save (an expression), but evaluates to a number where a string is required.
    const res = await save({ method: 'GET', url: { '+': [1, 2] } });
    expect(res.status).toBe(200);
    const event = {
      specversion: '1.0',
      id: 'e1',
      source: '/api/v1/user',
      type: 'svc.user.created',
      data: { user_id: 'u1', email: 'u1@example.test' },
    };
    const sim = await a.call('POST', `/event_subscription/${res.subId}/test`, { event });
    expect(sim.status).toBe(200);
    expect(sim.body.status).toBe('failed');
    const [node] = sim.body.nodes;
    expect(node).toMatchObject({ key: 'post', status: 'failed', input: { method: 'GET', url: 3 } });
    expect(node.error).toBe(
      'PLUGIN.INVALID_INPUT: payload does not match the input_schema of http.request: /url must be string',
    );

    // A valid input still answers the simulated echo, vault references left unresolved.
    const fine = await save({
      method: 'GET',
      url: '/ok',
      headers: { preserve: { authorization: '$secret:t' } },
    });
    const ok = await a.call('POST', `/event_subscription/${fine.subId}/test`, { event });
    expect(ok.body.status).toBe('completed');
    expect(ok.body.nodes[0].output).toEqual({
      simulated: true,
      input: { method: 'GET', url: '/ok', headers: { authorization: '$secret:t' } },
    });
  });
});
