import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Receiver, receiver } from '../webhooks/helpers.js';
import {
  type Api,
  api,
  type Json,
  job,
  pluginInstance,
  publish,
  runsOf,
  settle,
  workflow,
} from '../workflows/helpers.js';
import { wftestPluginDir } from '../workflows/plugin.js';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

/**
 * Retention (docs/reliability.md "Retention") through HTTP and the real prune job: the server's
 * periods (here completed runs 1 h, failed runs 2 h, deliveries 1 h, outbox tasks 30 min), the
 * subscriptions' and webhooks' own, and what is never removed (a run in a 30-day DELAY, a PENDING
 * delivery, a re-run's origin while the re-run stays).
 */
describe(`retention removes finished records after their period (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let ok: Receiver;
  let down: Receiver;
  const clock = manualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
  const t0 = clock.now().getTime();
  const at = (ms: number) => clock.set(new Date(t0 + ms));
  const subs: Record<string, string> = {};
  const hooks: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({
      clock,
      env: {
        SVC_PLUGIN_DIR: wftestPluginDir(),
        SVC_ALLOW_PRIVATE_NETWORKS: 'true',
        // One sign-in for the 30 days the test spans: a new one would publish svc.user.created.
        SVC_ACCESS_TOKEN_TTL_SECONDS: String(40 * 86_400),
        SVC_WEBHOOK_TIMEOUT_MS: '2000',
        SVC_RETENTION_COMPLETED_RUNS_SECONDS: '3600',
        SVC_RETENTION_FAILED_RUNS_SECONDS: '7200',
        SVC_RETENTION_DELIVERIES_SECONDS: '3600',
        SVC_RETENTION_OUTBOX_SECONDS: '1800',
      },
    });
    a = await api(t);
    ok = await receiver();
    down = await receiver();
    await down.down();
  });
  afterAll(async () => {
    await ok.close();
    await t.close();
  });

  const prune = () => job(t, 'prune').run();
  const runIds = async (sub: string) => (await runsOf(a, subs[sub])).map((r: Json) => r.id as string);
  const deliveryStatuses = async (hook: string) =>
    (await a.call('GET', `/webhook/${hooks[hook]}/delivery?limit=250`)).body.deliveries.map(
      (d: Json) => d.status,
    );
  const nodeRows = async (runs: string[]) =>
    runs.length === 0
      ? 0
      : (
          await t.ctx.store.db
            .selectFrom('workflow_run_node')
            .select('id')
            .where('workflow_run_id', 'in', runs)
            .execute()
        ).length;
  const tasks = async () => (await a.call('GET', '/event_delivery_task?limit=250')).body;

  it('keeps everything until a period passes, and answers the settings it was given', async () => {
    const wftest = await pluginInstance(a, 'wftest');
    const compute = { nodes: [{ key: 'c', type: 'COMPUTE', config: { logic: { '+': [1, 1] } } }] };
    subs.done = (await workflow(a, compute)).id;
    subs.short = (await workflow(a, compute, { retention: { completed_runs_seconds: 60 } })).id;
    subs.forever = (await workflow(a, compute, { retention: { completed_runs_seconds: 0 } })).id;
    subs.guarded = (await workflow(a, compute, { max_runs_per_minute: 1 })).id;
    subs.fails = (
      await workflow(a, {
        nodes: [
          {
            key: 'f',
            type: 'ACTION',
            config: {
              plugin_instance_id: wftest,
              plugin_action: 'fail_with',
              input_mapping: { why: 'test' },
            },
          },
        ],
      })
    ).id;
    subs.waits = (
      await workflow(a, { nodes: [{ key: 'w', type: 'DELAY', config: { delay_ms: 30 * 24 * HOUR } }] })
    ).id;
    const got = await a.call('GET', `/event_subscription/${subs.short}`);
    expect(got.body.retention).toEqual({ completed_runs_seconds: 60, failed_runs_seconds: null });
    expect((await a.call('GET', `/event_subscription/${subs.done}`)).body.retention).toEqual({
      completed_runs_seconds: null,
      failed_runs_seconds: null,
    });
    // PATCH changes only the fields it gives.
    const patched = await a.call('PATCH', `/event_subscription/${subs.forever}`, {
      retention: { failed_runs_seconds: 100 },
    });
    expect(patched.body.retention).toEqual({ completed_runs_seconds: 0, failed_runs_seconds: 100 });
    const bad = await a.call('PATCH', `/event_subscription/${subs.forever}`, {
      retention: { completed_runs_seconds: -1 },
    });
    expect(bad.status).toBe(400);

    for (const [name, url, retention] of [
      ['a', ok.url, undefined],
      ['b', ok.url, { deliveries_seconds: 60 }],
      ['c', down.url, undefined],
    ] as const) {
      const res = await a.call('POST', '/webhook', {
        name,
        url,
        event_types: ['svc.user.created'],
        ...(retention ? { retention } : {}),
      });
      expect(res.status).toBe(200);
      hooks[name] = res.body.id;
    }
    expect((await a.call('GET', `/webhook/${hooks.b}`)).body.retention).toEqual({ deliveries_seconds: 60 });
    expect((await a.call('GET', `/webhook/${hooks.a}`)).body.retention).toEqual({ deliveries_seconds: null });

    await publish(t);
    await publish(t);
    await settle(t);
    await t.ctx.services.webhookEngine.deliverDue();
    await settle(t);
    const waiting = await runsOf(a, subs.waits);
    expect(waiting.map((r: Json) => r.status)).toEqual(['running', 'running']);
    expect((await a.call('POST', `/workflow_run/${waiting[0].id}/cancel`)).status).toBe(200);
    const guarded = (await runsOf(a, subs.guarded)).map((r: Json) => r.status).sort();
    expect(guarded).toEqual(['completed', 'skipped']);
    expect((await runsOf(a, subs.fails)).map((r: Json) => r.status)).toEqual(['failed', 'failed']);
    expect(await deliveryStatuses('a')).toEqual(['SUCCESS', 'SUCCESS']);
    expect(await deliveryStatuses('c')).toEqual(['PENDING', 'PENDING']);

    at(30 * S);
    expect(await prune()).toBe(false);
    for (const sub of ['done', 'short', 'forever', 'guarded', 'fails', 'waits'])
      expect((await runIds(sub)).length).toBe(2);
    expect(await deliveryStatuses('b')).toEqual(['SUCCESS', 'SUCCESS']);
  });

  it("removes a subscription's and a webhook's records on their own shorter period", async () => {
    const short = await runIds('short');
    expect(await nodeRows(short)).toBe(2);
    at(61 * S);
    await prune();
    expect(await runIds('short')).toEqual([]);
    expect(await nodeRows(short)).toBe(0);
    for (const id of short) expect((await a.call('GET', `/workflow_run/${id}`)).status).toBe(404);
    expect(await deliveryStatuses('b')).toEqual([]);
    expect(await deliveryStatuses('a')).toEqual(['SUCCESS', 'SUCCESS']);
    expect((await runIds('done')).length).toBe(2);

    // Half an hour on, a re-run of one of `done`'s runs: its origin must outlive the hour.
    at(30 * MIN);
    const origin = (await runIds('done'))[0];
    const rerun = await a.call('POST', `/workflow_run/${origin}/rerun`);
    expect(rerun.status).toBe(200);
    await settle(t);
    subs.rerunId = rerun.body.id;
    subs.originId = origin;
  });

  it('after an hour: completed, skipped and cancelled runs, finished deliveries and done tasks go', async () => {
    const doneRuns = await runIds('done');
    const tasksBefore = await tasks();
    expect(tasksBefore.total).toBeGreaterThan(0);
    at(HOUR + 1 * S);
    await prune();

    // The re-run (30 min old) stays, and so does its origin; the other run of `done` went.
    expect((await runIds('done')).sort()).toEqual([subs.originId, subs.rerunId].sort());
    expect(await nodeRows(doneRuns.filter((id) => id !== subs.originId && id !== subs.rerunId))).toBe(0);
    expect(await runIds('guarded')).toEqual([]); // completed and skipped
    const waits = await runsOf(a, subs.waits);
    expect(waits.map((r: Json) => r.status)).toEqual(['running']); // the cancelled one went
    expect((await runIds('fails')).length).toBe(2); // failed: two hours
    expect((await runIds('forever')).length).toBe(2); // 0: for ever
    expect(await deliveryStatuses('a')).toEqual([]);
    expect(await deliveryStatuses('c')).toEqual(['PENDING', 'PENDING']);
    // The PENDING deliveries still send their bodies.
    const pending = (await a.call('GET', `/webhook/${hooks.c}/delivery?limit=250`)).body.deliveries;
    for (const d of pending) {
      const detail = await a.call('GET', `/webhook/${hooks.c}/delivery/${d.id}`);
      expect(detail.body.payload.type).toBe('svc.user.created');
    }
    // Outbox tasks finished before the 30-minute mark went; those of the re-run's hour stayed.
    const after = await tasks();
    expect(after.total).toBeLessThan(tasksBefore.total);
    for (const task of after.tasks) expect(Date.parse(task.updated_at)).toBeGreaterThanOrEqual(t0 + 30 * MIN);

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/svc_prune_rows_removed_total\{table="workflow_run"\} \d+/);
    expect(metrics.body).toMatch(/svc_prune_rows_removed_total\{table="webhook_delivery_attempt"\} \d+/);
    expect(metrics.body).toMatch(/svc_retention_oldest_age_seconds\{kind="runs"\} \d+/);
    const passes = t.logs.filter((l) => l.msg === 'prune pass');
    expect(passes.length).toBeGreaterThanOrEqual(3);
    expect(passes.at(-1)?.removed).toMatchObject({ workflow_run: expect.any(Number) });
  });

  it('POST /event deduplicates an id while its outbox task is kept, and takes it as new after', async () => {
    const type = 'com.example.retention.ping';
    expect(
      (await a.call('POST', '/event_definition', { event_type: type, description: 'a ping' })).status,
    ).toBe(200);
    const post = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/event',
        headers: { ...a.h, 'content-type': 'application/cloudevents+json' },
        payload: JSON.stringify({
          specversion: '1.0',
          id: 'ping-1',
          source: 'https://ping.example',
          type,
          data: {},
        }),
      });
    const first = await post();
    expect(first.statusCode).toBe(202);
    expect(first.json()).toMatchObject({ id: 'ping-1', duplicate: false });
    await settle(t);
    const start = clock.now().getTime() - t0;
    at(start + 20 * MIN); // inside the outbox's 30 minutes
    await prune();
    expect((await post()).json()).toMatchObject({ duplicate: true });
    at(start + 31 * MIN); // its task is gone: the id is new again
    await prune();
    expect((await post()).json()).toMatchObject({ duplicate: false });
    await settle(t);
    at(start);
  });

  it("the re-run's period frees its origin; failed runs go after two hours; the DELAY never", async () => {
    at(HOUR + 30 * MIN + 1 * S);
    await prune();
    expect(await runIds('done')).toEqual([]);
    expect((await runIds('fails')).length).toBe(2);
    at(2 * HOUR + 1 * S);
    await prune();
    expect(await runIds('fails')).toEqual([]);
    at(29 * 24 * HOUR);
    await prune();
    expect((await runsOf(a, subs.waits)).map((r: Json) => r.status)).toEqual(['running']);
    expect((await runIds('forever')).length).toBe(2);
    expect(await deliveryStatuses('c')).toEqual(['PENDING', 'PENDING']);
  });
});
