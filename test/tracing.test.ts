import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/lib/clock.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { admin } from './helpers/auth.js';
import { OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { SvcProcess } from './helpers/process.js';
import { dialectName, sharedDatabase } from './helpers/store.js';
import { createHook, type Receiver, receiver } from './webhooks/helpers.js';
import { type Api, api, job, onlyRun, pluginInstance, settle, workflow } from './workflows/helpers.js';

/**
 * Tracing (docs/observability.md), through HTTP, the outbox, the engine, the `http` action and the
 * webhook sender, exported over OTLP/HTTP to a receiver of the test's own: one trace from the
 * request to the last outbound call, with the parents docs/observability.md names.
 */

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

const parentOf = (traceparent: unknown) => String(traceparent).split('-')[2];
const traceOf = (traceparent: unknown) => String(traceparent).split('-')[1];

/** A subscription's graph that computes, then calls `url` (a query added) with the `http` action. */
const callGraph = (http: string, url: string) => ({
  nodes: [
    { key: 'shape', type: 'COMPUTE', config: { logic: { cat: ['user ', { var: 'event.data.email' }] } } },
    {
      key: 'call',
      type: 'ACTION',
      config: {
        plugin_instance_id: http,
        plugin_action: 'request',
        input_mapping: {
          method: 'POST',
          url: `${url}?token=not-in-spans`,
          body: { var: 'nodes.shape.output' },
        },
      },
    },
  ],
  edges: [{ from_node_id: 'shape', to_node_id: 'call' }],
});

describe(`tracing on (${dialectName})`, () => {
  const clock = manualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
  let otlp: OtlpReceiver;
  let t: TestApp;
  let a: Api;
  let http: string;
  let site: Receiver;
  let rx: Receiver;

  beforeAll(async () => {
    otlp = await new OtlpReceiver().start();
    site = await receiver();
    rx = await receiver();
    t = await startTestApp({
      clock,
      env: otlp.env({ SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' }),
    });
    a = await api(t);
    http = await pluginInstance(a, 'http');
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([otlp.close(), site.close(), rx.close()]);
  });

  /** Registers a custom event type the test publishes or subscribes to. */
  const registerType = async (type: string) => {
    const res = await a.call('POST', '/event_definition', { event_type: type, description: type });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };
  /** A subscription on `type` whose graph is one COMPUTE. */
  const computeOn = (type: string, logic: unknown = 1) =>
    workflow(a, { nodes: [{ key: 'n', type: 'COMPUTE', config: { logic } }] }, { event_type: type });

  it('a request, its event, the run, its nodes, the http call and the webhook are one trace', async () => {
    const wf = await workflow(a, callGraph(http, site.url));
    await createHook(t, a.h, { name: 'traced', url: rx.url, event_types: ['svc.user.created'] });
    const made = await a.call('POST', '/user', {
      email: 'traced@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await settle(t);
    await t.ctx.services.webhookEngine.deliverDue();

    // The request: a server span named from its route, the root of the trace.
    const [request] = await otlp.named('POST /api/v1/user', (s) => s.kind === SERVER);
    expect(request.parentSpanId).toBe('');
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/user',
      'http.response.status_code': 200,
    });
    const trace = request.traceId;
    const inTrace = (s: ReceivedSpan) => s.traceId === trace;
    // The request's log lines (its completion line among them) name its trace and span.
    const lines = t.logs.filter((l) => l.trace_id === trace);
    expect(lines.filter((l) => l.span_id === request.spanId).length).toBeGreaterThan(0);

    // The run: a child of the request (its event was published inside it), answering its trace.
    const { run } = await onlyRun(a, wf.id);
    const [runSpan] = await otlp.named('workflow.run', inTrace);
    expect(runSpan.parentSpanId).toBe(request.spanId);
    expect(runSpan.attributes).toMatchObject({
      'svc.workflow_run.id': run.id,
      'svc.event_subscription.id': wf.id,
      'svc.workflow_run.status': 'completed',
      'svc.workflow_run.graph_version': 1,
    });
    expect(run.trace_id).toBe(trace);
    expect((await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}`)).body.runs[0].trace_id).toBe(
      trace,
    );
    // The run's end line names the run's span; every line in the trace is the request's or the run's.
    const ended = lines.filter((l) => l.msg === 'workflow run completed');
    expect(ended.map((l) => [l.run_id, l.span_id])).toEqual([[run.id, runSpan.spanId]]);
    expect(lines.every((l) => l.span_id === request.spanId || l.span_id === runSpan.spanId)).toBe(true);

    // Its nodes: children of the run, with type, key, attempts and status.
    const [compute] = await otlp.named('workflow.node COMPUTE', inTrace);
    const [action] = await otlp.named('workflow.node ACTION', inTrace);
    for (const n of [compute, action]) expect(n.parentSpanId).toBe(runSpan.spanId);
    expect(action.attributes).toMatchObject({
      'svc.workflow_node.key': 'call',
      'svc.workflow_node.type': 'ACTION',
      'svc.workflow_node.attempts': 1,
      'svc.workflow_node.status': 'completed',
    });

    // The plugin call: a client span under the ACTION's node; the URL without its query.
    const [call] = await otlp.named('plugin http.request', inTrace);
    expect(call.kind).toBe(CLIENT);
    expect(call.parentSpanId).toBe(action.spanId);
    expect(call.attributes).toMatchObject({
      'svc.plugin.name': 'http',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'url.full': site.url,
    });
    // The site got the call's context.
    expect(site.received).toHaveLength(1);
    expect(traceOf(site.received[0].headers.traceparent)).toBe(trace);
    expect(parentOf(site.received[0].headers.traceparent)).toBe(call.spanId);

    // The webhook: its request carries the attempt's span; its body the event's context (the request's).
    const [deliver] = await otlp.named('webhook.deliver', inTrace);
    expect(deliver.kind).toBe(CLIENT);
    expect(deliver.parentSpanId).toBe(request.spanId);
    expect(deliver.attributes).toMatchObject({ 'http.response.status_code': 200, 'url.full': rx.url });
    const got = rx.received.find((r) => JSON.parse(r.body).type === 'svc.user.created');
    expect(got).toBeDefined();
    expect(parentOf(got?.headers.traceparent)).toBe(deliver.spanId);
    const body = JSON.parse(got?.body ?? '{}');
    expect(traceOf(body.traceparent)).toBe(trace);
    expect(parentOf(body.traceparent)).toBe(request.spanId);

    // Driven from its start to its end in one stretch: no segment, its run span is that stretch.
    expect(otlp.spans.filter((s) => s.name === 'workflow.run.segment' && inTrace(s))).toEqual([]);
    // Nothing of the query string, anywhere.
    expect(otlp.bodies.join('')).not.toContain('not-in-spans');
  });

  it("POST /event joins the trace of an event that carries one, or else the request's", async () => {
    const TYPE = 'com.example.traced';
    await registerType(TYPE);
    const wf = await computeOn(TYPE);
    const producer = `00-${'a1'.repeat(16)}-${'b2'.repeat(8)}-01`;
    const post = (event: Record<string, unknown>, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/event',
        headers: { ...a.h, 'content-type': 'application/cloudevents+json', ...headers },
        payload: JSON.stringify({
          specversion: '1.0',
          source: 'https://shop.example',
          type: TYPE,
          data: {},
          ...event,
        }),
      });
    // Structured mode, the event's own traceparent: the run is a child of the producer's span.
    expect((await post({ id: 'e-structured', traceparent: producer })).statusCode).toBe(202);
    // Binary mode, ce-traceparent: the same.
    const binary = await t.app.inject({
      method: 'POST',
      url: '/api/v1/event',
      headers: {
        ...a.h,
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': 'e-binary',
        'ce-source': 'https://shop.example',
        'ce-type': TYPE,
        'ce-traceparent': producer,
      },
      payload: '{}',
    });
    expect(binary.statusCode).toBe(202);
    // No traceparent in the event, one on the request: the request's span (in the caller's trace).
    const caller = `00-${'c3'.repeat(16)}-${'d4'.repeat(8)}-01`;
    expect((await post({ id: 'e-request' }, { traceparent: caller })).statusCode).toBe(202);
    await settle(t);

    const runs = (await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}`)).body.runs;
    const byEvent = Object.fromEntries(runs.map((r: { event_id: string }) => [r.event_id, r]));
    for (const id of ['e-structured', 'e-binary']) {
      expect(byEvent[id].trigger_event.traceparent).toBe(producer);
      expect(byEvent[id].trace_id).toBe('a1'.repeat(16));
      const [span] = await otlp.named('workflow.run', (s) => s.attributes['svc.event.id'] === id);
      expect(span.traceId).toBe('a1'.repeat(16));
      expect(span.parentSpanId).toBe('b2'.repeat(8));
    }
    const [request] = await otlp.named('POST /api/v1/event', (s) => s.traceId === 'c3'.repeat(16));
    expect(request.parentSpanId).toBe('d4'.repeat(8));
    expect(byEvent['e-request'].trace_id).toBe('c3'.repeat(16));
    expect(parentOf(byEvent['e-request'].trigger_event.traceparent)).toBe(request.spanId);
    const [span] = await otlp.named('workflow.run', (s) => s.attributes['svc.event.id'] === 'e-request');
    expect(span.parentSpanId).toBe(request.spanId);
  });

  it("a schedule's fire starts a trace of its own, which its runs join", async () => {
    const TYPE = 'com.example.tick';
    await registerType(TYPE);
    const wf = await computeOn(TYPE);
    const made = await a.call('POST', '/schedule', {
      name: 'every minute',
      event_type: TYPE,
      cron: '* * * * *',
    });
    expect(made.status).toBe(200);
    clock.advance(60_000);
    await job(t, 'schedules').run();
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    const [fire] = await otlp.named('schedule.fire', (s) => s.attributes['svc.schedule.id'] === made.body.id);
    expect(fire.parentSpanId).toBe('');
    expect(fire.attributes['svc.event.id']).toBe(run.event_id);
    expect(run.trace_id).toBe(fire.traceId);
    const [runSpan] = await otlp.named('workflow.run', (s) => s.attributes['svc.workflow_run.id'] === run.id);
    expect(runSpan.parentSpanId).toBe(fire.spanId);
  });

  it("a CALL's child run and a run started by a run's end event are in the causing run's trace", async () => {
    const TYPE = 'com.example.called';
    await registerType(TYPE);
    const child = await computeOn(TYPE, 2);
    // The parent calls the child, then fails: its end event (always published when a run fails)
    // starts a run of `after`, a run caused by a run.
    const parent = await workflow(a, {
      nodes: [
        { key: 'down', type: 'CALL', config: { subscription_id: child.id, input: {} } },
        { key: 'boom', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.nope.deeper' }] } } },
      ],
      edges: [{ from_node_id: 'down', to_node_id: 'boom' }],
    });
    const after = await workflow(
      a,
      { nodes: [{ key: 'a', type: 'COMPUTE', config: { logic: 3 } }] },
      {
        event_type: 'svc.workflow_run.failed',
        condition_jsonlogic: { '==': [{ var: 'event.data.event_subscription_id' }, parent.id] },
      },
    );
    const made = await a.call('POST', '/user', {
      email: 'caller@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await settle(t);
    const { run: top } = await onlyRun(a, parent.id);
    const { run: called } = await onlyRun(a, child.id);
    const { run: next } = await onlyRun(a, after.id);
    expect([top.status, called.status, next.status]).toEqual(['failed', 'completed', 'completed']);
    expect(called.trace_id).toBe(top.trace_id);
    expect(next.trace_id).toBe(top.trace_id);
    const inTrace = (s: ReceivedSpan) => s.traceId === top.trace_id;
    const [call] = await otlp.named('workflow.node CALL', inTrace);
    const [topSpan] = await otlp.named('workflow.run', (s) => s.attributes['svc.workflow_run.id'] === top.id);
    const [calledSpan] = await otlp.named(
      'workflow.run',
      (s) => s.attributes['svc.workflow_run.id'] === called.id,
    );
    const [nextSpan] = await otlp.named(
      'workflow.run',
      (s) => s.attributes['svc.workflow_run.id'] === next.id,
    );
    expect(call.parentSpanId).toBe(topSpan.spanId);
    expect(calledSpan.parentSpanId).toBe(call.spanId);
    expect(nextSpan.parentSpanId).toBe(topSpan.spanId);
  });

  it('a caller that did not sample its trace is followed: nothing recorded, the context travels on', async () => {
    const TYPE = 'com.example.unsampled';
    await registerType(TYPE);
    const wf = await workflow(a, callGraph(http, site.url), { event_type: TYPE });
    const caller = `00-${'e5'.repeat(16)}-${'f6'.repeat(8)}-00`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/event',
      headers: { ...a.h, 'content-type': 'application/cloudevents+json', traceparent: caller },
      payload: JSON.stringify({
        specversion: '1.0',
        id: 'e-unsampled',
        source: 'https://shop.example',
        type: TYPE,
        data: {},
      }),
    });
    expect(res.statusCode).toBe(202);
    const before = site.received.length;
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(run.trace_id).toBe('e5'.repeat(16));
    // The call went out in the caller's trace, unsampled: spans not recorded pass the caller's context on.
    const sent = String(site.received[before].headers.traceparent);
    expect(sent).toBe(caller);
    // A span recorded after this run's proves the export ran; none of the caller's trace is in it.
    const made = await a.call('POST', '/user', {
      email: 'after-unsampled@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await otlp.named(
      'POST /api/v1/user',
      (s) => s.attributes['http.response.status_code'] === 200 && s.startMs >= 0,
      1,
    );
    await settle(t);
    await otlp.named('workflow.run', (s) => s.attributes['svc.event.type'] === 'svc.user.created', 1);
    expect(otlp.spans.filter((s) => s.traceId === 'e5'.repeat(16))).toEqual([]);
  });

  it('a run cancelled while it waits is recorded then, and the cancel answers its trace', async () => {
    const wf = await workflow(a, { nodes: [{ key: 'nap', type: 'DELAY', config: { delay_ms: 3_600_000 } }] });
    const made = await a.call('POST', '/user', {
      email: 'cancelled@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await settle(t);
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');
    const cancelled = await a.call('POST', `/workflow_run/${run.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', trace_id: run.trace_id });
    const [span] = await otlp.named('workflow.run', (s) => s.attributes['svc.workflow_run.id'] === run.id);
    expect(span.traceId).toBe(run.trace_id);
    expect(span.attributes['svc.workflow_run.status']).toBe('cancelled');
  });

  it('a failed node, its run and a failed webhook attempt are error spans; their log lines name them', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'boom', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.nope.deeper' }] } } },
      ],
    });
    const refusing = await receiver();
    refusing.reply = { status: 503 };
    await createHook(t, a.h, { name: 'refusing', url: refusing.url, event_types: ['svc.user.created'] });
    const made = await a.call('POST', '/user', {
      email: 'failing@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await settle(t);
    await t.ctx.services.webhookEngine.deliverDue();
    await refusing.close();
    const [attempt] = await otlp.named(
      'webhook.deliver',
      (s) => s.attributes['http.response.status_code'] === 503,
    );
    expect(attempt.status).toBe(ERROR);
    const failedLine = t.logs.find((l) => l.msg === 'webhook attempt failed' && l.http_status === 503);
    expect(failedLine).toMatchObject({ trace_id: attempt.traceId, span_id: attempt.spanId });
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    const [runSpan] = await otlp.named('workflow.run', (s) => s.attributes['svc.workflow_run.id'] === run.id);
    expect(runSpan.status).toBe(ERROR);
    expect(runSpan.statusMessage).toBe(run.error);
    const [node] = await otlp.named(
      'workflow.node COMPUTE',
      (s) => s.attributes['svc.workflow_run.id'] === run.id,
    );
    expect(node.status).toBe(ERROR);
    expect(node.attributes['svc.workflow_node.status']).toBe('failed');
    const failedRun = t.logs.find((l) => l.msg === 'workflow run failed' && l.run_id === run.id);
    expect(failedRun).toMatchObject({ trace_id: runSpan.traceId, span_id: runSpan.spanId });
  });
});

describe(`tracing across a DELAY and a restart (${dialectName})`, () => {
  it('the segments before and after, and the run, are in the trace the run answers', async () => {
    const clock = manualClock(new Date('2026-05-01T10:00:00.000Z'));
    const otlp = await new OtlpReceiver().start();
    const db = await sharedDatabase('svc-tracing-');
    const env = otlp.env({ SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' });
    try {
      const first = await startTestApp({ databaseUrl: db.url, env, clock });
      const who = await admin(first);
      const a1 = await api(first, who);
      const wf = await workflow(a1, {
        nodes: [
          { key: 'wait', type: 'DELAY', config: { delay_ms: 60_000 } },
          { key: 'after', type: 'COMPUTE', config: { logic: 'done' } },
        ],
        edges: [{ from_node_id: 'wait', to_node_id: 'after' }],
      });
      const made = await a1.call('POST', '/user', {
        email: 'delayed@example.test',
        password: 'Tr4ced-passw0rd!',
      });
      expect(made.status).toBe(200);
      await settle(first);
      const { run } = await onlyRun(a1, wf.id);
      expect(run.status).toBe('running');
      const trace = run.trace_id as string;
      // The worker goes away; its spans were exported as it closed.
      await first.close();
      const [before] = await otlp.named('workflow.run.segment', (s) => s.traceId === trace);
      expect(before.attributes['svc.workflow_run.segment.outcome']).toBe('released');

      const second = await startTestApp({ databaseUrl: db.url, env, clock });
      try {
        // The same admin: a new one would be an event of the subscription's type.
        const a2 = await api(second, who);
        clock.advance(61_000);
        await job(second, 'workflows').run();
        await settle(second);
        const { run: done } = await onlyRun(a2, wf.id);
        expect(done.status).toBe('completed');
        expect(done.trace_id).toBe(trace);
        const segments = await otlp.named('workflow.run.segment', (s) => s.traceId === trace, 2);
        const [runSpan] = await otlp.named('workflow.run', (s) => s.traceId === trace);
        expect(runSpan.attributes['svc.workflow_run.id']).toBe(run.id);
        expect(segments.map((s) => s.attributes['svc.workflow_run.segment.outcome'])).toEqual([
          'released',
          'ended',
        ]);
        for (const s of segments) {
          expect(s.parentSpanId).toBe(runSpan.spanId);
          expect(s.links).toEqual([{ traceId: trace, spanId: runSpan.spanId }]);
        }
        // Its whole life: from the start before the restart to the end after it.
        expect(runSpan.endMs - runSpan.startMs).toBeGreaterThanOrEqual(60_000);
        const [after] = await otlp.named('workflow.node COMPUTE', (s) => s.traceId === trace);
        expect(after.parentSpanId).toBe(runSpan.spanId);
      } finally {
        await second.close();
      }
    } finally {
      await otlp.close();
      await db.drop();
    }
  });
});

describe(`tracing off (${dialectName})`, () => {
  let otlp: OtlpReceiver;
  let t: TestApp;
  let a: Api;
  let site: Receiver;
  let rx: Receiver;

  beforeAll(async () => {
    otlp = await new OtlpReceiver().start();
    site = await receiver();
    rx = await receiver();
    // The receiver listens, but nothing names it: tracing is off.
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    a = await api(t);
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([otlp.close(), site.close(), rx.close()]);
  });

  it('exports nothing and injects no traceparent anywhere', async () => {
    expect(t.ctx.tracer.enabled).toBe(false);
    const http = await pluginInstance(a, 'http');
    const wf = await workflow(a, callGraph(http, site.url));
    await createHook(t, a.h, { name: 'traced', url: rx.url, event_types: ['svc.user.created'] });
    const made = await a.call('POST', '/user', {
      email: 'untraced@example.test',
      password: 'Tr4ced-passw0rd!',
    });
    expect(made.status).toBe(200);
    await settle(t);
    await t.ctx.services.webhookEngine.deliverDue();
    const { run } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(run.trace_id).toBe(null);
    expect(run.trigger_event.traceparent).toBeUndefined();
    expect(site.received).toHaveLength(1);
    expect(site.received[0].headers.traceparent).toBeUndefined();
    const got = rx.received.find((r) => JSON.parse(r.body).type === 'svc.user.created');
    expect(got?.headers.traceparent).toBeUndefined();
    expect(JSON.parse(got?.body ?? '{}').traceparent).toBeUndefined();
    expect(otlp.requests).toBe(0);
  });
});

describe(`the OpenTelemetry SDK in a svc process (${dialectName})`, () => {
  /** The @opentelemetry modules a `svc serve` process imported while it started and answered a request. */
  const importedBy = async (env: Record<string, string>): Promise<string[]> => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-imports-'));
    const log = join(dir, 'imports');
    writeFileSync(log, '');
    const db = await sharedDatabase('svc-sdk-');
    const serve = new SvcProcess('serve', db.url, {
      NODE_OPTIONS: `--import ${fileURLToPath(new URL('./helpers/record-imports.mjs', import.meta.url))}`,
      SVC_RECORD_IMPORTS_TO: log,
      SVC_RECORD_IMPORTS_MATCHING: '/node_modules/@opentelemetry/',
      ...env,
    });
    try {
      await serve.ready();
      const health = await fetch(`${serve.address}/healthz`);
      expect(health.status).toBe(200);
      return readFileSync(log, 'utf8').split('\n').filter(Boolean);
    } finally {
      await serve.stop();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('is never imported with tracing off, and is with an endpoint set', async () => {
    expect(await importedBy({})).toEqual([]);
    const otlp = await new OtlpReceiver().start();
    try {
      const on = await importedBy(otlp.env());
      expect(on.some((url) => url.includes('/@opentelemetry/sdk-trace-base/'))).toBe(true);
    } finally {
      await otlp.close();
    }
  }, 120_000);
});
