import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { dialectName, onPostgres } from '../helpers/store.js';
import { type Api, api, type Json, pluginInstance, settle } from '../workflows/helpers.js';

/** /event_subscription CRUD and PUT/GET graph (SPEC "Event subscriptions and graphs"). */
describe(`event subscriptions and graphs (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    t = await startTestApp();
    a = await api(t);
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>) => a.call('POST', '/event_subscription', body);

  describe('CRUD', () => {
    it('creates with defaults and reads it back', async () => {
      const res = await create({ name: 'On signup', event_type: 'svc.user.created' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'On signup',
        event_type: 'svc.user.created',
        description: null,
        enabled: true,
        source_filter: null,
        subject_filter: null,
        condition_jsonlogic: null,
        max_runs_per_minute: null,
        retention: { completed_runs_seconds: null, failed_runs_seconds: null },
        flow_control: null,
        paused_reason: null,
        paused_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        updated_by: expect.any(String),
        deleted_at: null,
      });
      expect((await a.call('GET', `/event_subscription/${res.body.id}`)).body).toEqual(res.body);
    });

    it.each([
      [{ event_type: 'x' }, 'name is required'],
      [{ name: 'x' }, 'event_type is required'],
      [{ name: '', event_type: 'x' }, 'name'],
      [{ name: 'x', event_type: 'x', extra: 1 }, 'extra is not a known field'],
      [{ name: 'x', event_type: 'x', enabled: 'yes' }, 'enabled'],
      [{ name: 'x', event_type: 'x', condition_jsonlogic: 'true' }, 'condition_jsonlogic'],
    ])('rejects %j with 400', async (body, message) => {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
      expect(res.body.message).toContain(message);
    });

    it('rejects a condition that is not valid JSONLogic, saying why', async () => {
      const res = await create({ name: 'x', event_type: 'x', condition_jsonlogic: { and: [{ bogus: 1 }] } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_ERROR',
        message:
          'condition_jsonlogic is not a valid JSONLogic expression: at and.0: unknown operator "bogus"',
        details: { field: 'condition_jsonlogic.and.0' },
      });
    });

    it('lists with filters, search, sort and a limit of at most 250', async () => {
      const names = ['Alpha Mail', 'beta mail', 'Gamma'];
      for (const [i, name] of names.entries()) {
        await create({
          name,
          event_type: i === 2 ? 'svc.folder.created' : 'svc.folder.deleted',
          enabled: i !== 1,
        });
      }
      const q = (query: string) => a.call('GET', `/event_subscription?${query}`);
      const list = await q('event_type=svc.folder.deleted&sort_by=name&sort_dir=asc');
      expect(list.status).toBe(200);
      expect(list.body.event_subscriptions.map((s: Json) => s.name)).toEqual(['Alpha Mail', 'beta mail']);
      expect(list.body).toMatchObject({
        total: 2,
        limit: 25,
        offset: 0,
        has_next: false,
        has_previous: false,
      });
      expect(
        (await q('event_type=svc.folder.deleted&enabled=false')).body.event_subscriptions.map(
          (s: Json) => s.name,
        ),
      ).toEqual(['beta mail']);
      expect(
        (await q('name=MAIL&sort_by=name&sort_dir=desc')).body.event_subscriptions.map((s: Json) => s.name),
      ).toEqual(['beta mail', 'Alpha Mail']);
      expect((await q('search=gam')).body.event_subscriptions.map((s: Json) => s.name)).toEqual(['Gamma']);
      const page = await q('event_type=svc.folder.deleted&limit=1&offset=1&sort_by=created_at&sort_dir=asc');
      expect(page.body).toMatchObject({ total: 2, limit: 1, offset: 1, has_next: false, has_previous: true });
      expect((await q('limit=250')).status).toBe(200);
      expect((await q('limit=251')).status).toBe(400);
      expect((await q('limit=0')).status).toBe(400);
      const badSort = await q('sort_by=secret');
      expect(badSort.status).toBe(400);
      expect(badSort.body.details).toEqual({
        field: 'sort_by',
        in: 'querystring',
        allowed_values: ['created_at', 'updated_at', 'name', 'event_type', 'enabled'],
      });
      expect((await q('unknown=1')).status).toBe(400);
    });

    it('patches any field, validates, and 404s an unknown id', async () => {
      const { body: sub } = await create({ name: 'p', event_type: 'svc.user.created' });
      const res = await a.call('PATCH', `/event_subscription/${sub.id}`, {
        description: 'd',
        enabled: false,
        source_filter: '/api/v1/user',
        subject_filter: 's1',
        condition_jsonlogic: { '==': [1, 1] },
        event_type: 'svc.user.updated',
        name: 'p2',
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'p2',
        description: 'd',
        enabled: false,
        source_filter: '/api/v1/user',
        subject_filter: 's1',
        condition_jsonlogic: { '==': [1, 1] },
        event_type: 'svc.user.updated',
      });
      expect((await a.call('PATCH', `/event_subscription/${sub.id}`, {})).status).toBe(400);
      expect(
        (await a.call('PATCH', `/event_subscription/${sub.id}`, { condition_jsonlogic: { nope: [] } }))
          .status,
      ).toBe(400);
      expect((await a.call('PATCH', `/event_subscription/${sub.id}`, { id: 'x' })).status).toBe(400);
      const missing = await a.call('PATCH', '/event_subscription/nope', { name: 'x' });
      expect(missing).toEqual({
        status: 404,
        body: { code: 'EVENT_SUBSCRIPTION.NOT_FOUND', message: 'Event subscription not found' },
      });
    });

    it('deletes softly: {status: "deleted"}, then 404 everywhere', async () => {
      const { body: sub } = await create({ name: 'gone', event_type: 'svc.user.created' });
      expect(await a.call('DELETE', `/event_subscription/${sub.id}`)).toEqual({
        status: 200,
        body: { status: 'deleted' },
      });
      for (const [method, url] of [
        ['GET', `/event_subscription/${sub.id}`],
        ['DELETE', `/event_subscription/${sub.id}`],
        ['GET', `/event_subscription/${sub.id}/graph`],
      ]) {
        expect((await a.call(method, url)).status).toBe(404);
      }
      expect((await a.call('PUT', `/event_subscription/${sub.id}/graph`, { nodes: [] })).status).toBe(404);
      const listed = await a.call('GET', '/event_subscription?limit=250');
      expect(listed.body.event_subscriptions.some((s: Json) => s.id === sub.id)).toBe(false);
      const row = await t.ctx.store.db
        .selectFrom('event_subscription')
        .select('deleted_at')
        .where('id', '=', sub.id)
        .executeTakeFirst();
      expect(row?.deleted_at).not.toBeNull();
    });
  });

  describe('graph', () => {
    it('PUT remaps client ids to server ids, stores types upper case, and GET answers the same graph', async () => {
      const { body: sub } = await create({ name: 'g', event_type: 'svc.user.created' });
      const put = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        subscription: { description: 'with graph' },
        nodes: [
          {
            id: 'tmp-1',
            key: 'score',
            type: 'compute',
            config: { logic: { var: 'event.data.n' } },
            name: 'Score',
            retry_policy: { max_attempts: 2 },
            timeout_ms: 1000,
          },
          { id: 'tmp-2', key: 'done', type: 'End', continue_on_error: true },
        ],
        edges: [
          {
            id: 'tmp-e',
            from_node_id: 'tmp-1',
            to_node_id: 'tmp-2',
            label: 'then',
            condition_jsonlogic: { '!!': [1] },
          },
        ],
      });
      expect(put.status).toBe(200);
      const [score, done] = put.body.nodes;
      expect(put.body.id_map).toEqual({ 'tmp-1': score.id, 'tmp-2': done.id, 'tmp-e': put.body.edges[0].id });
      expect(score).toEqual({
        id: expect.any(String),
        event_subscription_id: sub.id,
        key: 'score',
        name: 'Score',
        description: null,
        type: 'COMPUTE',
        config: { logic: { var: 'event.data.n' } },
        retry_policy: { max_attempts: 2, backoff: 'exponential', base_seconds: 1 },
        timeout_ms: 1000,
        continue_on_error: false,
        created_at: expect.any(String),
      });
      expect(score.id).not.toBe('tmp-1');
      expect(done).toMatchObject({
        key: 'done',
        name: 'done',
        type: 'END',
        config: null,
        timeout_ms: null,
        continue_on_error: true,
      });
      expect(put.body.edges).toEqual([
        {
          id: expect.any(String),
          event_subscription_id: sub.id,
          from_node_id: score.id,
          to_node_id: done.id,
          label: 'then',
          condition_jsonlogic: { '!!': [1] },
          on_failure: false,
          created_at: expect.any(String),
        },
      ]);
      expect(put.body.subscription.description).toBe('with graph');
      const get = await a.call('GET', `/event_subscription/${sub.id}/graph`);
      const { id_map: _m, ...withoutMap } = put.body;
      expect(get.body).toEqual(withoutMap);
    });

    it('offers available_paths from the event definition data schema and the nodes, before any run', async () => {
      const { body: sub } = await create({ name: 'paths', event_type: 'svc.user.created' });
      await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [{ key: 'calc', type: 'COMPUTE', config: { logic: 1 } }],
      });
      const get = await a.call('GET', `/event_subscription/${sub.id}/graph`);
      expect(get.body.available_paths).toEqual(
        expect.arrayContaining([
          'event.id',
          'event.data',
          'event.data.user_id',
          'event.data.email',
          'nodes.calc.output',
          'nodes.calc.output.result',
        ]),
      );
    });

    it('replaces the graph atomically: old nodes and edges soft-deleted, new ones created', async () => {
      const { body: sub } = await create({ name: 'replace', event_type: 'svc.user.created' });
      const first = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [
          { key: 'a', type: 'SWITCH' },
          { key: 'b', type: 'END' },
        ],
        edges: [{ from_node_id: 'a', to_node_id: 'b' }],
      });
      const second = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [{ key: 'a', type: 'END' }],
      });
      expect(second.status).toBe(200);
      expect(second.body.nodes.map((n: Json) => [n.key, n.type])).toEqual([['a', 'END']]);
      expect(second.body.edges).toEqual([]);
      expect(second.body.nodes[0].id).not.toBe(first.body.nodes[0].id);
      const old = await t.ctx.store.db
        .selectFrom('workflow_node')
        .select(['id', 'deleted_at'])
        .where(
          'id',
          'in',
          first.body.nodes.map((n: Json) => n.id),
        )
        .execute();
      expect(old.every((n) => n.deleted_at !== null)).toBe(true);
      const oldEdge = await t.ctx.store.db
        .selectFrom('workflow_edge')
        .select('deleted_at')
        .where('id', '=', first.body.edges[0].id)
        .executeTakeFirst();
      expect(oldEdge?.deleted_at).not.toBeNull();
      // Metadata only: the graph is untouched.
      const meta = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        subscription: { name: 'renamed' },
      });
      expect(meta.body.subscription.name).toBe('renamed');
      expect(meta.body.nodes.map((n: Json) => n.id)).toEqual([second.body.nodes[0].id]);
      // An empty graph.
      const empty = await a.call('PUT', `/event_subscription/${sub.id}/graph`, { nodes: [], edges: [] });
      expect(empty.body).toMatchObject({ nodes: [], edges: [] });
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['a node without key', { nodes: [{ type: 'END' }] }, 'nodes.0.key is required'],
      ['a node without type', { nodes: [{ key: 'a' }] }, 'nodes.0.type is required'],
      [
        'an unknown node field',
        { nodes: [{ key: 'a', type: 'END', colour: 'red' }] },
        'nodes.0.colour is not a known field',
      ],
      [
        'an edge to an unknown node',
        { nodes: [{ key: 'a', type: 'END' }], edges: [{ from_node_id: 'a', to_node_id: 'zz' }] },
        '"zz" is not the id (or key) of a node in this request',
      ],
      [
        'an edge without nodes',
        { edges: [{ from_node_id: 'a', to_node_id: 'b' }] },
        '"a" is not the id (or key) of a node in this request',
      ],
      [
        'an invalid config',
        { nodes: [{ key: 'a', type: 'DELAY', config: {} }] },
        'DELAY requires config.delay_ms or config.until_template',
      ],
      [
        'a wait no timestamp can hold',
        { nodes: [{ key: 'a', type: 'DELAY', config: { delay_ms: Number.MAX_SAFE_INTEGER } }] },
        'use until_template for a later moment',
      ],
      [
        'a retry policy whose waits outgrow a year',
        { nodes: [{ key: 'a', type: 'END', retry_policy: { max_attempts: 100, base_seconds: 60 } }] },
        'the longest wait allowed is 31536000 s',
      ],
      [
        'a duplicate key',
        {
          nodes: [
            { key: 'a', type: 'END' },
            { key: 'a', type: 'END' },
          ],
        },
        'key "a" is already used',
      ],
      ['a bad key', { nodes: [{ key: 'a.b', type: 'END' }] }, 'key must be 1-100 characters'],
      [
        'an unknown type',
        { nodes: [{ key: 'a', type: 'LOOP' }] },
        'type must be one of ACTION, COMPUTE, SWITCH, JOIN, DELAY, END',
      ],
      ['a bad subscription field', { subscription: { enabled: 'no' } }, 'subscription.enabled'],
    ])('rejects %s with 400 and changes nothing', async (_what, body, message) => {
      const { body: sub } = await create({ name: 'strict', event_type: 'svc.user.created' });
      const before = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [{ key: 'keep', type: 'END' }],
      });
      const res = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        ...body,
        subscription: { ...(body.subscription as object), name: 'changed?' },
      });
      expect(res.status).toBe(400);
      expect(['VALIDATION_ERROR', 'WORKFLOW.INVALID_GRAPH']).toContain(res.body.code);
      expect(res.body.message).toContain(message);
      const after = await a.call('GET', `/event_subscription/${sub.id}/graph`);
      expect(after.body.subscription.name).toBe('strict');
      expect(after.body.nodes.map((n: Json) => n.id)).toEqual(before.body.nodes.map((n: Json) => n.id));
    });

    it('a failure inside the PUT transaction rolls everything back: old graph intact, nothing partial', async () => {
      const { body: sub } = await create({ name: 'atomic', event_type: 'svc.user.created' });
      const before = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [
          { key: 'a', type: 'SWITCH' },
          { key: 'b', type: 'END' },
        ],
        edges: [{ from_node_id: 'a', to_node_id: 'b' }],
      });
      expect(before.status).toBe(200);
      const rows = async () => ({
        nodes: await t.ctx.store.db
          .selectFrom('workflow_node')
          .select(['id', 'graph_version', 'deleted_at'])
          .where('event_subscription_id', '=', sub.id)
          .orderBy('id')
          .execute(),
        edges: await t.ctx.store.db
          .selectFrom('workflow_edge')
          .select(['id', 'graph_version', 'deleted_at'])
          .where('event_subscription_id', '=', sub.id)
          .orderBy('id')
          .execute(),
        sub: await t.ctx.store.db
          .selectFrom('event_subscription')
          .select(['name', 'graph_version', 'updated_at'])
          .where('id', '=', sub.id)
          .executeTakeFirst(),
      });
      const stored = await rows();
      // Nothing in the request is wrong: validation passes, so the failure can only come from inside the
      // transaction. A trigger refuses the edge insert, the last write, after the subscription update,
      // the soft-delete of the old graph and the insert of the new nodes.
      if (onPostgres) {
        await sql`create function svc_test_refuse_edge() returns trigger language plpgsql as $$
          begin if new.label = 'refused' then raise exception 'edge refused by the test'; end if; return new; end $$`.execute(
          t.ctx.store.db,
        );
        await sql`create trigger svc_test_refuse_edge before insert on workflow_edge
          for each row execute function svc_test_refuse_edge()`.execute(t.ctx.store.db);
      } else {
        await sql`create trigger svc_test_refuse_edge before insert on workflow_edge
          when new.label = 'refused' begin select raise(abort, 'edge refused by the test'); end`.execute(
          t.ctx.store.db,
        );
      }
      try {
        const res = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
          subscription: { name: 'renamed?' },
          nodes: [
            { key: 'x', type: 'SWITCH' },
            { key: 'y', type: 'SWITCH' },
            { key: 'z', type: 'END' },
          ],
          edges: [
            { from_node_id: 'x', to_node_id: 'y' },
            { from_node_id: 'y', to_node_id: 'z', label: 'refused' },
          ],
        });
        expect(res.status).toBe(500);
        expect(res.body.message).not.toContain('refused');
      } finally {
        await sql`drop trigger svc_test_refuse_edge${sql.raw(onPostgres ? ' on workflow_edge' : '')}`.execute(
          t.ctx.store.db,
        );
        if (onPostgres) await sql`drop function svc_test_refuse_edge()`.execute(t.ctx.store.db);
      }
      // Every row is as it was: no new nodes or edges, none soft-deleted, the metadata and version unchanged.
      expect(await rows()).toEqual(stored);
      const after = await a.call('GET', `/event_subscription/${sub.id}/graph`);
      expect(after.body.subscription.name).toBe('atomic');
      expect(after.body.nodes.map((n: Json) => n.id)).toEqual(before.body.nodes.map((n: Json) => n.id));
      expect(after.body.edges.map((e: Json) => e.id)).toEqual(before.body.edges.map((e: Json) => e.id));
      // The trigger is gone: the same request now succeeds as the next version.
      const retry = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [{ key: 'x', type: 'END' }],
      });
      expect(retry.status).toBe(200);
    });

    it('refuses an ACTION whose plugin instance or action does not exist', async () => {
      const core = await pluginInstance(a, 'core');
      const { body: sub } = await create({ name: 'act', event_type: 'svc.user.created' });
      const noInstance = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [
          { key: 'x', type: 'ACTION', config: { plugin_instance_id: 'missing', plugin_action: 'echo' } },
        ],
      });
      expect(noInstance.status).toBe(400);
      expect(noInstance.body).toMatchObject({
        code: 'WORKFLOW.INVALID_GRAPH',
        details: { field: 'nodes.0.config' },
      });
      const noAction = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [
          { key: 'x', type: 'ACTION', config: { plugin_instance_id: core, plugin_action: 'teleport' } },
        ],
      });
      expect(noAction.status).toBe(400);
      expect(noAction.body.message).toContain('nodes.0 (key "x")');
      const ok = await a.call('PUT', `/event_subscription/${sub.id}/graph`, {
        nodes: [
          {
            key: 'x',
            type: 'action',
            config: { plugin_instance_id: core, plugin_action: 'echo', input_mapping: { a: 1 } },
          },
        ],
      });
      expect(ok.status).toBe(200);
      expect(ok.body.nodes[0].config).toEqual({
        plugin_instance_id: core,
        plugin_action: 'echo',
        input_mapping: { a: 1 },
      });
    });
  });

  describe('authorization', () => {
    it('each endpoint needs its scope (403 names it)', async () => {
      const { body: sub } = await create({ name: 'authz', event_type: 'svc.user.created' });
      const cases: Array<[string, string, string, unknown?]> = [
        [
          'POST',
          '/event_subscription',
          'event_subscription:write',
          { name: 'x', event_type: 'svc.user.created' },
        ],
        ['GET', '/event_subscription', 'event_subscription:read'],
        ['GET', `/event_subscription/${sub.id}`, 'event_subscription:read'],
        ['PATCH', `/event_subscription/${sub.id}`, 'event_subscription:write', { name: 'z' }],
        ['GET', `/event_subscription/${sub.id}/graph`, 'workflow:read'],
        ['PUT', `/event_subscription/${sub.id}/graph`, 'workflow:write', { nodes: [] }],
        ['DELETE', `/event_subscription/${sub.id}`, 'event_subscription:delete'],
      ];
      const nobody = await principal(t, ['user:read']);
      await settle(t);
      for (const [method, url, scope, body] of cases) {
        const denied = await a.call(method, url, body, nobody.headers);
        expect(denied.status).toBe(403);
        expect(denied.body.details).toEqual({ required_scopes: [scope], mode: 'any' });
        const holder = await principal(t, [scope]);
        await settle(t);
        expect((await a.call(method, url, body, holder.headers)).status).toBe(200);
      }
    });
  });
});
