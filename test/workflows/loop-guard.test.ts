import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, pluginInstance, publish, runsOf, settle, workflow } from './helpers.js';

/**
 * Loop safety (docs/workflows.md "Loop safety"): a workflow on svc.folder.created whose ACTION creates
 * a folder through svc's own API triggers itself. Each run's call carries its depth + 1; the events it
 * causes carry that depth; at SVC_WORKFLOW_MAX_DEPTH (here 4) no run starts, and the refusal shows.
 */
describe(`the loop guard stops a workflow that triggers itself (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp({
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_WORKFLOW_MAX_DEPTH: '4' },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    a = await api(t);
  });
  afterAll(() => t.close());

  it('runs at depths 0-3 create a folder each; the depth-4 event starts no run and says why', async () => {
    const key = await apiKey(t, ['folder:write']);
    expect(
      (
        await a.call('POST', '/vault_entry', {
          key: 'loop_key',
          kind: 'SECRET',
          value: `Bearer ${key.token}`,
        })
      ).status,
    ).toBe(200);
    const http = await pluginInstance(a, 'http');
    const wf = await workflow(
      a,
      {
        nodes: [
          {
            key: 'again',
            type: 'ACTION',
            config: {
              plugin_instance_id: http,
              plugin_action: 'request',
              input_mapping: {
                method: 'POST',
                url: `${base}/api/v1/folder`,
                headers: { preserve: { authorization: '$secret:loop_key' } },
                body: { eachKey: { name: { cat: ['child of ', { var: 'event.data.folder_id' }] } } },
              },
            },
          },
        ],
      },
      { event_type: 'svc.folder.created' },
    );
    const boss = await admin(t);
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/folder',
      headers: boss.headers,
      payload: { name: 'seed' },
    });
    expect(first.statusCode).toBe(200);
    await settle(t);

    const runs = await runsOf(a, wf.id);
    const byStatus = (s: string) => runs.filter((r: Json) => r.status === s);
    // Exactly: 4 runs (depths 0, 1, 2, 3), 4 folders they made, 1 refusal (the depth-4 event).
    expect(byStatus('completed')).toHaveLength(4);
    expect(byStatus('skipped')).toHaveLength(1);
    expect(runs).toHaveLength(5);
    const folders = await t.ctx.store.db.selectFrom('folder').select('id').execute();
    expect(folders).toHaveLength(5);
    const depths = runs.map((r: Json) => r.trigger_event.svcdepth ?? 0).sort();
    expect(depths).toEqual([0, 1, 2, 3, 4]);
    const [refused] = byStatus('skipped');
    const causer = runs.find((r: Json) => r.trigger_event.svcdepth === 3);
    expect(refused.trigger_event.causationid).toBe(causer.id);
    expect(refused.error).toBe(
      `not started: the event is 4 runs deep (SVC_WORKFLOW_MAX_DEPTH 4); it was caused by run ${causer.id}: a workflow that triggers itself?`,
    );
    expect(refused).toMatchObject({ started_at: null, completed_at: expect.any(String) });
    // Each event names the run whose call caused it.
    for (const r of runs.filter((x: Json) => (x.trigger_event.svcdepth ?? 0) > 0)) {
      const parent = runs.find((p: Json) => p.id === r.trigger_event.causationid);
      expect((parent.trigger_event.svcdepth ?? 0) + 1).toBe(r.trigger_event.svcdepth);
    }
    // Visible on /metrics and in the log.
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(
      `svc_workflow_runs_refused_total{subscription_id="${wf.id}",reason="depth"} 1`,
    );
    expect(t.logs.some((l) => l.msg === `workflow router: run not started: ${refused.error}`)).toBe(true);
  });
});

/**
 * The rate guard: a subscription that starts more runs in a minute than its max_runs_per_minute is
 * paused (disabled, saying why, with a svc.event_subscription.paused event); the events over the
 * limit start no run but a skipped one; enabling it again lifts the pause. Without a limit of its
 * own, the server's counts only runs that runs caused: user traffic is never paused by default.
 */
describe(`the rate guard pauses a subscription that runs too often (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    // A server default of 4: a subscription's own limit, lower or higher, wins over it.
    t = await startTestApp({ env: { SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: '4' } });
    a = await api(t);
  });
  afterAll(() => t.close());

  /** Five events; with `causedBy`, as a run's call to the API makes them (depth 1). */
  const fiveEvents = (causedBy?: string) =>
    t.ctx.store.transaction(async (tx) => {
      for (let i = 0; i < 5; i++)
        await t.ctx.services.events.publish(tx, {
          type: 'svc.user.created',
          source: '/api/v1/user',
          subject: `u${i}`,
          data: { user_id: `u${i}`, email: `u${i}@example.test` },
          ...(causedBy ? { causation: { depth: 1, id: causedBy } } : {}),
        });
    });

  /** The svc.event_subscription.paused events published for a subscription. */
  const pausedEvents = async (subscriptionId: string) =>
    (
      await t.ctx.store.db
        .selectFrom('event_delivery_task')
        .select('cloudevent')
        .where('event_type', '=', 'svc.event_subscription.paused')
        .execute()
    )
      .map((r) => JSON.parse(r.cloudevent))
      .filter((e) => e.subject === subscriptionId);

  it('starts 3 of 5 runs at max_runs_per_minute 3, pauses, and runs again once enabled', async () => {
    const wf = await workflow(
      a,
      { nodes: [{ key: 'c', type: 'COMPUTE', config: { logic: 1 } }] },
      {
        max_runs_per_minute: 3,
      },
    );
    await fiveEvents();
    await settle(t);

    let runs = await runsOf(a, wf.id);
    expect(runs.filter((r: Json) => r.status === 'completed')).toHaveLength(3);
    const refused = runs.filter((r: Json) => r.status === 'skipped');
    expect(refused).toHaveLength(2);
    expect(refused[0].error).toBe(
      'not started: the rate guard paused the subscription (see its paused_reason)',
    );
    const paused = (await a.call('GET', `/event_subscription/${wf.id}`)).body;
    expect(paused).toMatchObject({ enabled: false, max_runs_per_minute: 3, paused_at: expect.any(String) });
    expect(paused.paused_reason).toMatch(/^rate guard: 3 runs started in the last minute, the limit is 3 /);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(
      `svc_workflow_runs_refused_total{subscription_id="${wf.id}",reason="rate"} 2`,
    );
    expect(t.logs.some((l) => l.msg === 'workflow rate guard: subscription paused')).toBe(true);
    // Users can alert on it: one event, naming the subscription and the reason.
    const [pausedEvent, ...more] = await pausedEvents(wf.id);
    expect(more).toHaveLength(0);
    expect(pausedEvent).toMatchObject({
      source: '/api/v1/event_subscription',
      data: { event_subscription_id: wf.id, reason: paused.paused_reason, paused_at: paused.paused_at },
    });

    // Paused: new events start nothing, not even a refusal.
    await publish(t);
    await settle(t);
    expect(await runsOf(a, wf.id)).toHaveLength(5);

    // Enabled again (with room to run): the reason goes, events start runs again.
    const enabled = await a.call('PATCH', `/event_subscription/${wf.id}`, {
      enabled: true,
      max_runs_per_minute: 100,
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, paused_reason: null, paused_at: null });
    await publish(t);
    await settle(t);
    runs = await runsOf(a, wf.id);
    expect(runs.filter((r: Json) => r.status === 'completed')).toHaveLength(4);
  });

  it('never pauses user traffic by default: SVC_WORKFLOW_MAX_RUNS_PER_MINUTE counts runs caused by runs', async () => {
    const graph = { nodes: [{ key: 'c', type: 'COMPUTE', config: { logic: 1 } }] };
    const byDefault = await workflow(a, graph);
    const generous = await workflow(a, graph, { max_runs_per_minute: 100 });
    expect((await a.call('GET', `/event_subscription/${byDefault.id}`)).body.max_runs_per_minute).toBeNull();
    const statuses = async (id: string) => (await runsOf(a, id)).map((r: Json) => r.status).sort();

    // Ten events from users (depth 0), over the server's 4: every one runs, nothing is paused.
    await fiveEvents();
    await fiveEvents();
    await settle(t);
    expect(await statuses(byDefault.id)).toEqual(Array(10).fill('completed'));
    expect((await a.call('GET', `/event_subscription/${byDefault.id}`)).body.enabled).toBe(true);

    // Five events that a run caused: the server default (4) stops the fifth and pauses...
    await fiveEvents('0199a3b1-2d3e-7f4a-9b5c-6d7e8f9a0b1c');
    await settle(t);
    expect(await statuses(byDefault.id)).toEqual([...Array(14).fill('completed'), 'skipped']);
    const paused = (await a.call('GET', `/event_subscription/${byDefault.id}`)).body;
    expect(paused.enabled).toBe(false);
    expect(paused.paused_reason).toMatch(
      /^rate guard: 4 runs caused by runs started in the last minute, the limit is 4 \(SVC_WORKFLOW_MAX_RUNS_PER_MINUTE\)/,
    );
    expect(await pausedEvents(byDefault.id)).toHaveLength(1);
    // ...and a subscription's own higher limit wins over it.
    expect(await statuses(generous.id)).toEqual(Array(15).fill('completed'));
    expect((await a.call('GET', `/event_subscription/${generous.id}`)).body.enabled).toBe(true);
  });

  it('refuses a max_runs_per_minute that is no positive integer', async () => {
    for (const bad of [0, -1, 1.5, '10', 2_000_000]) {
      const res = await a.call('POST', '/event_subscription', {
        name: 'bad',
        event_type: 'svc.user.created',
        max_runs_per_minute: bad,
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
  });
});
