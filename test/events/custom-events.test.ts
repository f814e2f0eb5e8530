import type { AddressInfo } from 'node:net';
import { emitterFor, httpTransport, Mode, CloudEvent as SdkEvent } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, nodesOf, runsOf, settle, workflow } from '../workflows/helpers.js';
import { outboxEvents } from './helpers.js';

/**
 * Custom event types and POST /event (docs/events.md "Custom event types", "Publishing events"),
 * through HTTP, the outbox and the workflow engine: register, publish in every mode of the
 * CloudEvents HTTP binding (and with the CloudEvents SDK), validate, deduplicate; subscriptions and
 * webhooks refuse types that are not registered.
 */
describe(`custom event types and POST /event (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let base: string;

  const ORDER = 'com.example.order.created';
  const orderSchema = {
    type: 'object',
    required: ['order_id', 'total'],
    properties: { order_id: { type: 'string' }, total: { type: 'number', minimum: 0 } },
  };
  const order = (id: string, data: Record<string, unknown> = { order_id: id, total: 12.5 }) => ({
    specversion: '1.0',
    id,
    source: 'https://shop.example.com/orders',
    type: ORDER,
    data,
  });
  const publish = (body: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/event',
      headers: { ...a.h, 'content-type': 'application/cloudevents+json', ...headers },
      payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
  const taskCount = async () =>
    Number(
      (
        await t.ctx.store.db
          .selectFrom('event_delivery_task')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    a = await api(t);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const created = await a.call('POST', '/event_definition', {
      event_type: ORDER,
      description: 'An order was placed',
      data_schema: orderSchema,
      examples: [order('example-1')],
    });
    expect(created.status).toBe(200);
  });
  afterAll(() => t.close());

  describe('the registry', () => {
    it('answers the definition as GET lists it, beside the built-in types', async () => {
      const one = await a.call('GET', `/event_definition/${ORDER}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual({
        event_type: ORDER,
        schema_version: '1.0',
        description: 'An order was placed',
        source: null,
        data_schema: orderSchema,
        subject_template: null,
        examples: [order('example-1')],
        deprecated: false,
        builtin: false,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const custom = await a.call('GET', '/event_definition?builtin=false');
      expect(custom.body.event_definitions).toEqual([one.body]);
      const all = await a.call('GET', '/event_definition?limit=100');
      expect(all.body.total).toBe(23);
      expect(all.body.event_definitions.find((d: Json) => d.event_type === 'svc.user.created')).toMatchObject(
        {
          builtin: true,
          source: '/api/v1/user',
          created_at: null,
        },
      );
      expect((await a.call('GET', '/event_definition?search=order')).body.event_definitions).toHaveLength(1);
    });

    it.each<[string, Record<string, unknown>, number, string]>([
      ['the reserved svc. namespace', { event_type: 'svc.mine' }, 400, 'EVENT.RESERVED_TYPE'],
      ['a type registered already', { event_type: ORDER }, 409, 'EVENT_DEFINITION.EXISTS'],
      ['a type with a slash', { event_type: 'com/example' }, 400, 'VALIDATION_ERROR'],
      [
        'a schema that does not compile',
        { event_type: 'com.x.a', data_schema: { type: 'nonsense' } },
        400,
        'VALIDATION_ERROR',
      ],
      [
        'an example that breaks the schema',
        {
          event_type: 'com.x.b',
          data_schema: orderSchema,
          examples: [{ ...order('e'), type: 'com.x.b', data: {} }],
        },
        400,
        'VALIDATION_ERROR',
      ],
      [
        'an example of another type',
        { event_type: 'com.x.c', examples: [order('e')] },
        400,
        'VALIDATION_ERROR',
      ],
    ])('refuses %s', async (_what, body, status, code) => {
      const res = await a.call('POST', '/event_definition', body);
      expect(res.status).toBe(status);
      expect(res.body.code).toBe(code);
    });

    it('PATCH changes a custom type; a new data_schema bumps schema_version; built-in types cannot change', async () => {
      await a.call('POST', '/event_definition', { event_type: 'com.example.patch' });
      const described = await a.call('PATCH', '/event_definition/com.example.patch', {
        description: 'changed',
      });
      expect(described.body).toMatchObject({ description: 'changed', schema_version: '1.0' });
      const schema = await a.call('PATCH', '/event_definition/com.example.patch', {
        data_schema: { type: 'object' },
      });
      expect(schema.body).toMatchObject({ schema_version: '2.0', data_schema: { type: 'object' } });
      const again = await a.call('PATCH', '/event_definition/com.example.patch', {
        data_schema: { type: 'object' },
      });
      expect(again.body.schema_version).toBe('2.0');
      const builtin = await a.call('PATCH', '/event_definition/svc.user.created', { deprecated: true });
      expect(builtin.status).toBe(409);
      expect(builtin.body.code).toBe('EVENT_DEFINITION.BUILTIN');
      expect((await a.call('PATCH', '/event_definition/com.nope', { deprecated: true })).status).toBe(404);
    });
  });

  describe('POST /event', () => {
    it('structured mode: 202, through the outbox to a workflow run that reads the data; a retry is a duplicate', async () => {
      const wf = await workflow(
        a,
        {
          nodes: [
            { key: 'twice', type: 'COMPUTE', config: { logic: { '*': [{ var: 'event.data.total' }, 2] } } },
          ],
        },
        { event_type: ORDER, subject_filter: 'structured' },
      );
      const event = { ...order('order-1001'), subject: 'structured', orderchannel: 'web' };
      const first = await publish(event);
      expect(first.statusCode).toBe(202);
      expect(first.json()).toEqual({ id: 'order-1001', duplicate: false });
      const retry = await publish(event);
      expect(retry.statusCode).toBe(202);
      expect(retry.json()).toEqual({ id: 'order-1001', duplicate: true });
      await settle(t);
      const [run] = await runsOf(a, wf.id);
      expect(run.status).toBe('completed');
      // The producer's attributes are kept; svc fills time and datacontenttype.
      expect(run.trigger_event).toMatchObject({
        ...event,
        time: expect.any(String),
        datacontenttype: 'application/json',
      });
      expect((await nodesOf(a, run.id)).twice.output).toEqual({ result: 25 });
      expect(await runsOf(a, wf.id)).toHaveLength(1);
    });

    it('the same id from another source is 409; nothing is written', async () => {
      expect((await publish(order('shared-id'))).statusCode).toBe(202);
      const before = await taskCount();
      const res = await publish({ ...order('shared-id'), source: '/elsewhere' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'EVENT.ID_CONFLICT', details: { event_id: 'shared-id' } });
      expect(await taskCount()).toBe(before);
    });

    it.each<[string, unknown, string]>([
      ['data breaking data_schema', order('bad-1', { order_id: 'x', total: -1 }), 'EVENT.INVALID'],
      ['an unregistered type', { ...order('bad-2'), type: 'com.example.ordr.created' }, 'EVENT.UNKNOWN_TYPE'],
      ['a type of svc itself', { ...order('bad-3'), type: 'svc.user.created' }, 'EVENT.RESERVED_TYPE'],
      ['no id', { ...order('bad-4'), id: undefined }, 'EVENT.INVALID'],
      ['a bad specversion', { ...order('bad-5'), specversion: '0.3' }, 'EVENT.INVALID'],
      ['not an object', [1, 2], 'EVENT.INVALID'],
    ])('refuses %s with 400 and writes nothing', async (_what, body, code) => {
      const before = await taskCount();
      const res = await publish(body);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe(code);
      expect(await taskCount()).toBe(before);
    });

    it("answers ajv's errors for data breaking the schema, and the closest types for a misspelt one", async () => {
      const bad = await publish(order('bad-6', { order_id: 7 }));
      expect(bad.json().details.errors).toEqual(
        expect.arrayContaining([
          { path: '/order_id', message: 'must be string' },
          { path: '/', message: "must have required property 'total'" },
        ]),
      );
      const typo = await publish({ ...order('bad-7'), type: 'com.example.order.creatd' });
      expect(typo.json().message).toContain('did you mean "com.example.order.created"');
    });

    it('binary mode: ce-* headers and the data as the body (JSON, text, bytes)', async () => {
      await a.call('POST', '/event_definition', { event_type: 'com.example.blob' });
      const headers = (id: string, type: string, contentType: string) => ({
        'ce-specversion': '1.0',
        'ce-id': id,
        'ce-source': '/binary',
        'ce-type': type,
        'ce-subject': 'caf%C3%A9 bin',
        'ce-traceparent': '00-abc-def-01',
        'content-type': contentType,
      });
      const json = await publish(
        { order_id: 'b1', total: 3 },
        headers('bin-json', ORDER, 'application/json'),
      );
      expect(json.json()).toEqual({ id: 'bin-json', duplicate: false });
      const text = await publish(
        'hello',
        headers('bin-text', 'com.example.blob', 'text/plain; charset=utf-8'),
      );
      expect(text.statusCode).toBe(202);
      const bytes = await publish(
        Buffer.from([0, 1, 2, 255]),
        headers('bin-bytes', 'com.example.blob', 'application/octet-stream'),
      );
      expect(bytes.statusCode).toBe(202);
      // Binary data breaking the schema is refused like structured data.
      const bad = await publish({ order_id: 'b2' }, headers('bin-bad', ORDER, 'application/json'));
      expect(bad.statusCode).toBe(400);
      const stored = async (id: string) => (await outboxEvents(t, { id }))[0];
      expect(await stored('bin-json')).toMatchObject({
        source: '/binary',
        subject: 'café bin',
        traceparent: '00-abc-def-01',
        datacontenttype: 'application/json',
        data: { order_id: 'b1', total: 3 },
      });
      expect(await stored('bin-text')).toMatchObject({
        data: 'hello',
        datacontenttype: 'text/plain; charset=utf-8',
      });
      expect(await stored('bin-bytes')).toMatchObject({ data_base64: 'AAEC/w==' });
    });

    it('a batch: all accepted together, or none when one is bad', async () => {
      const batch = (events: unknown[]) =>
        publish(events, { 'content-type': 'application/cloudevents-batch+json' });
      const ok = await batch([order('batch-1'), order('batch-2'), order('batch-1')]);
      expect(ok.statusCode).toBe(202);
      expect(ok.json()).toEqual({
        events: [
          { id: 'batch-1', duplicate: false },
          { id: 'batch-2', duplicate: false },
          { id: 'batch-1', duplicate: true },
        ],
      });
      const before = await taskCount();
      const bad = await batch([order('batch-3'), order('batch-4', { total: 'x' })]);
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toMatchObject({ code: 'EVENT.INVALID', details: { index: 1 } });
      expect(bad.json().message).toMatch(/^events\.1: /);
      expect(await taskCount()).toBe(before);
      expect((await batch([])).statusCode).toBe(400);
      expect((await batch(Array.from({ length: 101 }, (_, i) => order(`many-${i}`)))).statusCode).toBe(400);
      expect((await batch(order('not-an-array') as unknown as unknown[])).statusCode).toBe(400);
    });

    it('the CloudEvents SDK emits to it unchanged, structured and binary', async () => {
      const key = await apiKey(t, ['workflow:execute']);
      for (const mode of [Mode.STRUCTURED, Mode.BINARY]) {
        const emit = emitterFor(httpTransport(`${base}/api/v1/event`), { mode });
        const event = new SdkEvent({
          id: `sdk-${mode}`,
          source: 'https://shop.example.com/orders',
          type: ORDER,
          data: { order_id: 'sdk', total: 1 },
        });
        const res = (await emit(event, { headers: key.headers })) as { body: string; headers: Json };
        expect(JSON.parse(res.body)).toEqual({ id: `sdk-${mode}`, duplicate: false });
      }
    });

    it('needs workflow:execute; events a workflow call causes carry its depth', async () => {
      const reader = await apiKey(t, ['event_subscription:read']);
      const refused = await publish(order('scoped'), reader.headers);
      expect(refused.statusCode).toBe(403);
      const caused = await publish(
        { ...order('caused'), svcdepth: 7 },
        { 'svc-depth': '2', 'svc-causation-id': 'run-1' },
      );
      expect(caused.statusCode).toBe(202);
      // The producer's own svcdepth is not trusted; the request's causation is.
      expect(await outboxEvents(t, { id: 'caused' })).toMatchObject([{ svcdepth: 2, causationid: 'run-1' }]);
    });
  });

  describe('types named by subscriptions and webhooks', () => {
    it('an unregistered type is 400 with the closest registered ones; * stays allowed for webhooks', async () => {
      const sub = await a.call('POST', '/event_subscription', {
        name: 's',
        event_type: 'svc.submision.created',
      });
      expect(sub.status).toBe(400);
      expect(sub.body).toMatchObject({
        code: 'EVENT.UNKNOWN_TYPE',
        details: { field: 'event_type', suggestions: expect.arrayContaining(['svc.submission.created']) },
      });
      expect(sub.body.message).toContain('did you mean "svc.submission.created"');
      const hook = await a.call('POST', '/webhook', {
        name: 'h',
        url: 'http://127.0.0.1:9/in',
        event_types: ['svc.user.created', 'svc.usr.deleted'],
      });
      expect(hook.status).toBe(400);
      expect(hook.body.details).toMatchObject({ field: 'event_types', event_type: 'svc.usr.deleted' });
      const all = await a.call('POST', '/webhook', {
        name: 'all',
        url: 'http://127.0.0.1:9/in',
        event_types: ['*'],
      });
      expect(all.status).toBe(200);
      expect(all.body.warnings).toBeUndefined();
      const okSub = await a.call('POST', '/event_subscription', { name: 's', event_type: ORDER });
      expect(okSub.status).toBe(200);
      const renamed = await a.call('PATCH', `/event_subscription/${okSub.body.id}`, {
        event_type: 'com.nope',
      });
      expect(renamed.status).toBe(400);
      const put = await a.call('PUT', `/event_subscription/${okSub.body.id}/graph`, {
        subscription: { event_type: 'com.nope' },
      });
      expect(put.body.details.field).toBe('subscription.event_type');
    });

    it('a deprecated type is accepted with a warning', async () => {
      await a.call('POST', '/event_definition', { event_type: 'com.example.old', deprecated: true });
      const sub = await a.call('POST', '/event_subscription', { name: 'old', event_type: 'com.example.old' });
      expect(sub.status).toBe(200);
      expect(sub.body.warnings).toEqual(['event type "com.example.old" is deprecated']);
      const hook = await a.call('POST', '/webhook', {
        name: 'old',
        url: 'http://127.0.0.1:9/in',
        event_types: ['com.example.old'],
      });
      expect(hook.body.warnings).toEqual(['event type "com.example.old" is deprecated']);
      expect((await a.call('GET', `/event_subscription/${sub.body.id}`)).body.warnings).toBeUndefined();
    });

    it('DELETE is refused while enabled subscriptions or webhooks name the type, unless forced', async () => {
      await a.call('POST', '/event_definition', { event_type: 'com.example.gone' });
      const sub = await a.call('POST', '/event_subscription', {
        name: 'uses it',
        event_type: 'com.example.gone',
      });
      const hook = await a.call('POST', '/webhook', {
        name: 'uses it',
        url: 'http://127.0.0.1:9/in',
        event_types: ['com.example.gone'],
      });
      const refused = await a.call('DELETE', '/event_definition/com.example.gone');
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'EVENT_DEFINITION.IN_USE',
        details: {
          used_by: [`subscription ${sub.body.id} (uses it)`, `webhook ${hook.body.id}`],
        },
      });
      const forced = await a.call('DELETE', '/event_definition/com.example.gone?force=true');
      expect(forced.body).toEqual({ status: 'deleted' });
      expect((await a.call('GET', '/event_definition/com.example.gone')).status).toBe(404);
      const late = await publish({ ...order('gone-1'), type: 'com.example.gone', data: {} });
      expect(late.statusCode).toBe(400);
      expect(late.json().code).toBe('EVENT.UNKNOWN_TYPE');
      // Registered again after a delete: a new definition.
      expect((await a.call('POST', '/event_definition', { event_type: 'com.example.gone' })).status).toBe(
        200,
      );
      expect((await a.call('DELETE', '/event_definition/svc.user.created')).status).toBe(409);
    });
  });
});
