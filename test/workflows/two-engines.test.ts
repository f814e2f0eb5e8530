import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, nodesOf, pluginInstance, publish, runsOf, workflow } from './helpers.js';
import { pluginCalls, wftestPluginDir } from './plugin.js';

/**
 * Two engines (two app contexts, as two processes would be) on one store. The engine whose router
 * routes an event drives the new run at once, from memory, and writes it first at its first persist
 * point under its own lease: no other engine can take it while that lease holds. An engine with no
 * room for it (here: stopped) creates it pending and due instead, and any engine's claim takes it.
 */
const LEASE_MS = 1_000;

/** Steps `app`'s workflows job until `done` holds (a step waits for its runs at most a poll interval). */
async function stepUntil(app: TestApp, done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await done()); i++) await job(app, 'workflows').run();
}

describe(`two workflow engines on one store (${dialectName})`, () => {
  let db: TestDatabase;
  let creator: TestApp;
  let other: TestApp;
  let a: Api;
  const pluginDir = wftestPluginDir();

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-two-');
    const env = {
      SVC_PLUGIN_DIR: pluginDir,
      SVC_WORKFLOW_POLL_INTERVAL_MS: '20',
      SVC_WORKFLOW_LEASE_MS: String(LEASE_MS),
    };
    creator = await startTestApp({ databaseUrl: db.url, env });
    other = await startTestApp({ databaseUrl: db.url, env });
    a = await api(creator);
  });
  afterAll(async () => {
    await other.close();
    await creator.close();
    await db.drop();
  });

  /** A workflow whose one node `call` runs wftest's `action` with `input`, and an event routed by the creator. */
  async function routedRun(action: string, input: Record<string, unknown>) {
    const wftest = await pluginInstance(a, 'wftest');
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: action, input_mapping: input },
        },
      ],
    });
    await publish(creator);
    while (await job(creator, 'outbox').run()) {}
    return wf;
  }

  it('the routing engine drives a new run at once, written first with its ACTION in flight under its lease', async () => {
    const marker = `two-engines-now-${Date.now()}`;
    const wf = await routedRun('hang', { ms: 600, marker });
    // The hand-over has ended: the run is written, its call in flight, the lease the creator's.
    const [created] = await runsOf(a, wf.id);
    expect(created.status).toBe('running');
    expect((await nodesOf(a, created.id)).call).toMatchObject({ status: 'running', attempts: 1 });
    const stored = await creator.ctx.store.db
      .selectFrom('workflow_run')
      .select(['locked_by', 'wake_at', 'updated_at'])
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(stored.locked_by).toBe(creator.ctx.services.workflowEngine.workerId);
    const lease = Date.parse(stored.wake_at as string) - Date.parse(stored.updated_at);
    expect(lease).toBeGreaterThanOrEqual(LEASE_MS - 100);
    expect(lease).toBeLessThanOrEqual(LEASE_MS);

    // While the creator's lease holds, the other engine finds nothing due.
    await job(other, 'workflows').run();
    await stepUntil(creator, async () => (await runsOf(a, wf.id))[0].status !== 'running');
    const [run] = await runsOf(a, wf.id);
    expect(run.status).toBe('completed');
    expect((await nodesOf(a, run.id)).call.attempts).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });

  it('an engine with no room creates the run pending and due, and another engine takes it at once', async () => {
    // A stopped engine takes no new runs (the same answer as one at capacity).
    await job(creator, 'workflows').stop?.();
    const marker = `two-engines-due-${Date.now()}`;
    const wf = await routedRun('record_once', { marker });
    const [created] = await runsOf(a, wf.id);
    expect(created.status).toBe('running');
    expect((await nodesOf(a, created.id)).call.status).toBe('pending');
    const stored = await creator.ctx.store.db
      .selectFrom('workflow_run')
      .select(['locked_by'])
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(stored.locked_by).toBeNull();

    await stepUntil(other, async () => (await runsOf(a, wf.id))[0].status !== 'running');
    const [run] = await runsOf(a, wf.id);
    expect(run.status).toBe('completed');
    expect((await nodesOf(a, run.id)).call.attempts).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });
});
