import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, nodesOf, onlyRun, publish, settle, workflow } from './helpers.js';

/**
 * A run whose graph version cannot be loaded when a worker resumes it fails, and takes its running
 * nodes with it in the same write (docs/workflows.md "States"): no node stays running under a failed
 * run. Two apps share one store, so the second one's plan cache is empty and must load the graph.
 */
describe(`a run whose graph cannot be loaded (${dialectName})`, () => {
  let db: TestDatabase;
  let one: TestApp;
  let two: TestApp;
  let a: Api;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-graph-');
    one = await startTestApp({ databaseUrl: db.url, clock });
    a = await api(one, await admin(one));
    two = await startTestApp({ databaseUrl: db.url, clock });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await db?.drop();
  });

  it('fails the run and its running nodes; never-reached nodes stay pending', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'first', type: 'COMPUTE', config: { logic: 1 } },
        { key: 'wait', type: 'DELAY', config: { delay_ms: 60_000 } },
        { key: 'after', type: 'COMPUTE', config: { logic: 2 } },
      ],
      edges: [
        { from_node_id: 'first', to_node_id: 'wait' },
        { from_node_id: 'wait', to_node_id: 'after' },
      ],
    });
    await publish(one, {});
    await settle(one);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('running');
    expect(nodes.wait.status).toBe('running');
    // The saved graph version becomes unreadable (here: a corrupt config) while the run waits.
    await one.ctx.store.db
      .updateTable('workflow_node')
      .set({ config: '{not json' })
      .where('event_subscription_id', '=', wf.id)
      .execute();
    clock.advance(60_000);
    // The other app has no cached plan: resuming the run must load the graph version, and cannot.
    await settle(two);
    const failed = (await a.call('GET', `/workflow_run/${run.id}`)).body;
    expect(failed).toMatchObject({ status: 'failed', completed_at: clock.now().toISOString() });
    expect(failed.error).toMatch(/^graph version 1 could not be loaded: /);
    const after = await nodesOf(a, run.id);
    expect(after.first.status).toBe('completed');
    expect(after.wait).toMatchObject({
      status: 'failed',
      error: `run failed: ${failed.error}`,
      completed_at: clock.now().toISOString(),
      resume_at: null,
      input: { delay_ms: 60_000 },
    });
    expect(after.after).toMatchObject({ status: 'pending', attempts: 0, started_at: null });
    // Nothing is left for a worker: the run is released, not claimed again.
    const row = await one.ctx.store.db
      .selectFrom('workflow_run')
      .select(['wake_at', 'locked_by'])
      .where('id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ wake_at: null, locked_by: null });
  });
});
