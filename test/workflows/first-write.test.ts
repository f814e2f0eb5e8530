import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, nodesOf, pluginInstance, publish, runsOf, settle, workflow } from './helpers.js';
import { pluginCalls, wftestPluginDir } from './plugin.js';

/**
 * A new run's first write (docs/workflows.md "Durability"): the router's engine drives the run at
 * once and writes it, with all its nodes, at its first persist point; the event's hand-over ends
 * after that write. Two engines on one store, as two processes would be.
 */
describe(`a new run's first write (${dialectName})`, () => {
  let db: TestDatabase;
  let one: TestApp;
  let two: TestApp;
  let a: Api;

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-first-');
    // One ACTION slot per worker: a second run's ACTION has to wait for the first one's.
    const env = { SVC_PLUGIN_DIR: wftestPluginDir(), SVC_WORKFLOW_WORKER_PARALLELISM: '1' };
    one = await startTestApp({ databaseUrl: db.url, env });
    two = await startTestApp({ databaseUrl: db.url, env });
    a = await api(one);
    for (const app of [one, two]) while (await job(app, 'outbox').run()) {}
  });
  afterAll(async () => {
    await two.close();
    await one.close();
    await db.drop();
  });

  // Every test's events would start runs of the earlier tests' subscriptions too (one event type).
  let subscriptions: string[] = [];
  afterEach(async () => {
    for (const id of subscriptions) await a.call('DELETE', `/event_subscription/${id}`);
    subscriptions = [];
  });

  async function actionWorkflow(action: string, input: Record<string, unknown>) {
    const wftest = await pluginInstance(a, 'wftest');
    const wf = await workflow(a, {
      nodes: [
        { key: 'derive', type: 'COMPUTE', config: { logic: { var: 'event.subject' } } },
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: action, input_mapping: input },
        },
      ],
      edges: [{ from_node_id: 'derive', to_node_id: 'call' }],
    });
    subscriptions.push(wf.id);
    return wf;
  }

  it('an event handed to two engines at once starts one run, and its non-idempotent ACTION is called once', async () => {
    const marker = `first-write-twice-${Date.now()}`;
    const wf = await actionWorkflow('record_once', { marker });
    const event = await publish(one);
    // Two hand-overs of the same event (an outbox retry meeting the first, two drains): each engine
    // drives the run in memory up to its first write; one write creates it, the other finds it there.
    const handOver = (app: TestApp) => app.ctx.services.workflowEngine.router.handle([event]);
    // Two SQLite stores in one process cannot both be in a transaction: one's wait for the lock
    // blocks the event loop the other needs to finish. There the second comes after the first's run.
    const sequential = async () => {
      const first = await handOver(one);
      await settle(one);
      return [first, await handOver(two)];
    };
    const [first, second] =
      dialectName === 'sqlite' ? await sequential() : await Promise.all([handOver(one), handOver(two)]);
    for (const failures of [first, second]) expect(failures?.size ?? 0).toBe(0);
    await settle(one);
    await settle(two);
    const runs = await runsOf(a, wf.id);
    expect(runs.map((r) => r.status)).toEqual(['completed']);
    const nodes = await nodesOf(a, runs[0].id);
    expect([nodes.derive.status, nodes.call.status, nodes.call.attempts]).toEqual([
      'completed',
      'completed',
      1,
    ]);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
    // The outbox hands the event over once more, as it does after a crash: nothing new starts.
    while (await job(one, 'outbox').run()) {}
    await settle(one);
    expect((await runsOf(a, wf.id)).length).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });

  it('a first write that fails fails the hand-over, calls nothing, and the event handed over again starts the run once', async () => {
    const marker = `first-write-fails-${Date.now()}`;
    const wf = await actionWorkflow('record_once', { marker });
    const event = await publish(one);
    // The store refuses this event's run (a trigger of the test's own), as a failing write would.
    const db = one.ctx.store.db;
    if (dialectName === 'sqlite') {
      await sql`create trigger refuse_run before insert on workflow_run when new.event_id = ${sql.lit(event.id)}
        begin select raise(abort, 'refused by the test'); end`.execute(db);
    } else {
      await sql`create function refuse_run() returns trigger language plpgsql as $$
        begin raise exception 'refused by the test'; end $$`.execute(db);
      await sql`create trigger refuse_run before insert on workflow_run for each row
        when (new.event_id = ${sql.lit(event.id)}) execute function refuse_run()`.execute(db);
    }
    const failures = await one.ctx.services.workflowEngine.router.handle([event]);
    expect(failures?.get(event.id)?.message).toMatch(/refused by the test/);
    expect(await runsOf(a, wf.id)).toEqual([]);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(0);

    // The store takes it again; the outbox hands the event over (its task is still to be delivered).
    await sql`drop trigger refuse_run${dialectName === 'sqlite' ? sql`` : sql` on workflow_run`}`.execute(db);
    await settle(one);
    const runs = await runsOf(a, wf.id);
    expect(runs.map((r) => r.status)).toEqual(['completed']);
    expect((await nodesOf(a, runs[0].id)).call.attempts).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });

  it('a run that waits for an ACTION slot is written first, so the hand-over does not wait for the slot', async () => {
    const wf = await actionWorkflow('hang', { ms: 3_000 });
    await publish(one);
    await publish(one);
    while (await job(one, 'outbox').run()) {}
    // Both hand-overs have ended while the first call still runs: the second run did not wait for its slot.
    const runs = await runsOf(a, wf.id);
    expect(runs).toHaveLength(2);
    const calls = await Promise.all(runs.map(async (r) => (await nodesOf(a, r.id)).call.status));
    expect(calls.sort()).toEqual(['pending', 'running']);
    for (const r of runs) expect((await nodesOf(a, r.id)).derive.status).toBe('completed');
    await settle(one);
    expect((await runsOf(a, wf.id)).map((r) => r.status)).toEqual(['completed', 'completed']);
  });

  it('runs waiting for the one ACTION slot take it one at a time, in the order they asked', async () => {
    const wf = await actionWorkflow('hang', { ms: 50 });
    const subjects: string[] = [];
    for (let i = 0; i < 5; i++) subjects.push((await publish(one)).subject as string);
    while (await job(one, 'outbox').run()) {}
    await settle(one);
    const runs = await runsOf(a, wf.id);
    expect(runs.map((r) => r.status)).toEqual(Array(5).fill('completed'));
    const calls = await Promise.all(
      runs.map(async (r) => ({ subject: r.trigger_event.subject, ...(await nodesOf(a, r.id)).call })),
    );
    // By start: the events' order, each call started after the one before it had ended.
    calls.sort((x, y) => Date.parse(x.started_at) - Date.parse(y.started_at));
    expect(calls.map((c) => c.subject)).toEqual(subjects);
    for (let i = 1; i < calls.length; i++) {
      expect(Date.parse(calls[i].started_at)).toBeGreaterThanOrEqual(Date.parse(calls[i - 1].completed_at));
      expect(calls[i].attempts).toBe(1);
    }
  });
});
