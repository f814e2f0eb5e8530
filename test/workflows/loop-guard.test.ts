import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, pluginInstance, runsOf, settle, workflow } from './helpers.js';

/**
 * Loop safety (docs/workflows.md "Loop safety"): a workflow on svc.folder.created whose ACTION creates
 * a folder through svc's own API triggers itself. Each run's call carries its depth + 1; the events it
 * causes carry that depth; at SVC_WORKFLOW_MAX_DEPTH (here 4) no run starts, and the refusal shows.
 */
describe(`the loop guard stops a workflow that triggers itself (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp({
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_WORKFLOW_MAX_DEPTH: '4' },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    a = await api(t);
  });
  afterAll(() => t.close());

  it('runs at depths 0-3 create a folder each; the depth-4 event starts no run and says why', async () => {
    const key = await apiKey(t, ['folder:write']);
    expect(
      (
        await a.call('POST', '/vault_entry', {
          key: 'loop_key',
          kind: 'SECRET',
          value: `Bearer ${key.token}`,
        })
      ).status,
    ).toBe(200);
    const http = await pluginInstance(a, 'http');
    const wf = await workflow(
      a,
      {
        nodes: [
          {
            key: 'again',
            type: 'ACTION',
            config: {
              plugin_instance_id: http,
              plugin_action: 'request',
              input_mapping: {
                method: 'POST',
                url: `${base}/api/v1/folder`,
                headers: { preserve: { authorization: '$secret:loop_key' } },
                body: { eachKey: { name: { cat: ['child of ', { var: 'event.data.folder_id' }] } } },
              },
            },
          },
        ],
      },
      { event_type: 'svc.folder.created' },
    );
    const boss = await admin(t);
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/folder',
      headers: boss.headers,
      payload: { name: 'seed' },
    });
    expect(first.statusCode).toBe(200);
    await settle(t);

    const runs = await runsOf(a, wf.id);
    const byStatus = (s: string) => runs.filter((r: Json) => r.status === s);
    // Exactly: 4 runs (depths 0, 1, 2, 3), 4 folders they made, 1 refusal (the depth-4 event).
    expect(byStatus('completed')).toHaveLength(4);
    expect(byStatus('skipped')).toHaveLength(1);
    expect(runs).toHaveLength(5);
    const folders = await t.ctx.store.db.selectFrom('folder').select('id').execute();
    expect(folders).toHaveLength(5);
    const depths = runs.map((r: Json) => r.trigger_event.svcdepth ?? 0).sort();
    expect(depths).toEqual([0, 1, 2, 3, 4]);
    const [refused] = byStatus('skipped');
    const causer = runs.find((r: Json) => r.trigger_event.svcdepth === 3);
    expect(refused.trigger_event.causationid).toBe(causer.id);
    expect(refused.error).toBe(
      `not started: the event is 4 runs deep (SVC_WORKFLOW_MAX_DEPTH 4); it was caused by run ${causer.id}: a workflow that triggers itself?`,
    );
    expect(refused).toMatchObject({ started_at: null, completed_at: expect.any(String) });
    // Each event names the run whose call caused it.
    for (const r of runs.filter((x: Json) => (x.trigger_event.svcdepth ?? 0) > 0)) {
      const parent = runs.find((p: Json) => p.id === r.trigger_event.causationid);
      expect((parent.trigger_event.svcdepth ?? 0) + 1).toBe(r.trigger_event.svcdepth);
    }
    // Visible on /metrics and in the log.
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(
      `svc_workflow_runs_refused_total{subscription_id="${wf.id}",reason="depth"} 1`,
    );
    expect(
      t.logs.some((l) => l.msg === 'workflow router: run not started, the event is too many runs deep'),
    ).toBe(true);
  });
});
