import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { eventually } from '../events/helpers.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { describePg, freshDatabase } from '../helpers/store.js';
import { type Api, api, pluginInstance, publish, runsOf, workflow } from './helpers.js';

/**
 * Flow control across real `svc worker` processes on one PostgreSQL database (docs/workflows.md
 * "Flow control"): a receiver counts the requests in flight per key and never sees more than the
 * concurrency limit, whichever process runs them; runs of another key are not held back; and after
 * a worker is killed with SIGKILL while runs wait, every run still starts exactly once, in order.
 */
describePg('flow control with two `svc worker` processes', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const LIMIT = 2;
  const HOLD_MS = 150;

  /** A receiver that holds each request HOLD_MS and records, per key, the most in flight at once. */
  async function receiver() {
    const inFlight = new Map<string, number>();
    const most = new Map<string, number>();
    const calls: Array<{ key: string; n: number }> = [];
    let overall = 0;
    let mostOverall = 0;
    const server: Server = createServer((req, res) => {
      const [, key, n] = (req.url ?? '').split('/');
      calls.push({ key, n: Number(n) });
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      most.set(key, Math.max(most.get(key) ?? 0, inFlight.get(key) as number));
      overall++;
      mostOverall = Math.max(mostOverall, overall);
      let done = false;
      const end = () => {
        if (done) return;
        done = true;
        inFlight.set(key, (inFlight.get(key) as number) - 1);
        overall--;
      };
      // A caller that dies mid-request (SIGKILL) closes the socket: it is no longer in flight.
      res.on('close', end);
      setTimeout(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
        HOLD_MS,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    return {
      base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      most,
      calls,
      mostOverall: () => mostOverall,
    };
  }

  async function setUp() {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const t = await startTestApp({ databaseUrl: db.url, env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    cleanups.push(() => t.close());
    const env = {
      SVC_ALLOW_PRIVATE_NETWORKS: 'true',
      SVC_WORKFLOW_POLL_INTERVAL_MS: '100',
      SVC_WORKFLOW_LEASE_MS: '2000',
    };
    const worker = () => {
      const w = new SvcProcess('worker', db.url, env);
      cleanups.push(() => w.stop());
      return w;
    };
    const workers = [worker(), worker()];
    await Promise.all(workers.map((w) => w.said('outbox: listening for notifications')));
    const a = await api(t);
    const rx = await receiver();
    const http = await pluginInstance(a, 'http');
    const wf = await workflow(
      a,
      {
        nodes: [
          {
            key: 'call',
            type: 'ACTION',
            config: {
              plugin_instance_id: http,
              plugin_action: 'request',
              input_mapping: {
                method: 'POST',
                url: { cat: [`${rx.base}/`, { var: 'event.data.customer' }, '/', { var: 'event.data.n' }] },
              },
            },
          },
        ],
      },
      { flow_control: { concurrency: { limit: LIMIT, key: { var: 'event.data.customer' } } } },
    );
    return { t, a, rx, wf, workers, worker };
  }

  async function publishAll(t: TestApp, customers: string[], each: number) {
    for (let n = 0; n < each; n++) for (const customer of customers) await publish(t, { customer, n });
  }

  /**
   * Each key's events in queue order: the order their runs were created in (the queue's order, after
   * priority), which is the order the drains routed them, not quite the order they were published.
   */
  async function queueOrder(t: TestApp, subscriptionId: string, key: string): Promise<number[]> {
    const rows = await t.ctx.store.db
      .selectFrom('workflow_run')
      .select(['trigger_event'])
      .where('event_subscription_id', '=', subscriptionId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows
      .map((r) => JSON.parse(r.trigger_event).data as { customer: string; n: number })
      .filter((d) => d.customer === key)
      .map((d) => d.n);
  }

  /** Calls reach the receiver in queue order, LIMIT at a time (neighbours may arrive either way). */
  function expectInOrder(calls: number[], order: number[], slack = LIMIT) {
    const at = new Map(order.map((n, i) => [n, i]));
    for (let i = 0; i < calls.length; i++)
      expect(Math.abs((at.get(calls[i]) as number) - i)).toBeLessThanOrEqual(slack);
  }

  const completed = async (a: Api, id: string) =>
    (await runsOf(a, id)).filter((r: { status: string }) => r.status === 'completed').length;

  it('holds each key to its limit across both processes, and other keys run beside it', async () => {
    const { t, a, rx, wf, workers } = await setUp();
    await publishAll(t, ['acme', 'globex'], 8);
    await eventually(async () => (await completed(a, wf.id)) === 16, 60_000, '16 runs completed');
    expect(rx.most.get('acme')).toBe(LIMIT);
    expect(rx.most.get('globex')).toBe(LIMIT);
    // Two keys at their limit side by side: one key never held the other back.
    expect(rx.mostOverall()).toBe(2 * LIMIT);
    // Each key's requests came in the order its events were published.
    for (const key of ['acme', 'globex']) {
      const ns = rx.calls.filter((c) => c.key === key).map((c) => c.n);
      expect(ns).toHaveLength(8);
      expectInOrder(ns, await queueOrder(t, wf.id, key));
    }
    // Both processes took part.
    const runs = await t.ctx.store.db
      .selectFrom('workflow_run')
      .select('id')
      .where('event_subscription_id', '=', wf.id)
      .execute();
    expect(runs).toHaveLength(16);
    expect(workers.every((w) => w.alive)).toBe(true);
  }, 120_000);

  it('after SIGKILL of a worker while runs wait, every run starts exactly once and the limit holds', async () => {
    const { t, a, rx, wf, workers, worker } = await setUp();
    await publishAll(t, ['acme'], 12);
    // Some have run, most wait.
    await eventually(async () => rx.calls.length >= 2, 30_000, 'first calls');
    const waiting = async () =>
      (await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}&status=pending`)).body.runs.length;
    await eventually(async () => (await waiting()) > 0, 30_000, 'runs waiting');
    workers[0].child.kill('SIGKILL');
    const replacement = worker();
    await replacement.said('outbox: listening for notifications');
    const finished = async () =>
      (await runsOf(a, wf.id)).filter((r: { status: string }) => ['completed', 'failed'].includes(r.status));
    await eventually(async () => (await finished()).length === 12, 60_000, '12 runs finished');
    const runs = await runsOf(a, wf.id);
    expect(runs).toHaveLength(12);
    expect(new Set(runs.map((r: { event_id: string }) => r.event_id)).size).toBe(12);
    // A POST in flight when its worker died is not sent again (the action is not idempotent): its
    // run fails saying so. Every other run, the waiting ones included, completed.
    const failed = runs.filter((r: { status: string }) => r.status === 'failed');
    expect(failed.length).toBeLessThanOrEqual(LIMIT);
    for (const r of failed) expect(r.error).toContain('is not idempotent, so it was not invoked again');
    // Never more than the limit in flight, before, during or after the crash.
    expect(rx.most.get('acme')).toBeLessThanOrEqual(LIMIT);
    // Every event reached the receiver at most once, in order (LIMIT at a time); one that did not is
    // a failed run's (killed after its attempt was written, before its request left).
    const ns = rx.calls.map((c) => c.n);
    expect(new Set(ns).size).toBe(ns.length);
    const failedNs = failed.map((r: { trigger_event: { data: { n: number } } }) => r.trigger_event.data.n);
    expect(new Set([...ns, ...failedNs]).size).toBe(12);
    // A failed run's call may be missing (it shifts the later ones by one place each).
    expectInOrder(ns, await queueOrder(t, wf.id, 'acme'), LIMIT + failedNs.length);
  }, 120_000);
});
