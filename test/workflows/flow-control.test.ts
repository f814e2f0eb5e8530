import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, type Json, job, publish, runsOf, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * Flow control (docs/workflows.md "Flow control"), through HTTP, the real outbox drain and engine, on
 * a manual clock: concurrency, throttle, rate limits, debounce and priority, and cancelling a run that
 * waits. A DELAY keeps a run running for as long as the test wants.
 */
describe(`flow control (${dialectName})`, () => {
  const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  const DELAYED = {
    nodes: [
      { key: 'wait', type: 'DELAY', config: { delay_ms: 1_000 } },
      { key: 'done', type: 'END' },
    ],
    edges: [{ from_node_id: 'wait', to_node_id: 'done' }],
  };
  const QUICK = { nodes: [{ key: 'done', type: 'END' }] };
  const customer = { var: 'event.data.customer' };

  const byStatus = (runs: Json[]) => {
    const out: Record<string, number> = {};
    for (const r of runs) out[r.status] = (out[r.status] ?? 0) + 1;
    return out;
  };
  /** Runs of the subscription, oldest first, with the customer of each. */
  const runs = async (id: string) =>
    (await runsOf(a, id)).map((r: Json) => ({ ...r, customer: r.trigger_event.data.customer }));

  it('saves flow_control, answers it, replaces it on PATCH and refuses bad expressions', async () => {
    const flow = {
      concurrency: { limit: 2, key: customer },
      throttle: { limit: 5, period_ms: 1_000 },
      priority: { var: 'event.data.priority' },
    };
    const wf = await workflow(a, QUICK, { flow_control: flow });
    const got = await a.call('GET', `/event_subscription/${wf.id}`);
    expect(got.body.flow_control).toEqual(flow);
    const patched = await a.call('PATCH', `/event_subscription/${wf.id}`, {
      flow_control: { debounce: { period_ms: 500 } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.flow_control).toEqual({ debounce: { period_ms: 500 } });
    expect(
      (await a.call('PATCH', `/event_subscription/${wf.id}`, { flow_control: null })).body.flow_control,
    ).toBe(null);
    const bad = await a.call('PATCH', `/event_subscription/${wf.id}`, {
      flow_control: { concurrency: { limit: 1, key: { nope: [1] } } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toMatch(/^flow_control\.concurrency\.key/);
    const zero = await a.call('PATCH', `/event_subscription/${wf.id}`, {
      flow_control: { throttle: { limit: 0, period_ms: 10 } },
    });
    expect(zero.status).toBe(400);
    const wait = await a.call('PATCH', `/event_subscription/${wf.id}`, {
      flow_control: { debounce: { period_ms: 1_000, max_wait_ms: 10 } },
    });
    expect(wait.status).toBe(400);
    expect(wait.body.details.field).toBe('flow_control.debounce.max_wait_ms');
  });

  it('concurrency with a key: at most the limit run per key, the others wait in order, other keys run', async () => {
    const wf = await workflow(a, DELAYED, { flow_control: { concurrency: { limit: 2, key: customer } } });
    for (let i = 0; i < 5; i++) await publish(t, { customer: 'acme', n: i });
    await publish(t, { customer: 'globex', n: 0 });
    await settle(t);
    let all = await runs(wf.id);
    const acme = all.filter((r) => r.customer === 'acme');
    expect(byStatus(acme)).toEqual({ running: 2, pending: 3 });
    expect(all.find((r) => r.customer === 'globex').status).toBe('running');
    for (const r of acme.filter((x) => x.status === 'pending')) {
      expect(r.pending_reason).toBe('concurrency');
      expect(r.flow_key).toBe('"acme"');
      expect(r.started_at).toBe(null);
    }
    const listed = await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}&status=pending`);
    expect(listed.body.runs).toHaveLength(3);
    // Read from the store at each scrape.
    const metrics = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(await metrics()).toContain(
      `svc_workflow_runs_waiting{subscription_id="${wf.id}",reason="concurrency"} 3`,
    );

    // Each second the two running ones end, and the next two in line start.
    const order: number[] = [];
    for (let round = 0; round < 4; round++) {
      clock.advance(1_000);
      await settle(t);
      all = await runs(wf.id);
      const running = all.filter((r) => r.customer === 'acme' && r.status === 'running');
      expect(running.length).toBeLessThanOrEqual(2);
      for (const r of running)
        if (!order.includes(r.trigger_event.data.n)) order.push(r.trigger_event.data.n);
    }
    expect(order).toEqual([2, 3, 4]);
    const scraped = await metrics();
    expect(scraped).not.toContain(`svc_workflow_runs_waiting{subscription_id="${wf.id}"`);
    expect(scraped).toMatch(
      new RegExp(`svc_workflow_run_wait_seconds_count\\{subscription_id="${wf.id}"\\} 3`),
    );
    all = await runs(wf.id);
    expect(byStatus(all)).toEqual({ completed: 6 });
    expect(all.every((r) => r.pending_reason === null)).toBe(true);
  });

  it('throttle: starts are spaced by the sliding window, nothing is dropped', async () => {
    const wf = await workflow(a, QUICK, { flow_control: { throttle: { limit: 2, period_ms: 1_000 } } });
    const t0 = clock.now().getTime();
    for (let i = 0; i < 5; i++) await publish(t, { n: i });
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ completed: 2, pending: 3 });
    for (let step = 0; step < 30; step++) {
      clock.advance(100);
      await settle(t);
    }
    const all = await runs(wf.id);
    expect(byStatus(all)).toEqual({ completed: 5 });
    const starts = all.map((r) => Date.parse(r.started_at) - t0).sort((x, y) => x - y);
    // Two at once, then two a period later, then the last.
    expect(starts[0]).toBe(0);
    expect(starts[1]).toBe(0);
    expect(starts[2]).toBeGreaterThanOrEqual(1_000);
    expect(starts[3]).toBeGreaterThanOrEqual(1_000);
    expect(starts[4]).toBeGreaterThanOrEqual(2_000);
    expect(starts[4]).toBeLessThan(2_100);
    // In arrival order.
    const byStart = [...all].sort(
      (x, y) => x.started_at.localeCompare(y.started_at) || x.created_at.localeCompare(y.created_at),
    );
    expect(byStart.map((r) => r.trigger_event.data.n).slice(2)).toEqual([2, 3, 4]);
  });

  it('rate_limit: exactly the events over the limit leave skipped runs saying so, per key', async () => {
    const wf = await workflow(a, QUICK, {
      flow_control: { rate_limit: { limit: 3, period_ms: 60_000, key: customer } },
    });
    for (let i = 0; i < 7; i++) await publish(t, { customer: 'acme', n: i });
    for (let i = 0; i < 2; i++) await publish(t, { customer: 'globex', n: i });
    await settle(t);
    const all = await runs(wf.id);
    expect(byStatus(all.filter((r) => r.customer === 'acme'))).toEqual({ completed: 3, skipped: 4 });
    expect(byStatus(all.filter((r) => r.customer === 'globex'))).toEqual({ completed: 2 });
    const skipped = all.find((r) => r.status === 'skipped');
    expect(skipped.error).toBe('not started: rate_limit: 3 run(s) per 60000 ms for key "acme" reached');
    // A period later the key has room again.
    clock.advance(60_001);
    await publish(t, { customer: 'acme', n: 99 });
    await settle(t);
    expect((await runs(wf.id)).filter((r) => r.status === 'completed')).toHaveLength(6);
  });

  it('debounce: events of one key make one run on the last of them, a period after it', async () => {
    const wf = await workflow(a, QUICK, { flow_control: { debounce: { period_ms: 1_000, key: customer } } });
    for (let i = 0; i < 5; i++) {
      await publish(t, { customer: 'acme', n: i });
      await publish(t, { customer: 'globex', n: i });
      await settle(t);
      clock.advance(200);
    }
    let all = await runs(wf.id);
    expect(all).toHaveLength(2);
    expect(all.every((r) => r.status === 'pending' && r.pending_reason === 'debounce')).toBe(true);
    // The last events came at +800 ms: the runs start at +1,800 ms.
    clock.advance(799);
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ pending: 2 });
    clock.advance(1);
    await settle(t);
    all = await runs(wf.id);
    expect(byStatus(all)).toEqual({ completed: 2 });
    for (const r of all) {
      expect(r.trigger_event.data.n).toBe(4);
      expect(r.debounced_events).toBe(5);
    }
  });

  it('debounce: max_wait_ms starts the run under a steady stream', async () => {
    const wf = await workflow(a, QUICK, {
      flow_control: { debounce: { period_ms: 500, max_wait_ms: 2_000 } },
    });
    const t0 = clock.now().getTime();
    for (let i = 0; i < 30; i++) {
      await publish(t, { n: i });
      await settle(t);
      clock.advance(100);
    }
    await settle(t);
    const all = await runs(wf.id);
    const done = all.filter((r) => r.status === 'completed');
    expect(done.length).toBe(1);
    expect(Date.parse(done[0].started_at) - t0).toBe(2_000);
    expect(done[0].debounced_events).toBe(21);
    // The stream goes on: its later events wait in a new debounced run.
    expect(all.filter((r) => r.status === 'pending')).toHaveLength(1);
    clock.advance(1_000);
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ completed: 2 });
  });

  it('priority: among waiting runs, higher starts first', async () => {
    const wf = await workflow(a, DELAYED, {
      flow_control: { concurrency: { limit: 1 }, priority: { var: 'event.data.priority' } },
    });
    await publish(t, { n: 0, priority: 0 });
    await settle(t);
    for (const [n, priority] of [
      [1, -5],
      [2, 10],
      [3, 0],
      [4, 10],
    ])
      await publish(t, { n, priority });
    await settle(t);
    const order: number[] = [];
    for (let round = 0; round < 6; round++) {
      const running = (await runs(wf.id)).filter((r) => r.status === 'running');
      expect(running.length).toBeLessThanOrEqual(1);
      if (running[0] && !order.includes(running[0].trigger_event.data.n))
        order.push(running[0].trigger_event.data.n);
      clock.advance(1_000);
      await settle(t);
    }
    expect(order).toEqual([0, 2, 4, 3, 1]);
    expect((await runs(wf.id)).map((r) => r.priority)).toEqual([0, -5, 10, 0, 10]);
  });

  it('cancel: a waiting run is cancelled, and the next one takes its turn', async () => {
    const wf = await workflow(a, DELAYED, { flow_control: { concurrency: { limit: 1 } } });
    for (let i = 0; i < 3; i++) await publish(t, { n: i });
    await settle(t);
    let all = await runs(wf.id);
    expect(byStatus(all)).toEqual({ running: 1, pending: 2 });
    const waiting = all.find((r) => r.trigger_event.data.n === 1);
    const cancelled = await a.call('POST', `/workflow_run/${waiting.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    // The running one is cancelled too: its room goes to the last.
    const first = all.find((r) => r.trigger_event.data.n === 0);
    expect((await a.call('POST', `/workflow_run/${first.id}/cancel`)).status).toBe(200);
    await settle(t);
    all = await runs(wf.id);
    expect(all.find((r) => r.trigger_event.data.n === 2).status).toBe('running');
    clock.advance(1_000);
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ cancelled: 2, completed: 1 });
  });

  it('a deleted subscription holds nothing back: its waiting runs start', async () => {
    const wf = await workflow(a, DELAYED, { flow_control: { concurrency: { limit: 1 } } });
    for (let i = 0; i < 3; i++) await publish(t, { n: i });
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ running: 1, pending: 2 });
    expect((await a.call('DELETE', `/event_subscription/${wf.id}`)).status).toBe(200);
    clock.advance(1_000);
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ completed: 1, running: 2 });
    clock.advance(1_000);
    await settle(t);
    expect(byStatus(await runs(wf.id))).toEqual({ completed: 3 });
  });

  it('a key that cannot be evaluated or is not a scalar starts no run and says why', async () => {
    const wf = await workflow(a, QUICK, {
      flow_control: { concurrency: { limit: 1, key: { var: 'event.data' } } },
    });
    await publish(t, { customer: 'acme' });
    await settle(t);
    const [run] = await runs(wf.id);
    expect(run.status).toBe('skipped');
    expect(run.error).toBe(
      'not started: flow_control.concurrency.key gave an object; a key must be a string, number, boolean or null',
    );
  });

  // Last: a day passes, beyond the access token's life.
  it('the prune job removes window entries once no period can count them (a day)', async () => {
    const windows = async () =>
      Number(
        (
          await t.ctx.store.db
            .selectFrom('flow_window')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await windows()).toBeGreaterThan(0);
    clock.advance(86_400_001);
    await job(t, 'prune').run();
    expect(await windows()).toBe(0);
  });
});
