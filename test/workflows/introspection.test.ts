import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  type Json,
  onlyRun,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';
import { pluginCalls } from './plugin.js';

const EVENT = {
  specversion: '1.0',
  id: 'sim-1',
  source: '/api/v1/user',
  type: 'svc.user.created',
  subject: 'u-1',
  time: '2026-02-01T10:00:00.000Z',
  datacontenttype: 'application/json',
  data: { user_id: 'u-1', n: 12, items: [{ sku: 'a' }, { sku: 'b', qty: 2 }] },
};

describe(`simulation and introspection (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  function graph() {
    return {
      nodes: [
        { key: 'score', type: 'COMPUTE', config: { logic: { '*': [{ var: 'event.data.n' }, 2] } } },
        { key: 'route', type: 'SWITCH' },
        {
          key: 'notify',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'record_once',
            input_mapping: { score: { var: 'nodes.score.output.result' }, token: '$secret:sim_token' },
          },
        },
        { key: 'wait', type: 'DELAY', config: { delay_ms: 3_600_000 } },
        { key: 'low', type: 'COMPUTE', config: { logic: 'low' } },
        { key: 'broken', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.word' }] } } },
        { key: 'after', type: 'COMPUTE', config: { logic: 'after' } },
      ],
      edges: [
        { from_node_id: 'score', to_node_id: 'route' },
        {
          from_node_id: 'route',
          to_node_id: 'notify',
          condition_jsonlogic: { '>': [{ var: 'nodes.score.output.result' }, 10] },
        },
        {
          from_node_id: 'route',
          to_node_id: 'low',
          condition_jsonlogic: { '<=': [{ var: 'nodes.score.output.result' }, 10] },
        },
        { from_node_id: 'notify', to_node_id: 'wait' },
        { from_node_id: 'wait', to_node_id: 'broken' },
        { from_node_id: 'broken', to_node_id: 'after' },
      ],
    };
  }

  describe('POST /event_subscription/{id}/test', () => {
    it('simulates: same states, nothing persisted, plugins not called, delays skipped, failure inside a 200', async () => {
      const wf = await workflow(a, graph());
      const callsBefore = pluginCalls().length;
      const res = await a.call('POST', `/event_subscription/${wf.id}/test`, {
        event: { ...EVENT, data: { ...EVENT.data, word: 'w' } },
      });
      expect(res.status).toBe(200);
      const body = res.body;
      expect(body).toMatchObject({
        subscription_id: wf.id,
        event_id: 'sim-1',
        status: 'failed',
        routing: { matched: true, reasons: [] },
      });
      expect(body.error).toBe(
        'node "broken" (COMPUTE) failed: arithmetic on a value that is not a number (NaN)',
      );
      const byKey = Object.fromEntries(body.nodes.map((n: Json) => [n.key, n]));
      expect(Object.keys(byKey)).toEqual(['score', 'route', 'notify', 'wait', 'low', 'broken', 'after']);
      expect(byKey.score).toMatchObject({
        node_id: wf.nodeIds.score,
        type: 'COMPUTE',
        status: 'completed',
        output: { result: 24 },
        error: null,
      });
      // Plugins are not called: the ACTION answers its resolved input; vault references stay unresolved.
      expect(byKey.notify).toMatchObject({
        status: 'completed',
        input: { score: 24, token: '$secret:sim_token' },
        output: { simulated: true, input: { score: 24, token: '$secret:sim_token' } },
      });
      expect(pluginCalls().length).toBe(callsBefore);
      expect(byKey.wait).toMatchObject({
        status: 'completed',
        output: { simulated: true, skipped_delay: true, delay_ms: 3_600_000 },
      });
      expect(byKey.low.status).toBe('skipped');
      expect(byKey.low.skip_reason.edges[0].from_node_key).toBe('route');
      expect(byKey.broken).toMatchObject({
        status: 'failed',
        error: 'arithmetic on a value that is not a number (NaN)',
        input: { logic: { '/': [1, { var: 'event.data.word' }] } },
      });
      expect(byKey.after).toMatchObject({ status: 'pending', context: null, available_paths: [] });
      // Each node's context: the event and the outputs of the nodes completed before it.
      expect(byKey.notify.context).toEqual({
        event: {
          id: 'sim-1',
          source: '/api/v1/user',
          type: 'svc.user.created',
          subject: 'u-1',
          time: EVENT.time,
          data: { ...EVENT.data, word: 'w' },
        },
        nodes: { score: { output: { result: 24 } }, route: { output: null } },
      });
      expect(byKey.notify.available_paths).toEqual(
        expect.arrayContaining(['event.data.items.sku', 'event.data.items.qty', 'nodes.score.output.result']),
      );
      expect(byKey.notify.available_paths.some((p: string) => /\.\d/.test(p))).toBe(false);
      expect(byKey.score.context.nodes).toEqual({});
      // Edges traversed: score->route, route->notify, notify->wait, wait->broken.
      expect(body.edges_traversed).toEqual([wf.edgeIds[0], wf.edgeIds[1], wf.edgeIds[3], wf.edgeIds[4]]);
      // Nothing persisted.
      expect(await runsOf(a, wf.id)).toEqual([]);
    });

    it('reports when the event would not be routed, and still simulates the graph', async () => {
      const wf = await workflow(
        a,
        { nodes: [{ key: 'n', type: 'END' }] },
        { source_filter: '/elsewhere', condition_jsonlogic: { var: 'event.data.flag' } },
      );
      const res = await a.call('POST', `/event_subscription/${wf.id}/test`, {
        event: { ...EVENT, type: 'svc.other' },
      });
      expect(res.status).toBe(200);
      expect(res.body.routing).toEqual({
        matched: false,
        reasons: [
          'event type "svc.other" is not "svc.user.created"',
          'source_filter does not match',
          'condition_jsonlogic is false',
        ],
      });
      expect(res.body.status).toBe('completed');
    });

    it.each<[string, unknown]>([
      ['a missing event', {}],
      ['an event that is not an object', { event: 'x' }],
      ['an event without id', { event: { ...EVENT, id: undefined } }],
      ['an event without specversion', { event: { ...EVENT, specversion: undefined } }],
      ['an event with a bad time', { event: { ...EVENT, time: 'yesterday' } }],
      ['an unknown body field', { event: EVENT, extra: true }],
    ])('answers 400 for %s', async (_what, body) => {
      const wf = await workflow(a, { nodes: [{ key: 'n', type: 'END' }] });
      const res = await a.call('POST', `/event_subscription/${wf.id}/test`, JSON.parse(JSON.stringify(body)));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    });

    it('accepts CloudEvent extension attributes; 404 for an unknown subscription', async () => {
      const wf = await workflow(a, { nodes: [{ key: 'n', type: 'END' }] });
      expect(
        (
          await a.call('POST', `/event_subscription/${wf.id}/test`, {
            event: { ...EVENT, traceparent: '00-abc' },
          })
        ).status,
      ).toBe(200);
      // The CloudEvents rules beyond the shape: 400 EVENT.INVALID naming the attribute.
      const bad = await a.call('POST', `/event_subscription/${wf.id}/test`, {
        event: { ...EVENT, source: 'has spaces', traceparent: 1.5 },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('EVENT.INVALID');
      expect(bad.body.details.errors.map((e: Json) => e.attribute).sort()).toEqual(['source', 'traceparent']);
      const res = await a.call('POST', '/event_subscription/nope/test', { event: EVENT });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('EVENT_SUBSCRIPTION.NOT_FOUND');
    });
  });

  describe('runs', () => {
    let runA: Json;
    let runB: Json;
    let subA: string;

    beforeAll(async () => {
      subA = (
        await workflow(a, {
          nodes: [{ key: 'ok', type: 'COMPUTE', config: { logic: { var: 'event.data.n' } } }],
        })
      ).id;
      await publish(t, { n: 1 });
      await settle(t);
      clock.advance(60_000);
      const subB = (
        await workflow(
          a,
          {
            nodes: [
              { key: 'bad', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.word' }] } } },
            ],
          },
          { event_type: 'svc.user.created' },
        )
      ).id;
      await publish(t, { n: 2, word: 'w' });
      await settle(t);
      [runA, runB] = [(await runsOf(a, subA))[0], (await runsOf(a, subB))[0]];
    });

    it('GET /workflow_run filters by subscription, status, event type and time ranges', async () => {
      const ids = async (query: string) =>
        (await a.call('GET', `/workflow_run?${query}`)).body.runs.map((r: Json) => r.id);
      const ofA = (await runsOf(a, subA)).map((r) => r.id);
      expect(ofA.length).toBe(2);
      // Newest first by default.
      expect(await ids(`event_subscription_id=${subA}`)).toEqual([...ofA].reverse());
      expect(await ids(`status=failed&event_subscription_id=${runB.event_subscription_id}`)).toEqual([
        runB.id,
      ]);
      expect((await ids('status=failed')).includes(runA.id)).toBe(false);
      expect((await ids('event_type=svc.user.created')).length).toBeGreaterThanOrEqual(2);
      expect(await ids('event_type=svc.none')).toEqual([]);
      const ts = runB.started_at;
      expect((await ids(`started_at_gte=${ts}`)).includes(runA.id)).toBe(false);
      expect((await ids(`started_at_gte=${ts}`)).includes(runB.id)).toBe(true);
      expect((await ids(`started_at_lte=${runA.started_at}`)).includes(runB.id)).toBe(false);
      expect((await ids(`completed_at_gte=${runB.completed_at}`)).includes(runA.id)).toBe(false);
      expect((await ids(`completed_at_lte=${runA.completed_at}`)).includes(runA.id)).toBe(true);
      expect((await ids(`completed_at_lte=${runA.completed_at}`)).includes(runB.id)).toBe(false);
      for (const bad of ['status=done', 'started_at_gte=yesterday', 'limit=251', 'sort_by=error', 'nope=1']) {
        expect((await a.call('GET', `/workflow_run?${bad}`)).status).toBe(400);
      }
    });

    it('GET /workflow_run sorts by every sortable column, both ways', async () => {
      for (const sortBy of [
        'created_at',
        'started_at',
        'completed_at',
        'status',
        'event_type',
        'event_subscription_id',
      ]) {
        for (const dir of ['asc', 'desc']) {
          const res = await a.call('GET', `/workflow_run?sort_by=${sortBy}&sort_dir=${dir}&limit=250`);
          expect(res.status).toBe(200);
          // A run not started or not finished yet sorts as the latest value.
          const values = res.body.runs.map((r: Json) => r[sortBy] ?? '\uffff');
          const sorted = [...values].sort();
          expect(values).toEqual(dir === 'asc' ? sorted : sorted.reverse());
        }
      }
      const page = await a.call('GET', '/workflow_run?limit=1&offset=1');
      expect(page.body).toMatchObject({ limit: 1, offset: 1, has_previous: true });
      expect(page.body.total).toBeGreaterThanOrEqual(2);
    });

    it('GET /workflow_run/{id} and /node (ordered by created_at); 404 for unknown runs', async () => {
      const run = await a.call('GET', `/workflow_run/${runB.id}`);
      expect(run.body).toMatchObject({
        id: runB.id,
        status: 'failed',
        error: expect.stringContaining('node "bad"'),
        trigger_event: { type: 'svc.user.created' },
      });
      const nodes = await a.call('GET', `/workflow_run/${runB.id}/node`);
      expect(nodes.body.nodes.map((n: Json) => n.node_key)).toEqual(['bad']);
      expect((await a.call('GET', '/workflow_run/nope')).body).toEqual({
        code: 'WORKFLOW.RUN_NOT_FOUND',
        message: 'Workflow run not found',
      });
      expect((await a.call('GET', '/workflow_run/nope/node')).status).toBe(404);
    });

    it('POST /workflow_run/{id}/context: the event and the outputs completed before the node', async () => {
      const wf = await workflow(a, {
        nodes: [
          {
            key: 'one',
            type: 'COMPUTE',
            config: { logic: { eachKey: { list: [{ preserve: { k: 1 } }, { preserve: { j: 2 } }] } } },
          },
          { key: 'two', type: 'COMPUTE', config: { logic: 2 } },
          { key: 'three', type: 'COMPUTE', config: { logic: 3 } },
        ],
        edges: [
          { from_node_id: 'one', to_node_id: 'two' },
          { from_node_id: 'two', to_node_id: 'three' },
        ],
      });
      const event = await publish(t, { n: 5 });
      await settle(t);
      const { run } = await onlyRun(a, wf.id);
      const res = await a.call('POST', `/workflow_run/${run.id}/context`, { node_key: 'three' });
      expect(res.status).toBe(200);
      expect(res.body.context).toEqual({
        event: {
          id: event.id,
          source: event.source,
          type: event.type,
          subject: event.subject,
          time: event.time,
          data: event.data,
        },
        nodes: { one: { output: { list: [{ k: 1 }, { j: 2 }] } }, two: { output: { result: 2 } } },
      });
      expect(res.body.available_paths).toEqual(
        expect.arrayContaining([
          'event.data.n',
          'nodes.one.output.list.k',
          'nodes.one.output.list.j',
          'nodes.two.output.result',
        ]),
      );
      expect(
        (await a.call('POST', `/workflow_run/${run.id}/context`, { node_key: 'one' })).body.context.nodes,
      ).toEqual({});
      const unknownKey = await a.call('POST', `/workflow_run/${run.id}/context`, { node_key: 'zzz' });
      expect(unknownKey.status).toBe(404);
      expect(unknownKey.body).toMatchObject({
        code: 'WORKFLOW.NODE_NOT_FOUND',
        details: { node_key: 'zzz', available_keys: ['one', 'two', 'three'] },
      });
      expect((await a.call('POST', '/workflow_run/nope/context', { node_key: 'one' })).status).toBe(404);
      expect((await a.call('POST', `/workflow_run/${run.id}/context`, {})).status).toBe(400);
    });
  });

  describe('POST /workflow/evaluate', () => {
    it('direct mode: evaluates against data; scalar results are wrapped under value', async () => {
      const scalar = await a.call('POST', '/workflow/evaluate', {
        expression: { '+': [{ var: 'a' }, 1] },
        data: { a: 41, list: [{ x: 1 }] },
      });
      expect(scalar).toEqual({
        status: 200,
        body: {
          result: { value: 42 },
          data_used: { a: 41, list: [{ x: 1 }] },
          available_paths: ['a', 'list', 'list.x'],
        },
      });
      const object = await a.call('POST', '/workflow/evaluate', {
        expression: { preserve: { ok: true } },
        data: {},
      });
      expect(object.body.result).toEqual({ ok: true });
      const nullish = await a.call('POST', '/workflow/evaluate', {
        expression: { var: 'missing' },
        data: {},
      });
      expect(nullish.body.result).toEqual({ value: null });
    });

    it('from-run mode: evaluates against the context the node saw', async () => {
      const wf = await workflow(a, {
        nodes: [
          { key: 'a', type: 'COMPUTE', config: { logic: 10 } },
          { key: 'b', type: 'COMPUTE', config: { logic: 20 } },
        ],
        edges: [{ from_node_id: 'a', to_node_id: 'b' }],
      });
      await publish(t, { n: 3 });
      await settle(t);
      const { run } = await onlyRun(a, wf.id);
      const res = await a.call('POST', '/workflow/evaluate', {
        expression: {
          '+': [{ var: 'nodes.a.output.result' }, { var: 'event.data.n' }, { var: 'nodes.b.output.result' }],
        },
        workflow_run_id: run.id,
        node_key: 'b',
      });
      expect(res.status).toBe(200);
      // nodes.b completed after the target's start, so it is not in the context (null + ... = 13).
      expect(res.body.result).toEqual({ value: 13 });
      expect(res.body.data_used.nodes).toEqual({ a: { output: { result: 10 } } });
      expect(res.body.available_paths).toContain('nodes.a.output.result');
      expect(
        (
          await a.call('POST', '/workflow/evaluate', {
            expression: { var: 'x' },
            workflow_run_id: 'nope',
            node_key: 'b',
          })
        ).status,
      ).toBe(404);
      expect(
        (
          await a.call('POST', '/workflow/evaluate', {
            expression: { var: 'x' },
            workflow_run_id: run.id,
            node_key: 'zz',
          })
        ).body.code,
      ).toBe('WORKFLOW.NODE_NOT_FOUND');
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['both modes', { expression: { var: 'a' }, data: {}, workflow_run_id: 'r', node_key: 'k' }, 'not both'],
      [
        'neither mode',
        { expression: { var: 'a' } },
        'Give data (direct mode) or workflow_run_id and node_key',
      ],
      ['a run without node_key', { expression: { var: 'a' }, workflow_run_id: 'r' }, 'node_key is required'],
      ['a node_key without run', { expression: { var: 'a' }, node_key: 'k' }, 'workflow_run_id is required'],
      ['no expression', { data: {} }, 'expression is required'],
      ['a scalar expression', { expression: 1, data: {} }, 'expression'],
      ['data that is not an object', { expression: { var: 'a' }, data: [1] }, 'data'],
    ])('400 for %s', async (_what, body, message) => {
      const res = await a.call('POST', '/workflow/evaluate', body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
      expect(res.body.message).toContain(message);
    });

    it('400 with a readable message when the expression is invalid or throws', async () => {
      const unknown = await a.call('POST', '/workflow/evaluate', { expression: { frob: [1] }, data: {} });
      expect(unknown).toEqual({
        status: 400,
        body: {
          code: 'WORKFLOW.EXPRESSION_INVALID',
          message: 'expression: unknown operator "frob"',
          details: { field: 'expression' },
        },
      });
      const nan = await a.call('POST', '/workflow/evaluate', {
        expression: { '/': [1, { var: 'w' }] },
        data: { w: 'x' },
      });
      expect(nan.body.message).toBe('expression: arithmetic on a value that is not a number (NaN)');
      // Deeper than the engine could compile: a clear 400 before parsing, not a crash (raw text body).
      const deep = `${'{"!":['.repeat(20_000)}1${']}'.repeat(20_000)}`;
      const tooDeep = await t.app.inject({
        method: 'POST',
        url: '/api/v1/workflow/evaluate',
        headers: { ...a.h, 'content-type': 'application/json' },
        payload: `{"expression":${deep},"data":{}}`,
      });
      expect(tooDeep.statusCode).toBe(400);
      expect(tooDeep.json()).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: 'Request body is nested more than 128 levels deep',
      });
      const proto = await a.call('POST', '/workflow/evaluate', {
        expression: { var: 'a.constructor.name' },
        data: { a: {} },
      });
      expect(proto.body.result).toEqual({ value: null });
    });
  });

  describe('authorization', () => {
    it('runs need workflow:read; context, evaluate and test need workflow:execute', async () => {
      const wf = await workflow(a, { nodes: [{ key: 'n', type: 'END' }] });
      const reader = await principal(t, ['workflow:read']);
      const executor = await principal(t, ['workflow:execute']);
      await settle(t);
      const run = (await a.call('GET', '/workflow_run?limit=1')).body.runs[0];
      for (const url of ['/workflow_run', `/workflow_run/${run.id}`, `/workflow_run/${run.id}/node`]) {
        expect((await a.call('GET', url, undefined, reader.headers)).status).toBe(200);
        const denied = await a.call('GET', url, undefined, executor.headers);
        expect(denied.status).toBe(403);
        expect(denied.body.details.required_scopes).toEqual(['workflow:read']);
      }
      const posts: Array<[string, unknown]> = [
        [
          `/workflow_run/${run.id}/context`,
          { node_key: (await a.call('GET', `/workflow_run/${run.id}/node`)).body.nodes[0].node_key },
        ],
        ['/workflow/evaluate', { expression: { var: 'a' }, data: { a: 1 } }],
        [`/event_subscription/${wf.id}/test`, { event: EVENT }],
      ];
      for (const [url, body] of posts) {
        expect((await a.call('POST', url, body, executor.headers)).status).toBe(200);
        const denied = await a.call('POST', url, body, reader.headers);
        expect(denied.status).toBe(403);
        expect(denied.body.details.required_scopes).toEqual(['workflow:execute']);
      }
    });
  });
});
