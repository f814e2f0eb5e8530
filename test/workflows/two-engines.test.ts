import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, nodesOf, pluginInstance, publish, runsOf, workflow } from './helpers.js';
import { pluginCalls, wftestPluginDir } from './plugin.js';

/**
 * Two engines (two app contexts, as two processes would be) on one store. The engine whose router
 * creates a run creates it already claimed, under its lease, and drives it from memory without a
 * claim statement. Another engine must not take such a run while that lease holds; once it has run
 * out the other engine may, and then the creator must never replay the run from its first node (it
 * would call a non-idempotent ACTION twice): it resumes the run from its persisted state.
 */
const LEASE_MS = 1_000;
const LEASE_OUT_MS = LEASE_MS + 50;

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
    // A short lease the test waits out; long enough that a loaded machine still checks the other
    // engine well inside it.
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

  /**
   * A workflow whose first node `call` runs wftest's `record_once` with `marker` (then `more`), and
   * one event routed to it by the creating engine: its run exists, claimed by that engine.
   */
  async function routedRun(
    marker: string,
    more: { nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] } = { nodes: [], edges: [] },
  ) {
    const wftest = await pluginInstance(a, 'wftest');
    const call = {
      key: 'call',
      type: 'ACTION',
      config: { plugin_instance_id: wftest, plugin_action: 'record_once', input_mapping: { marker } },
    };
    const wf = await workflow(a, { nodes: [call, ...more.nodes], edges: more.edges });
    await publish(creator);
    while (await job(creator, 'outbox').run()) {}
    return wf;
  }

  it("a run is the creating engine's while its lease holds; once it runs out, another engine's progress is resumed, not replayed", async () => {
    const marker = `two-engines-${Date.now()}`;
    // The creating engine routes the event: the run exists, claimed by it, remembered as its own.
    const wf = await routedRun(marker, {
      nodes: [
        { key: 'wait', type: 'DELAY', config: { delay_ms: 50 } },
        { key: 'done', type: 'END', config: {} },
      ],
      edges: [
        { from_node_id: 'call', to_node_id: 'wait' },
        { from_node_id: 'wait', to_node_id: 'done' },
      ],
    });
    const [created] = await runsOf(a, wf.id);
    expect(created.status).toBe('running');

    // While the creator's lease holds, the other engine finds nothing due.
    await job(other, 'workflows').run();
    expect((await nodesOf(a, created.id)).call.status).toBe('pending');
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(0);

    // The lease runs out (the creator never stepped): the other engine takes the run, calls the
    // ACTION and parks the run at the DELAY.
    await new Promise((r) => setTimeout(r, LEASE_OUT_MS));
    await stepUntil(other, async () => (await nodesOf(a, created.id)).wait.status === 'running');
    expect((await nodesOf(a, created.id)).wait.status).toBe('running');
    await new Promise((r) => setTimeout(r, 80));

    // Now the creating engine steps: it must resume the persisted run, not replay it from `call`.
    await stepUntil(creator, async () => (await runsOf(a, wf.id))[0].status !== 'running');
    const [run] = await runsOf(a, wf.id);
    expect(run.status).toBe('completed');
    const nodes = await nodesOf(a, run.id);
    expect([nodes.call.status, nodes.wait.status, nodes.done.status]).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    expect(nodes.call.attempts).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });

  it('the creating engine creates the run claimed, under its lease, and drives it in its next step', async () => {
    const marker = `two-engines-fresh-${Date.now()}`;
    const wf = await routedRun(marker);
    const [created] = await runsOf(a, wf.id);
    const stored = await creator.ctx.store.db
      .selectFrom('workflow_run')
      .select(['locked_by', 'wake_at', 'created_at'])
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(stored.locked_by).toBe(creator.ctx.services.workflowEngine.workerId);
    const lease = Date.parse(stored.wake_at as string) - Date.parse(stored.created_at);
    expect(lease).toBeGreaterThanOrEqual(LEASE_MS);
    expect(lease).toBeLessThan(LEASE_MS + 100);

    await stepUntil(creator, async () => (await runsOf(a, wf.id))[0].status !== 'running');
    const [run] = await runsOf(a, wf.id);
    expect(run.status).toBe('completed');
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });

  it('a run that waited in memory past half its lease is claimed from the store once, never also driven from memory', async () => {
    const marker = `two-engines-stale-${Date.now()}`;
    const wf = await routedRun(marker);
    // The lease runs out before the creator steps: in that one step its memory still holds the run,
    // and the store offers it as due. Driving both copies would call the ACTION twice.
    await new Promise((r) => setTimeout(r, LEASE_OUT_MS));
    await stepUntil(creator, async () => (await runsOf(a, wf.id))[0].status !== 'running');
    const [run] = await runsOf(a, wf.id);
    expect(run.status).toBe('completed');
    expect((await nodesOf(a, run.id)).call.attempts).toBe(1);
    expect(pluginCalls().filter((c) => c.input.marker === marker)).toHaveLength(1);
  });
});
