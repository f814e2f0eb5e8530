import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { waitForOutput } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, nodesOf, publish, runsOf, workflow } from './helpers.js';

/**
 * WAIT_EVENT across `kill -9` (docs/workflows.md "WAIT_EVENT"): a real `svc worker` process is
 * killed while runs wait; the waits survive, and a new worker process resumes one by its event and
 * times the other out.
 */
describe(`WAIT_EVENT across a killed worker process (${dialectName})`, () => {
  let shared: SharedStore;
  let t: TestApp;
  let a: Api;
  let worker: ChildProcess | undefined;
  const PAID = 'com.example.crash.paid';

  const startWorker = () =>
    shared.worker({
      SVC_WORKFLOW_LEASE_MS: '1500',
      SVC_WORKFLOW_POLL_INTERVAL_MS: '100',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '100',
      SVC_LOG_LEVEL: 'info',
    });

  async function eventually<T>(what: string, check: () => Promise<T | false | undefined>): Promise<T> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    shared = await startSharedStore('svc-wf-wait-crash-');
    t = shared.t;
    a = await api(t);
    expect((await a.call('POST', '/event_definition', { event_type: PAID })).status).toBe(200);
  });
  afterAll(() => shared.close());

  it('keeps every wait through SIGKILL: the next worker resumes one by its event and times the other out', async () => {
    const waitFor = (timeoutMs: number, field: string) => ({
      nodes: [
        {
          key: 'wait',
          type: 'WAIT_EVENT',
          config: {
            event_type: PAID,
            correlation: { run: { var: 'event.data.user_id' }, event: { var: `event.data.${field}` } },
            timeout_ms: timeoutMs,
          },
        },
        {
          key: 'after',
          type: 'COMPUTE',
          config: { logic: { timed_out: { var: 'nodes.wait.output.timed_out' } } },
        },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'after' }],
    });
    const resumed = await workflow(a, waitFor(600_000, 'user'));
    // The payment carries no `invoice`: nothing it brings matches this wait, which times out.
    const timed = await workflow(a, waitFor(4_000, 'invoice'));

    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    const user = (await publish(t, {})).data as { user_id: string };
    const [resumedRun, timedRun] = await eventually('both runs to wait', async () => {
      const runs = [(await runsOf(a, resumed.id))[0], (await runsOf(a, timed.id))[0]];
      if (runs.some((r) => r === undefined)) return false;
      const waits = await Promise.all(runs.map(async (r) => (await nodesOf(a, r.id)).wait));
      return waits.every((w) => w.status === 'running' && w.resume_at !== null) && runs;
    });

    worker.kill('SIGKILL');
    await new Promise((r) => worker?.once('exit', r));
    // The payment arrives while no worker runs: it waits in the outbox.
    const sent = await a.call('POST', '/event', {
      specversion: '1.0',
      id: 'crash-payment-1',
      source: '/payments',
      type: PAID,
      data: { user: user.user_id },
    });
    expect(sent.status).toBe(202);
    for (const r of [resumedRun, timedRun])
      expect((await runsOf(a, r.event_subscription_id))[0].status).toBe('running');

    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    const [r1, r2] = await eventually('both runs to finish', async () => {
      const runs = [(await runsOf(a, resumed.id))[0], (await runsOf(a, timed.id))[0]];
      return runs.every((r) => r.status !== 'running') && runs;
    });
    expect(r1.status).toBe('completed');
    const n1 = await nodesOf(a, r1.id);
    expect(n1.wait.output).toMatchObject({ timed_out: false, event: { id: 'crash-payment-1' } });
    expect(n1.after.output).toEqual({ timed_out: false });
    expect(r2.status).toBe('completed');
    const n2 = await nodesOf(a, r2.id);
    expect(n2.wait.output).toEqual({ event: null, timed_out: true });
    expect(Date.parse(n2.wait.completed_at)).toBeGreaterThanOrEqual(
      Date.parse(n2.wait.resume_at ?? n2.wait.input.timeout_at),
    );
    expect(n2.after.output).toEqual({ timed_out: true });
  }, 60_000);
});
