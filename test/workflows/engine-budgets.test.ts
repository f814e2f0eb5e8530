import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, pluginInstance, publish, runsOf, settle, workflow } from './helpers.js';
import { wftestPluginDir } from './plugin.js';

/**
 * The engine's two budgets (docs/workflows.md "Durability"): runs claimed from the store and new runs
 * its router hands over in memory are counted apart, so neither kind crowds out the other. A full
 * claim budget must not send new runs down the pending-and-claimed path (three writes more each), and
 * a stream of new runs must not stop due runs (resumes, timers, other processes' runs) being claimed.
 * Two app contexts on one store, as two processes; the poll interval is never reached, so the engine
 * claims only when woken.
 */
const CLAIM_BUDGET = 64;
const HANG_MS = 1_500;

describe(`the workflow engine's claim and hand-over budgets (${dialectName})`, () => {
  let db: TestDatabase;
  let engine: TestApp;
  let other: TestApp;
  let a: Api;
  let wf: { id: string };

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-budgets-');
    const env = {
      SVC_PLUGIN_DIR: wftestPluginDir(),
      SVC_WORKFLOW_POLL_INTERVAL_MS: '600000',
      SVC_WORKFLOW_LEASE_MS: '10000',
    };
    engine = await startTestApp({ databaseUrl: db.url, env });
    other = await startTestApp({ databaseUrl: db.url, env });
    a = await api(engine);
    for (const app of [engine, other]) while (await job(app, 'outbox').run()) {}
    // The engine's first step asks the store (nothing is due yet); later ones ask only when woken.
    await job(engine, 'workflows').run();
    // Every run holds its ACTION call in flight for a while, so it stays in its engine's budget.
    const wftest = await pluginInstance(a, 'wftest');
    wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'hang', input_mapping: { ms: HANG_MS } },
        },
      ],
    });
    // The other engine takes no runs: its router writes every run pending and due, for any engine.
    await job(other, 'workflows').stop?.();
  });
  afterAll(async () => {
    await other.close();
    await engine.close();
    await db.drop();
  });

  /** The stored lease holder and call state of each run of the workflow, by event subject. */
  async function runsBySubject(): Promise<Map<string, { locked_by: string | null; call: string }>> {
    const rows = await engine.ctx.store.db
      .selectFrom('workflow_run as r')
      .innerJoin('workflow_run_node as n', 'n.workflow_run_id', 'r.id')
      .select(['r.trigger_event', 'r.locked_by', 'n.status'])
      .where('r.event_subscription_id', '=', wf.id)
      .where('n.node_key', '=', 'call')
      .execute();
    return new Map(
      rows.map((r) => [JSON.parse(r.trigger_event).subject, { locked_by: r.locked_by, call: r.status }]),
    );
  }

  /** Events published by `app` and handed over by its drain. */
  async function routed(app: TestApp, count: number): Promise<string[]> {
    const subjects: string[] = [];
    for (let i = 0; i < count; i++) subjects.push((await publish(app)).subject as string);
    while (await job(app, 'outbox').run()) {}
    return subjects;
  }

  it('a claim budget full of claimed runs still drives a new run at once', async () => {
    const engineId = engine.ctx.services.workflowEngine.workerId;
    const left = await routed(other, CLAIM_BUDGET);
    // Woken for the store, the engine claims all of them: its claim budget is full.
    engine.ctx.services.wakeups.wake('workflows');
    const stepping = job(engine, 'workflows').run();
    for (let i = 0; i < 100; i++) {
      const runs = await runsBySubject();
      if (left.every((s) => runs.get(s)?.call === 'running')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const claimed = await runsBySubject();
    expect(left.filter((s) => claimed.get(s)?.locked_by === engineId)).toHaveLength(CLAIM_BUDGET);

    // A new event of the engine's own router: driven at once, written with its call in flight under
    // the engine's lease, not pending and due.
    const [mine] = await routed(engine, 1);
    expect((await runsBySubject()).get(mine)).toEqual({ locked_by: engineId, call: 'running' });

    await stepping;
    await settle(engine);
    const runs = await runsOf(a, wf.id);
    expect(runs).toHaveLength(CLAIM_BUDGET + 1);
    expect(runs.every((r) => r.status === 'completed')).toBe(true);
  });

  it('new runs in flight do not stop a due run being claimed', async () => {
    const engineId = engine.ctx.services.workflowEngine.workerId;
    // As many new runs of the engine's own router in flight as the claim budget holds.
    const mine = await routed(engine, CLAIM_BUDGET);
    const driven = await runsBySubject();
    expect(mine.filter((s) => driven.get(s)?.locked_by === engineId)).toHaveLength(CLAIM_BUDGET);

    // A run left due by the other process: the engine, woken, claims it beside them.
    const [left] = await routed(other, 1);
    expect((await runsBySubject()).get(left)).toEqual({ locked_by: null, call: 'pending' });
    engine.ctx.services.wakeups.wake('workflows');
    const stepping = job(engine, 'workflows').run();
    for (let i = 0; i < 100 && (await runsBySubject()).get(left)?.call !== 'running'; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await runsBySubject()).get(left)).toEqual({ locked_by: engineId, call: 'running' });

    await stepping;
    await settle(engine);
    expect((await runsOf(a, wf.id)).every((r) => r.status === 'completed')).toBe(true);
  });
});
