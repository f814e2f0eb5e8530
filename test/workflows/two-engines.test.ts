import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, nodesOf, pluginInstance, publish, runsOf, workflow } from './helpers.js';
import { pluginCalls, wftestPluginDir } from './plugin.js';

/**
 * Two engines (two app contexts, as two processes would be) on one store. The engine that creates a
 * run claims it without reading it back; that shortcut must never take a run another engine already
 * drove, or it would replay the run from its first node and call a non-idempotent ACTION twice.
 */
describe(`two workflow engines on one store (${dialectName})`, () => {
  let db: TestDatabase;
  let creator: TestApp;
  let other: TestApp;
  let a: Api;
  const pluginDir = wftestPluginDir();

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-two-');
    const env = { SVC_PLUGIN_DIR: pluginDir, SVC_WORKFLOW_POLL_INTERVAL_MS: '20' };
    creator = await startTestApp({ databaseUrl: db.url, env });
    other = await startTestApp({ databaseUrl: db.url, env });
    a = await api(creator);
  });
  afterAll(async () => {
    await other.close();
    await creator.close();
    await db.drop();
  });

  it('a run driven by another engine is resumed from its persisted state, not replayed', async () => {
    const wftest = await pluginInstance(a, 'wftest');
    const marker = `two-engines-${Date.now()}`;
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'record_once', input_mapping: { marker } },
        },
        { key: 'wait', type: 'DELAY', config: { delay_ms: 50 } },
        { key: 'done', type: 'END', config: {} },
      ],
      edges: [
        { from_node_id: 'call', to_node_id: 'wait' },
        { from_node_id: 'wait', to_node_id: 'done' },
      ],
    });
    await publish(creator);
    // The creating engine routes the event: the run exists, and it remembers it as its own to drive.
    while (await job(creator, 'outbox').run()) {}
    const [created] = await runsOf(a, wf.id);
    expect(created.status).toBe('running');

    // The other engine finds the run due first, calls the ACTION and parks the run at the DELAY.
    await job(other, 'workflows').run();
    expect((await nodesOf(a, created.id)).wait.status).toBe('running');
    await new Promise((r) => setTimeout(r, 80));

    // Now the creating engine steps: it must resume the persisted run, not replay it from `call`.
    for (let i = 0; i < 20 && (await runsOf(a, wf.id))[0].status === 'running'; i++) {
      await job(creator, 'workflows').run();
    }
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
});
