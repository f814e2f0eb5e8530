import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { waitForOutput } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, nodesOf, pluginInstance, publish, runsOf, workflow } from './helpers.js';
import { wftestPluginDir } from './plugin.js';

/**
 * FOREACH across `kill -9` (docs/workflows.md "FOREACH"): a real `svc worker` process is killed with
 * items done and items in flight; the next worker process runs the items not done, never a done one
 * again, and the node answers every result in item order.
 */
describe(`FOREACH across a killed worker process (${dialectName})`, () => {
  let shared: SharedStore;
  let t: TestApp;
  let a: Api;
  let worker: ChildProcess | undefined;
  const pluginDir = wftestPluginDir();

  const startWorker = () =>
    shared.worker({
      SVC_PLUGIN_DIR: pluginDir,
      SVC_WORKFLOW_LEASE_MS: '1500',
      SVC_WORKFLOW_POLL_INTERVAL_MS: '100',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '100',
      SVC_LOG_LEVEL: 'info',
    });

  async function eventually<T>(what: string, check: () => Promise<T | false | undefined>): Promise<T> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  beforeAll(async () => {
    shared = await startSharedStore('svc-wf-foreach-crash-', { SVC_PLUGIN_DIR: pluginDir });
    t = shared.t;
    a = await api(t);
  });
  afterAll(() => shared.close());

  it('runs the items not done after SIGKILL and never a done one again', async () => {
    const wftest = await pluginInstance(a, 'wftest');
    const log = join(shared.dir, 'items.log');
    const count = 12;
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'each',
          type: 'FOREACH',
          config: {
            items: { var: 'event.data.items' },
            concurrency: 3,
            // `hang` is idempotent: an item in flight when the worker died is called again.
            action: {
              plugin_instance_id: wftest,
              plugin_action: 'hang',
              input_mapping: { ms: 250, log, item: { var: 'item' } },
            },
          },
        },
      ],
    });
    const items = Array.from({ length: count }, (_, i) => `line-${i}`);
    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    await publish(t, { items });
    const run = await eventually('four items done', async () => {
      const r = (await runsOf(a, wf.id))[0];
      if (!r) return false;
      const progress = (await nodesOf(a, r.id)).each.progress;
      return progress && progress.completed >= 4 && r;
    });
    worker.kill('SIGKILL');
    await new Promise((r) => worker?.once('exit', r));
    const doneBefore = (
      await t.ctx.store.db
        .selectFrom('workflow_run_item')
        .select('item_index')
        .where('workflow_run_id', '=', run.id)
        .where('status', '=', 'completed')
        .execute()
    ).map((r) => r.item_index);
    expect(doneBefore.length).toBeGreaterThanOrEqual(4);
    expect(doneBefore.length).toBeLessThan(count);

    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    const ended = await eventually('the run to end', async () => {
      const r = (await runsOf(a, wf.id))[0];
      return r.status !== 'running' && r;
    });
    expect(ended.status).toBe('completed');
    const results = (await nodesOf(a, run.id)).each.output.results;
    expect(results.map((r: Json) => [r.index, r.status])).toEqual(items.map((_, i) => [i, 'completed']));
    // One line per call, with the item's own idempotency key: `<run>:each:<index>`.
    const calls = existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { key: string; pid: number })
      : [];
    const byIndex = new Map<number, number>();
    for (const c of calls) {
      const index = Number(c.key.split(':').at(-1));
      byIndex.set(index, (byIndex.get(index) ?? 0) + 1);
    }
    for (let i = 0; i < count; i++) expect(byIndex.get(i) ?? 0).toBeGreaterThanOrEqual(1);
    for (const i of doneBefore) expect(byIndex.get(i)).toBe(1);
    // Two processes did the work.
    expect(new Set(calls.map((c) => c.pid)).size).toBe(2);
  }, 90_000);
});
